"""The official LongMemEval judge: upstream's prompt, upstream's call settings, upstream's label rule.

Only ``get_anscheck_prompt`` is taken from the user's checkout (``src/evaluation/evaluate_qa.py``, parsed with
``ast`` and compiled alone: the module's imports and ``__main__`` block never run). When a verdict is official,
and what it records, is SPEC.md "Judge continuity" ("The official rule").
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from lme.core import command_names
from lme.models import providers
from lme.models.provider_errors import answered_gone
from lme.core.endpoint_urls import is_official_host
from lme.core.errors import UserError
from lme.core.facts import (
    JUDGE_PROMPT_FUNCTION,
    JUDGE_TEMPLATE_RELPATH,
    OFFICIAL_JUDGE_MODEL,
    QUESTION_TYPES,
    UPSTREAM_FUNCTION_SHA256,
    is_abstention,
    is_official_judge,
    is_offline,
    resolve_judge_model,
    returned_model_matches,
)
from lme.judge.request_shapes import JudgeShape, is_upstream_shape, shape_for
from lme.judge import verdict_archive
from lme.judge.stability import stability
from lme.judge.offline_judge import offline_verdict
from lme.core.records import LLM, ChatRequest, Verdict

SETUP_HINT = (f"pass --longmemeval-root <your LongMemEval checkout> (a run resumes with it), set longmemeval_root "
              f"in the config for new runs, or run {command_names.SETUP} (it clones xiaowu0162/LongMemEval)")


class JudgeInputError(UserError):
    """The item cannot be judged (e.g. an unknown question_type): the run records it as a ``judge_input`` error."""

    kind = "judge_input"


@dataclass(frozen=True)
class PromptBuilder:
    build: Callable[..., str]
    """``get_anscheck_prompt(task, question, answer, response, abstention=False)`` from the checkout."""
    path: Path
    template_sha256: str
    """sha256 of the whole ``evaluate_qa.py`` file."""
    function_sha256: str
    """sha256 of the function's source (CRLF normalised): what decides whether the prompt is upstream's."""

    @property
    def is_upstream(self) -> bool:
        return self.function_sha256 in UPSTREAM_FUNCTION_SHA256


@functools.lru_cache(maxsize=16)
def _builder_at(path: str, mtime_ns: int, size: int) -> PromptBuilder:
    """The prompt function of one version of a file: a run judges hundreds of items from one file."""
    return _compile_builder(Path(path))


def _compile_builder(path: Path) -> PromptBuilder:
    data = path.read_bytes()
    try:
        source = data.decode("utf-8")
        tree = ast.parse(source, filename=str(path))
    except (UnicodeDecodeError, SyntaxError) as err:
        raise UserError(f"cannot parse {path}: {err}", fix=SETUP_HINT) from None
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == JUDGE_PROMPT_FUNCTION]
    if not functions:
        raise UserError(f"{path} has no function {JUDGE_PROMPT_FUNCTION}: is this a LongMemEval checkout?",
                        fix=SETUP_HINT)
    function = functions[-1]  # Python semantics: the last definition wins
    segment = ast.get_source_segment(source, function) or ""
    namespace: dict[str, Any] = {"__builtins__": __builtins__, "__name__": "longmemeval_judge_prompt"}
    code = compile(ast.Module(body=[function], type_ignores=[]), str(path), "exec")
    exec(code, namespace)  # noqa: S102 - only the one function definition is executed
    return PromptBuilder(
        build=namespace[JUDGE_PROMPT_FUNCTION],
        path=path,
        template_sha256=hashlib.sha256(data).hexdigest(),
        function_sha256=hashlib.sha256(segment.replace("\r\n", "\n").encode("utf-8")).hexdigest(),
    )


def load_prompt_builder(longmemeval_root: str | Path | None) -> PromptBuilder:
    """``get_anscheck_prompt`` from ``<root>/src/evaluation/evaluate_qa.py``; UserError saying how to get it."""
    if longmemeval_root is None or str(longmemeval_root) == "":
        raise UserError("no LongMemEval checkout configured for the official judge prompt", fix=SETUP_HINT)
    path = Path(longmemeval_root).expanduser() / JUDGE_TEMPLATE_RELPATH
    if not path.is_file():
        raise UserError(f"LongMemEval checkout not found: {path} does not exist", fix=SETUP_HINT)
    path = path.resolve()
    stat = path.stat()
    return _builder_at(str(path), stat.st_mtime_ns, stat.st_size)


def checkout_commit(longmemeval_root: str | Path | None) -> str | None:
    """The commit the upstream checkout is at (its prompts' commit), read from ``<root>/.git`` without running git:
    a detached HEAD (setup pins one) or a branch ref, loose or packed. None when it cannot be read."""
    if not longmemeval_root:
        return None
    git = Path(longmemeval_root).expanduser() / ".git"
    try:
        head = (git / "HEAD").read_text(encoding="utf-8").strip()
        if not head.startswith("ref: "):
            return head if _COMMIT.match(head) else None
        ref = head[5:].strip()
        loose = git / ref
        if loose.is_file():
            value = loose.read_text(encoding="utf-8").strip()
            return value if _COMMIT.match(value) else None
        for line in (git / "packed-refs").read_text(encoding="utf-8").splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[1] == ref and _COMMIT.match(parts[0]):
                return parts[0]
    except (OSError, UnicodeDecodeError):
        return None
    return None


_COMMIT = re.compile(r"^[0-9a-f]{40}$")


def label_from_reply(reply: str) -> bool:
    """Upstream's label rule, the only one: correct iff ``yes`` occurs in the stripped, lower-cased reply."""
    return "yes" in reply.strip().lower()


def build_prompt(
    builder: PromptBuilder, question_type: str, question: str, answer: Any, hypothesis: str, *,
    abstention: bool, question_id: str = "?",
) -> str:
    try:
        return builder.build(question_type, question, answer, hypothesis, abstention=abstention)
    except NotImplementedError:
        raise JudgeInputError(
            f"question {question_id}: question_type {question_type!r} has no judge prompt upstream "
            f"(known: {', '.join(QUESTION_TYPES)})"
        ) from None
    except Exception as err:  # noqa: BLE001 - a bad item must become an error row, not a crash
        raise JudgeInputError(f"question {question_id}: the judge prompt could not be built "
                              f"({type(err).__name__}: {err})") from None


def judge_request(prompt: str, provider: str, model: str, shape: JudgeShape | None = None) -> ChatRequest:
    """The judge call for ``prompt`` with ``shape``'s settings (default: the family's, ``judge_shapes.shape_for``;
    for every non-reasoning judge that is upstream's)."""
    model = resolve_judge_model(model)
    return (shape or shape_for(provider, model)).request(prompt, provider, model)


CONTINUITY_HINT = (
    "the official judge gpt-4o-2024-08-06 is not served here (retired: HTTP 404 model_not_found or 410 Gone): "
    "archived official verdicts still score (judge_shim.py import-verdicts FILE adds an exported archive), route "
    "the same snapshot through Azure OpenAI (judgeProvider azure with providers.azure endpoint, deployment, "
    "api_version; key AZURE_OPENAI_API_KEY), or name a successor for the hypotheses the archive lacks (--successor "
    "provider:model, or successorJudge in the config; calibrate it first with scripts/judge_agreement.py --all "
    "--candidate provider:model: its verdicts are labelled, never official)"
)
"""What to do when the official judge answers not_found / gone: named in the one-line stop of a run and of
--hyp-file."""


class JudgeModelMismatch(providers.ProviderError):
    """The judge's response named another model than the one asked for (an alias moved on, an Azure deployment
    auto-upgraded): the verdict is not that judge's, so it is refused, not recorded."""

    def __init__(self, requested: str, returned: str, provider: str, host: str | None) -> None:
        self.requested, self.returned = requested, returned
        super().__init__(MODEL_MISMATCH, (
            f"the judge {provider}:{requested} at {host or 'an unrecorded host'} answered as {returned!r}: not the "
            f"pinned model (an alias moved on, or an Azure deployment auto-upgraded); pin the deployment to "
            f"{requested}, or name a successor judge (--successor provider:model), which is labelled, never official"))


MODEL_MISMATCH = "judge_model_mismatch"
"""The error kind of ``JudgeModelMismatch``."""


def official_judge_gone(err: Any, provider: str, model: str) -> bool:
    """True when ``err`` (a ProviderError, or a row's ``error`` dict) is the official judge answering 404
    ``model_not_found`` or 410 Gone (the snapshot retired from the API, a deployment retired:
    ``provider_errors.answered_gone``); a 404 without that code (a wrong base URL, a route a gateway lacks) is not."""
    gone = err.get("gone") is True if isinstance(err, dict) else (isinstance(err, providers.ProviderError)
                                                                   and answered_gone(err))
    return gone and is_official_judge(provider, resolve_judge_model(model))


def model_mismatch(err: Any) -> bool:
    """``err`` (a ProviderError, or a row's ``error`` dict) is a judge reply that named another model."""
    kind = err.get("kind") if isinstance(err, dict) else getattr(err, "kind", None)
    return kind == MODEL_MISMATCH


def checked_reply(completion: Any, request: ChatRequest) -> Any:
    """``completion``, unless its response named another model than ``request`` asked for."""
    returned = str(getattr(completion, "model", "") or "")
    if not returned_model_matches(request.model, returned):
        raise JudgeModelMismatch(request.model, returned, request.provider, getattr(completion, "endpoint_host", None))
    return completion


def _verdict_summary(verdict: Verdict) -> dict[str, Any]:
    return {"label": verdict.label, "raw": verdict.raw, "model": verdict.model, "cached": verdict.cached,
            "source": verdict.source}


@dataclass(frozen=True)
class Judged:
    """What one verdict is about: the question (gold answer included: the judge sees it) and the hypothesis."""

    question_id: str
    """Abstention is decided by ``'_abs' in question_id``, as upstream does."""
    question_type: str
    question: str
    answer: Any
    hypothesis: str


@dataclass(frozen=True)
class JudgeRoute:
    """Who judges and how: the judge model, upstream's checkout (the prompt), the LLM that calls it, and the
    options. ``archive`` (a ``verdict_archive.VerdictArchive``): an official verdict for this exact prompt and model
    is used instead of a call. ``repeat`` K > 1 judges K times (the K-1 repeats bypass cache and archive) and sets
    ``verdicts`` (all K, the first is the label) and ``stability``. ``reasoning_effort``: for a reasoning-model
    judge (``judge_shapes``). ``successor``: this judge stands in for the official one (the verdict says so)."""

    longmemeval_root: str | Path | None
    provider: str = "openai"
    model: str = "gpt-4o"
    llm: LLM | None = None
    archive: Any = None
    repeat: int = 1
    reasoning_effort: str | None = None
    successor: bool = False
    archive_as: str | None = None
    """Who archives the official verdicts this route makes (``run <runId>``, ``judge_shim <file>``): each goes into
    ``archive`` as it is made (``verdict_archive.made_line``); None: they are not archived."""

    def to(self, provider: str, model: str, **changes: Any) -> "JudgeRoute":
        """The same route to another judge model (a successor, say)."""
        return dataclasses.replace(self, provider=provider, model=model, **changes)


def judge_verdict(item: Judged, route: JudgeRoute) -> Verdict:
    """Judge one hypothesis. Raises JudgeInputError or providers.ProviderError (``JudgeModelMismatch`` when the
    response names another model)."""
    question_id, question_type, provider, model = item.question_id, item.question_type, route.provider, route.model
    if is_offline(provider):
        return offline_verdict(question_id, question_type, item.question, item.answer, item.hypothesis)
    builder = load_prompt_builder(route.longmemeval_root)
    prompt = prompt_for(builder, item)
    shape = shape_for(provider, resolve_judge_model(model), route.reasoning_effort)
    request = judge_request(prompt, provider, model, shape)
    prompt_sha256 = hashlib.sha256(prompt.encode("utf-8")).hexdigest()
    llm = route.llm if route.llm is not None else providers.Gateway()
    successor, archive, repeat = route.successor, route.archive, route.repeat
    made = _Made(builder, provider, model, request, prompt_sha256, shape, successor)
    archived = lookup_archived(archive, prompt_sha256, provider, request.model)
    if archived is not None:
        first = made.archived(archived)
    else:
        completion = checked_reply(llm.complete(request), request)
        first = made.verdict(completion.text, completion.model, completion=completion,
                             source="cache" if completion.cached else "call")
        if archive is not None and route.archive_as and not successor:
            line = verdict_archive.made_line(item, first, route.archive_as)
            if line is not None:
                archive.add_made(line)
    if repeat > 1:
        fresh = getattr(llm, "complete_fresh", None) or llm.complete  # the repeats bypass any call cache
        verdicts = [_verdict_summary(first)]
        for _ in range(repeat - 1):
            try:
                again = checked_reply(fresh(request), request)
            except Exception as err:  # noqa: BLE001 - a failed repeat never costs the item its official label
                verdicts.append({"label": None, "error": f"{getattr(err, 'kind', type(err).__name__)}: {err}"})
                continue
            verdicts.append(_verdict_summary(made.verdict(again.text, again.model, completion=again, source="call")))
        first = dataclasses.replace(first, verdicts=tuple(verdicts), stability=stability(verdicts))
    return first


def prompt_for(builder: PromptBuilder, item: Judged) -> str:
    """Upstream's judge prompt for ``item``, as every judge call sends it."""
    return build_prompt(builder, item.question_type, item.question, item.answer, item.hypothesis,
                        abstention=is_abstention(item.question_id), question_id=item.question_id)


def lookup_archived(archive: Any, prompt_sha256: str, provider: str, model: str) -> dict[str, Any] | None:
    """The archived official verdict of this prompt, when the judge asked for is the official one (a successor or
    another judge never takes an official verdict as its own)."""
    if archive is None or not is_official_judge(provider, resolve_judge_model(model)):
        return None
    return archive.lookup(prompt_sha256, resolve_judge_model(model))


@dataclass(frozen=True)
class _Made:
    """What every verdict of one judged hypothesis shares: the prompt, the request and who was asked."""

    builder: PromptBuilder
    provider: str
    model: str
    request: ChatRequest
    prompt_sha256: str
    shape: JudgeShape
    successor: bool

    def archived(self, line: Mapping[str, Any]) -> Verdict:
        """The verdict an archive line gives (``verdict_archive.VerdictArchive.lookup``): its label (a label-only
        line has no reply), the host and shape it recorded, its origin and any conflict. A line that records no
        host is official only as an import, its author's claim (``origin``)."""
        origin = verdict_archive.origin_of(line)
        claimed = origin["kind"] == "imported" and line.get("endpoint_host") is None
        return self.verdict(line.get("raw"), str(line["model"]), source="archive", host=line.get("endpoint_host"),
                            host_provider=str(line.get("provider")), shape=line.get("request_shape"),
                            label=bool(line["label"]), claimed_host=claimed, origin=origin,
                            conflict=line.get("conflict"))

    def verdict(self, reply: Any, returned_model: str, *, completion: Any = None, source: str,
                host: str | None = None, host_provider: str | None = None,
                shape: Mapping[str, Any] | None = None, label: bool | None = None, claimed_host: bool = False,
                origin: Mapping[str, Any] | None = None, conflict: Mapping[str, Any] | None = None) -> Verdict:
        """The verdict of ``reply``; an archived one (``archived``) carries the ``host`` and ``shape`` its line
        recorded (the ``host_provider`` route it was made through) and its ``label``, a call's come from the
        completion and this request."""
        if completion is not None:
            host = getattr(completion, "endpoint_host", None)
        recorded_shape = dict(shape) if shape is not None else (None if source == "archive" else self.shape.to_dict())
        official = (is_official_judge(self.provider, self.request.model) and returned_model == OFFICIAL_JUDGE_MODEL
                    and self.builder.is_upstream and is_upstream_shape(recorded_shape) and not self.successor
                    and (claimed_host or is_official_host(host_provider or self.provider, host)))
        called = source == "call"
        if label is None:
            reply = reply if isinstance(reply, str) else ""
            label = label_from_reply(reply)
        return Verdict(
            label=label,
            raw=reply,
            provider=self.provider,
            model=returned_model,
            requested_model=self.model,
            official=official,
            prompt_sha256=self.prompt_sha256,
            template_sha256=self.builder.template_sha256,
            tokensIn=0 if completion is None else completion.tokensIn,
            tokensOut=0 if completion is None else completion.tokensOut,
            latencyMs=0.0 if completion is None else completion.latencyMs,
            attempts=0 if completion is None else completion.attempts,
            cached=not called,
            source=source,
            pricing=str(getattr(completion, "pricing", None) or "sync") if called else "sync",
            batch_id=getattr(completion, "batch_id", None) if called else None,
            endpoint_host=host,
            request_shape=recorded_shape,
            successor=self.successor,
            origin=None if origin is None else dict(origin),
            conflict=None if conflict is None else dict(conflict),
        )
