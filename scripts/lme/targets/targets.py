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

import ast
import difflib
import functools
import importlib.util
import json
import os
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
    ReportError,
    TargetContext,
)


PLUGINS_DIR = Path(__file__).resolve().parents[3] / "plugins"
"""The built-in targets' folder (``facts.BUILTIN_TARGETS`` names their files)."""


class TargetError(UserError):
    """A target failed on one item (bad output, subprocess crash, a bug). The run records it as an item error
    of kind ``target`` (``timeout``: the system did not answer in time); it never stops the run. The message is kept
    verbatim: its first line is the cause, the lines after it a stderr tail or a traceback."""

    kind = "target"

    def __init__(self, message: str, kind: str | None = None) -> None:
        Exception.__init__(self, message)
        self.message = message
        if kind is not None:
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
    """The file a target name or path refers to (a built-in's, a ``.py`` file, a package folder's
    ``__init__.py``, an executable file); UserError when it does not exist."""
    if name_or_path in BUILTIN_TARGETS:
        path = PLUGINS_DIR.parent / BUILTIN_TARGETS[name_or_path]
        if not path.is_file():
            raise UserError(
                f"target {name_or_path!r}: {BUILTIN_TARGETS[name_or_path]} is not in this checkout",
                fix="update the plugin, or pick another target",
            )
        return str(path)
    candidate = Path(name_or_path).expanduser()
    if candidate.is_dir():
        candidate = candidate / "__init__.py"
    if candidate.is_file() and (candidate.suffix == ".py" or os.access(candidate, os.X_OK)):
        return str(candidate.resolve())
    if name_or_path.endswith(".py") or candidate.name == "__init__.py":
        raise UserError(f"target file {name_or_path!r} not found{did_you_mean(candidate.resolve())}",
                        fix="give the path to your system's .py file (relative to the project)")
    raise UserError(f"unknown target {name_or_path!r}", fix=NAMING_HINT)


NAMING_HINT = (f"name a built-in target ({', '.join(BUILTIN_TARGETS)}) or your own system by its path: a .py file "
               "defining generate(item, ctx) (--target memsys.py) or an executable that reads an item on stdin "
               "(--target ./memsys); plugins/README.md")
"""How to name a target, for the refusals of a name that is neither."""

PYTHON_ADAPTER = "python"
COMMAND_ADAPTER = "command"
TOOLKIT_API = ("records", "targets")
"""The modules a toolkit target takes its records from (``scripts/records.py``, ``scripts/targets.py``)."""


def user_adapter(name_or_path: str) -> tuple[str, dict[str, Any]] | None:
    """How a path that names the user's own system runs: ``("python", {"path": file})`` for a ``.py`` file that
    does not take the toolkit's records, ``("command", {"command": [file]})`` for any other executable file. None
    for a built-in name, a package folder (the loop's copy of memory-ref) or a ``.py`` file that imports the
    toolkit's records (``imports_the_toolkit``): those are loaded in the run as built-in targets are."""
    if name_or_path in BUILTIN_TARGETS:
        return None
    file = Path(target_path(name_or_path))
    if file.name == "__init__.py":
        return None
    if file.suffix == ".py":
        return None if imports_the_toolkit(file) else (PYTHON_ADAPTER, {"path": str(file)})
    return COMMAND_ADAPTER, {"command": [str(file)]}


def users_system(name_or_path: str) -> bool:
    """The target runs the user's own system through an adapter: ``python``, ``command``, or a path naming it."""
    if name_or_path in (PYTHON_ADAPTER, COMMAND_ADAPTER):
        return True
    try:
        return user_adapter(name_or_path) is not None
    except UserError:
        return False


def imports_the_toolkit(file: Path) -> bool:
    """The file is written against the toolkit's target API (``generate(PublicItem, TargetContext) ->
    Hypothesis``): it imports ``Hypothesis`` from ``records`` or ``targets``, or imports a module of ``lme``. Read
    with ``ast``, without running the file; one that does not parse is not (the python adapter reports it)."""
    stat = file.stat()
    return _imports_the_toolkit(str(file), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=64)
def _imports_the_toolkit(path: str, mtime_ns: int, size: int) -> bool:
    try:
        tree = ast.parse(Path(path).read_bytes())
    except (SyntaxError, ValueError, OSError):
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            root = node.module.split(".")[0]
            if root == "lme" or (root in TOOLKIT_API and any(a.name in ("Hypothesis", "*") for a in node.names)):
                return True
        elif isinstance(node, ast.Import) and any(a.name.split(".")[0] == "lme" for a in node.names):
            return True
    return False


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
    "tokensOut"?, "retrieved_session_ids"?, "debug"?, "stages"?, "truncation"?, "retrieval"?}`` (the last three:
    ``records.PipelineStage``, ``ItemTruncation``, ``RetrievalDetail``). Anything else is a TargetError naming
    ``source``, in one line."""
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
    try:
        return Hypothesis(
            hypothesis=text,
            tokensIn=tokens_in,
            tokensOut=tokens_out,
            latencyMs=latency,
            retrieved_session_ids=None if retrieved is None else tuple(retrieved),
            debug=dict(debug),
            stages=obj.get("stages"),
            truncation=obj.get("truncation"),
            retrieval=obj.get("retrieval"),
        )
    except ReportError as err:
        raise TargetError(f"{source}: {err} (plugins/README.md, \"What it returns\")") from None
