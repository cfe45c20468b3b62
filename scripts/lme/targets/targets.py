"""The target API: what a memory system under test (a module in ``plugins/``, or yours) imports from the toolkit.

A target is a Python file with ``generate(item: PublicItem, ctx: TargetContext) -> Hypothesis`` and optionally
``NAME``, ``describe(options) -> dict`` and ``prepare_requests(item, ctx) -> list[ChatRequest]`` (dry runs; or
``prepare_requests_by_role(item, ctx) -> {role: [ChatRequest]}``). The generation driver loads it by path with
``load_module`` and hands it the item; the target never imports the driver.

    from targets import ChatRequest, Hypothesis, PublicItem, TargetContext, TargetError

(``scripts/targets.py``, the path a user's own target imports; the plugins in this repository use the stage's face,
``from lme.targets import ...``, which names the same objects.)

Model calls go through ``ctx.llm.complete(request)`` so the run's cache, rate limiter and retries apply. A target
that fails on an item raises ``TargetError`` (the item becomes an error row of kind ``target``; the run goes on).
"""

from __future__ import annotations

import difflib
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Mapping

from lme.core.errors import UserError  # noqa: F401  (re-exported: a target refuses bad options with it)
from lme.core.facts import BUILTIN_TARGETS
from lme.core.records import (  # noqa: F401  (the records a target receives and returns)
    LLM,
    ChatRequest,
    Completion,
    Hypothesis,
    PublicItem,
    PublicSession,
    PublicTurn,
    TargetContext,
)


PLUGINS_DIR = Path(__file__).resolve().parents[3] / "plugins"
"""The built-in targets' folder (``facts.BUILTIN_TARGETS`` names their files)."""


class TargetError(UserError):
    """A target failed on one item (bad output, subprocess crash, a bug). The run records it as an item error
    of kind ``target`` (``timeout``: the system did not answer in time); it never stops the run. The message is kept
    verbatim: its first line is the cause, the lines after it a stderr tail or a traceback."""

    def __init__(self, message: str, kind: str = "target") -> None:
        Exception.__init__(self, message)
        self.message = message
        self.kind = kind


def load_module(path: str | Path, name: str, *, error: type[Exception] = UserError) -> ModuleType:
    """Import the Python file (or package ``__init__.py``) at ``path`` as module ``name``: the one way the toolkit
    loads code by path (targets, a user's python file, a plugin's own package). The module is registered in
    ``sys.modules`` (a package needs it for its relative imports); a failure raises ``error`` naming the file and
    leaves nothing registered."""
    file = Path(path)
    is_package = file.name == "__init__.py"
    spec = importlib.util.spec_from_file_location(
        name, file, submodule_search_locations=[str(file.parent)] if is_package else None
    )
    if spec is None or spec.loader is None:
        raise error(f"cannot load target {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def target_path(name_or_path: str) -> str:
    """The file a target name or path refers to; UserError when it does not exist."""
    if name_or_path in BUILTIN_TARGETS:
        path = PLUGINS_DIR.parent / BUILTIN_TARGETS[name_or_path]
        if not path.is_file():
            raise UserError(
                f"target {name_or_path!r}: {BUILTIN_TARGETS[name_or_path]} is not in this checkout",
                fix="update the plugin, or pick another target",
            )
        return str(path)
    candidate = Path(name_or_path).expanduser()
    if name_or_path.endswith(".py") or candidate.is_dir():
        if candidate.is_dir():
            candidate = candidate / "__init__.py"
        if not candidate.is_file():
            raise UserError(f"target file {name_or_path!r} not found", fix="give a path to an existing .py file")
        return str(candidate.resolve())
    raise UserError(
        f"unknown target {name_or_path!r}",
        fix=f"use one of {', '.join(BUILTIN_TARGETS)} or a path to a .py file",
    )


def did_you_mean(path: Path) -> str:
    """`` (did you mean /dir/memsys.py?)`` for a missing file one typo away from a file in its folder (of the same
    suffix), `` (no folder /dir)`` when the folder is missing too, else ``""``."""
    folder = path.parent
    if not folder.is_dir():
        return f" (no folder {folder})"
    names = [p.name for p in folder.iterdir() if p.suffix == path.suffix and p.is_file()]
    close = difflib.get_close_matches(path.name, names, n=1)
    return f" (did you mean {folder / close[0]}?)" if close else ""


def parse_option(text: str) -> tuple[str, Any]:
    """``k=v`` -> (k, v) with v parsed as JSON when it is JSON (numbers, booleans, lists), else the string."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise UserError(f"--target-option {text!r} is not key=value", fix="write e.g. --target-option top_k=5")
    try:
        return key.strip(), json.loads(value)
    except json.JSONDecodeError:
        return key.strip(), value


def hypothesis_from_response(obj: Any, source: str) -> Hypothesis:
    """Validate a user system's reply (command and python adapters): ``{"hypothesis": str, "tokensIn"?,
    "tokensOut"?, "retrieved_session_ids"?, "debug"?}``. Anything else is a TargetError naming ``source``."""
    if not isinstance(obj, Mapping):
        raise TargetError(f"{source} returned {type(obj).__name__}, expected a JSON object with 'hypothesis'")
    text = obj.get("hypothesis")
    if not isinstance(text, str):  # an empty string is an answer: upstream judges it
        raise TargetError(f"{source} returned no 'hypothesis' (missing or not a string): keys {sorted(obj)}")
    retrieved = obj.get("retrieved_session_ids")
    if retrieved is not None and (not isinstance(retrieved, list) or not all(isinstance(s, str) for s in retrieved)):
        raise TargetError(f"{source}: 'retrieved_session_ids' must be a list of session id strings")
    debug = obj.get("debug") or {}
    if not isinstance(debug, Mapping):
        raise TargetError(f"{source}: 'debug' must be a JSON object")
    try:
        tokens_in, tokens_out = int(obj.get("tokensIn") or 0), int(obj.get("tokensOut") or 0)
        latency = float(obj.get("latencyMs") or 0.0)
    except (TypeError, ValueError) as err:
        raise TargetError(f"{source}: tokensIn/tokensOut/latencyMs must be numbers ({err})") from err
    return Hypothesis(
        hypothesis=text,
        tokensIn=tokens_in,
        tokensOut=tokens_out,
        latencyMs=latency,
        retrieved_session_ids=None if retrieved is None else tuple(retrieved),
        debug=dict(debug),
    )
