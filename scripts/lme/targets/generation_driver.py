"""Turn one LongMemEval item into a hypothesis with a target (the memory system under test).

The command (its parser, ``main()`` and help text) is ``lme/cli/generation_driver.py``."""

from __future__ import annotations

import dataclasses
import sys
import threading
import time
import traceback
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any, Mapping, Sequence

from lme.data import dataset
from lme.models import providers
from lme.core.errors import UserError
from lme.core.facts import BUILTIN_TARGETS, HYPOTHESES_TARGET, ORACLE_TARGET
from lme.core.records import (LLM, ChatRequest, Completion, Hypothesis, ItemTruncation, PublicItem, Question,
                              RetrievalDetail, TargetContext, TargetEndpointScope)
from lme.targets.targets import PLUGINS_DIR, parse_option, target_path  # noqa: F401  (where targets are found; read here too)
from lme.targets.targets import TargetError, load_module, user_adapter

# --------------------------------------------------------------------------- loading targets


def target_name(name_or_path: str) -> str:
    """What result rows call the target: the built-in name, else the module's NAME, else the file stem (a user's
    system named by its path: its file is never imported here)."""
    if name_or_path in BUILTIN_TARGETS:
        return name_or_path
    if user_adapter(name_or_path) is not None:
        return Path(target_path(name_or_path)).stem
    module = load_target(name_or_path)
    stem = Path(target_path(name_or_path))
    return str(getattr(module, "NAME", stem.parent.name if stem.name == "__init__.py" else stem.stem))


_LOAD_LOCK = threading.RLock()


def load_target(name_or_path: str) -> ModuleType:
    """Import a target by file path (once per file, also under concurrent first calls); UserError if it has no
    ``generate``. A path naming the user's own system (``user_adapter``) gives the adapter that runs it."""
    adapter = user_adapter(name_or_path)
    path = target_path(adapter[0] if adapter else name_or_path)
    with _LOAD_LOCK:
        return _load_module(path)


def adapted_options(target: str, options: Mapping[str, Any] | None) -> dict[str, Any]:
    """The options ``target``'s module is given: as they are, plus, for a path naming the user's own system, the
    option that names it to its adapter (``path`` / ``command``)."""
    adapter = user_adapter(target)
    return {**dict(options or {}), **(adapter[1] if adapter else {})}


@lru_cache(maxsize=None)
def _load_module(path: str) -> ModuleType:
    file = Path(path)
    stem = file.parent.name if file.name == "__init__.py" else file.stem
    module_name = f"lme_target_{stem.replace('-', '_')}_{abs(hash(path)) % 10**8}"
    try:
        module = load_module(file, module_name)
    except UserError as err:
        raise UserError(str(err), fix="give a path to a Python file") from None
    except Exception as err:
        raise UserError(f"target {path} failed to import: {type(err).__name__}: {err}") from err
    if not callable(getattr(module, "generate", None)):
        sys.modules.pop(module_name, None)
        raise UserError(f"target {path} defines no generate(item, ctx)", fix="add generate() as plugins/README.md shows")
    return module


# --------------------------------------------------------------------------- items


def _as_question(item: Question | Mapping[str, Any]) -> Question:
    return item if isinstance(item, Question) else Question.from_dict(item)


def visible_question(q: Question, target: str) -> Question:
    """The Question whose sessions the target may see: all of them, or the evidence only for ``oracle``."""
    if target != ORACLE_TARGET:
        return q
    evidence = set(q.answer_session_ids)
    return dataclasses.replace(q, sessions=tuple(s for s in q.sessions if s.session_id in evidence))


def public_view(q: Question, target: str) -> PublicItem:
    """What ``target`` receives for ``q``: the public item of ``visible_question`` (no gold, aliased ids)."""
    return visible_question(q, target).public()


class _NoCallsLLM:
    """The LLM of a dry run's ``prepare_requests``: a target must make no call there."""

    def complete(self, request: ChatRequest) -> Completion:
        raise TargetError("no model call may be made while the target prepares its requests (a dry run)")

    def embed(self, provider: str, model: str, texts: Sequence[str]) -> list[list[float]]:
        raise TargetError("no embedding call may be made while the target prepares its requests (a dry run)")


def _real_ids(q: Question, aliases: Sequence[str]) -> tuple[list[str], int]:
    real, unknown, seen = [], 0, set()
    for alias in aliases:
        sid = q.real_session_id(alias)
        if sid is None:
            unknown += 1
        elif sid not in seen:
            seen.add(sid)
            real.append(sid)
    return real, unknown


def _mapped_truncation(q: Question, trunc: ItemTruncation | None) -> ItemTruncation | None:
    """The target's truncation with real dropped ids and ``dropped_evidence``: how many of them are evidence
    sessions (the item's ``answer_session_ids``, the sessions the oracle reads). Only the driver holds the gold to
    say so; without dropped ids it cannot (None, unless nothing was dropped)."""
    if trunc is None:
        return None
    real, unknown = _real_ids(q, trunc.dropped_session_ids)
    evidence = set(q.answer_session_ids)
    known = bool(trunc.dropped_session_ids) or not trunc.dropped_sessions
    return dataclasses.replace(trunc, dropped_session_ids=tuple(real), unknown_dropped=unknown,
                               dropped_evidence=sum(1 for sid in real if sid in evidence) if known else None)


def _mapped_retrieval(q: Question, detail: RetrievalDetail | None) -> RetrievalDetail | None:
    """The target's retrieval detail with ``covers_all``: its top_k reaches the item's number of sessions."""
    if detail is None:
        return None
    covers = None if detail.top_k is None else detail.top_k >= len(q.sessions)
    return dataclasses.replace(detail, covers_all=covers)


def run_target(
    item: Question | Mapping[str, Any],
    provider: str,
    model: str,
    *,
    target: str = "full-context",
    llm: LLM | None = None,
    options: Mapping[str, Any] | None = None,
    cache_dir: str | None = None,
    endpoint: TargetEndpointScope | None = None,
) -> Hypothesis:
    """Run ``target`` on one item: its Hypothesis with real session ids in ``retrieved_session_ids`` and in
    ``truncation.dropped_session_ids`` (with ``dropped_evidence``, see ``_mapped_truncation``), the retrieval
    detail's ``covers_all``, and the wall time as ``latencyMs`` when the target reported none (its ``debug`` as it
    came). ``endpoint``: the item's scope of the run's target endpoint (``TargetContext.endpoint``).

    A ProviderError passes through unchanged; any other failure of the target becomes a TargetError.
    """
    module = load_target(target)
    q = visible_question(_as_question(item), target)
    public = q.public()  # the same as public_view(); q is kept to map aliases back
    ctx = TargetContext(provider=provider, model=model, llm=llm if llm is not None else providers.Gateway(),
                        options=adapted_options(target, options), cache_dir=cache_dir, endpoint=endpoint)
    t0 = time.monotonic()
    try:
        hyp = module.answer(q.question_id, ctx) if target == HYPOTHESES_TARGET else module.generate(public, ctx)
    except (TargetError, providers.ProviderError):
        raise
    except Exception as err:
        raise TargetError(failure_text(f"target {target!r} failed", err)) from err
    wall_ms = (time.monotonic() - t0) * 1000.0
    if not isinstance(hyp, Hypothesis):
        raise TargetError(f"target {target!r} returned {type(hyp).__name__}, expected records.Hypothesis")
    if not isinstance(hyp.hypothesis, str):  # an empty string is an answer: upstream judges it
        raise TargetError(f"target {target!r} returned a hypothesis that is not a string")
    debug = dict(hyp.debug)
    retrieved = hyp.retrieved_session_ids
    if retrieved is not None:
        real, unknown = _real_ids(q, retrieved)
        retrieved = tuple(real)
        if unknown:
            debug["unknown_retrieved_session_ids"] = unknown
    return dataclasses.replace(hyp, latencyMs=hyp.latencyMs or round(wall_ms, 3), retrieved_session_ids=retrieved,
                               debug=debug, truncation=_mapped_truncation(q, hyp.truncation),
                               retrieval=_mapped_retrieval(q, hyp.retrieval))


TRACEBACK_CHARS = 1500
"""The end of a target's traceback an error row keeps (the frames nearest the failure)."""


def failure_text(headline: str, err: BaseException) -> str:
    """``headline: KeyError: 'oops'`` on the first line (bounded), the end of the traceback below it."""
    first = (str(err).splitlines() or [""])[0]
    cause = f"{type(err).__name__}: {first}" if first else type(err).__name__
    trace = "".join(traceback.format_exception(type(err), err, err.__traceback__)).rstrip()
    if len(trace) > TRACEBACK_CHARS:
        trace = "…" + trace[-TRACEBACK_CHARS:]
    return f"{headline}: {cause[:300]}\n{trace}"


def generate_hypothesis(
    item: Question | Mapping[str, Any],
    provider: str,
    model: str,
    *,
    target: str = "full-context",
    llm: Any = None,
    options: Mapping[str, Any] | None = None,
    cache_dir: str | None = None,
) -> dict[str, Any]:
    """``run_target`` as JSON (``Hypothesis.to_dict()`` plus ``"target"``), as the CLI prints it."""
    out = run_target(item, provider, model, target=target, llm=llm, options=options, cache_dir=cache_dir).to_dict()
    out["target"] = target_name(target)
    return out


def prepare_requests_by_role(
    item: Question | Mapping[str, Any],
    provider: str,
    model: str,
    *,
    target: str = "full-context",
    options: Mapping[str, Any] | None = None,
    cache_dir: str | None = None,
) -> dict[str, list[ChatRequest]] | None:
    """The target's requests for ``item`` by role (``prepare_requests_by_role``, else ``{"reader": [...]}`` from
    ``prepare_requests``); None when the target cannot say (it makes its own calls)."""
    module = load_target(target)
    by_role = getattr(module, "prepare_requests_by_role", None)
    prepare = getattr(module, "prepare_requests", None)
    if by_role is None and prepare is None:
        return None
    public = public_view(_as_question(item), target)
    ctx = TargetContext(provider=provider, model=model, llm=_NoCallsLLM(), options=adapted_options(target, options),
                        cache_dir=cache_dir)
    if by_role is not None:
        return {role: list(requests) for role, requests in by_role(public, ctx).items()}
    return {"reader": list(prepare(public, ctx))}


def describe_target(target: str, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The target's own description of its settings (``describe(options)``), or {}."""
    describe = getattr(load_target(target), "describe", None)
    return dict(describe(adapted_options(target, options))) if describe else {}


# --------------------------------------------------------------------------- CLI


def find_item(path: Path, question_id: str) -> Question:
    if not path.is_file():
        raise UserError(f"dataset {path} not found", fix="pass --dataset with a LongMemEval .json file")
    for raw in dataset.iter_items(path):
        q = Question.from_dict(raw)
        if q.question_id == question_id:
            return q
    raise UserError(f"question id {question_id!r} is not in {path}", fix="check the id (it is case-sensitive)")
