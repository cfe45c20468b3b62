"""Target ``python``: benchmark your own memory system written as a Python file. See plugins/README.md.

Options:
- ``path``: a ``.py`` file defining ``generate(item: dict, ctx: dict) -> dict``, with the same contract as the
  ``command`` adapter, in plain dicts, so the file needs nothing from this toolkit. Required.
- ``timeout_s``: seconds per item (default 300). An item not answered in time is an error row of kind
  ``timeout``; its worker is killed and the next item starts a new one.
- ``workers``: the most worker processes (default: one per item in flight, up to the run's ``--concurrency``).
  Each worker imports the file, so each holds what it loads: fewer workers, less memory; items wait for one.

The contract (``item``, ``ctx``, the reply) is plugins/README.md's. The file runs in worker processes
(``lme/targets/python_worker.py``, ``processes.Worker``), never in the run's own process: a hung item is a
timeout, not a stalled run; a crash (even a segfault) is one item's error and a fresh worker takes the next item.
"""

from __future__ import annotations

import ast
import dataclasses
import sys
from pathlib import Path
from typing import Any, Mapping

from lme.targets import (
    ChatRequest,
    Hypothesis,
    PublicItem,
    TargetContext,
    TargetError,
    did_you_mean,
    hypothesis_from_response,
    imports_the_toolkit,
    processes,
)

NAME = "python"
ADAPTER_OPTIONS = ("path", "timeout_s", "workers")
"""The adapter's own options; the others reach the user's ``ctx["options"]``."""
WORKER_SCRIPT = Path(processes.__file__).with_name("python_worker.py")


def settings(options: Mapping[str, Any]) -> dict[str, Any]:
    """The adapter's settings from the target options; ValueError naming the fix for a missing or bad one."""
    raw = options.get("path")
    if not raw:
        raise ValueError("the python target needs option path, the .py file of your memory system: "
                         "--target-option path=memsys.py (or simply --target memsys.py)")
    path = Path(str(raw)).expanduser().resolve()
    if not path.is_file():
        raise ValueError(f"option path: {path} is not a file{did_you_mean(path)}")
    workers = options.get("workers")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ValueError(f"option workers must be a whole number >= 1, got {workers!r}")
    return {"path": path, "timeout_s": processes.timeout_option(options), "workers": workers}


def describe(options: Mapping[str, Any]) -> dict[str, Any]:
    """The settings, checked as a run's start checks them: the file exists and defines ``generate`` (read, not
    run: its import happens in the workers)."""
    cfg = settings(options)
    if imports_the_toolkit(cfg["path"]):
        raise ValueError(f"{cfg['path'].name} imports the toolkit's Hypothesis: it is written for the toolkit's "
                         f"records, not dicts; name it as --target {cfg['path']} (plugins/README.md)")
    if not defines_generate(cfg["path"]):
        raise ValueError(f"{cfg['path'].name} defines no generate(item, ctx) at its top level (plugins/README.md)")
    return {"name": NAME, "path": str(cfg["path"]), "timeout_s": cfg["timeout_s"], "workers": cfg["workers"]}


def defines_generate(path: Path) -> bool:
    """The file binds ``generate`` at its top level (a def, an assignment or an import); one that does not parse
    passes (its worker reports the SyntaxError with its line)."""
    try:
        tree = ast.parse(path.read_bytes())
    except (SyntaxError, ValueError):
        return True
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == "generate":
            return True
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if any((a.asname or a.name.split(".")[0]) == "generate" or a.name == "*" for a in node.names):
                return True
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if any(isinstance(t, ast.Name) and t.id == "generate" for t in targets):
            return True
    return not all(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom,
                                  ast.Assign, ast.AnnAssign, ast.Expr)) for n in tree.body)


def prepare_requests(item: PublicItem, ctx: TargetContext) -> list[ChatRequest]:
    return []  # the user's code makes its own calls: unknown to a dry run


def _ready(path: Path):
    """The check of a worker's first line: its import of the user's file went well, else that error."""

    def check(line: Any) -> None:
        if not (isinstance(line, Mapping) and line.get("ready") is True):
            failure = line.get("error") if isinstance(line, Mapping) else None
            raise TargetError(error_text(f"python target {path.name}: cannot import it", failure))

    return check


def _pool(path: Path, ctx: TargetContext, limit: int | None) -> processes.WorkerPool:
    """The workers for ``path`` under this model and cache folder (started again when the file changes), at most
    ``limit`` of them (None: as many as items in flight, the run's concurrency)."""
    source = f"python target {path.name}"

    def worker(slot: int) -> processes.Worker:
        return processes.Worker([sys.executable, str(WORKER_SCRIPT), str(path)], None, source, slot=slot,
                                ready=_ready(path), no_reply="generate gave no answer",
                                no_start="did not finish importing")

    key = (NAME, str(path), sys.executable, ctx.provider, ctx.model, ctx.cache_dir)
    return processes.pool(key, lambda: processes.WorkerPool(worker, limit=limit),
                          version=(path.stat().st_mtime_ns, limit))


def error_text(headline: str, failure: Any) -> str:
    """``headline: ValueError: boom`` on the first line, the traceback's end below it."""
    if not isinstance(failure, Mapping):
        return headline
    text = f"{headline}: {failure.get('message') or failure.get('type') or 'an error'}"
    trace = str(failure.get("traceback") or "")
    return f"{text}\n{trace}" if trace else text


def generate(item: PublicItem, ctx: TargetContext) -> Hypothesis:
    cfg = settings(ctx.options)
    path = cfg["path"]
    user_ctx = {
        "provider": ctx.provider,
        "model": ctx.model,
        "options": {k: v for k, v in ctx.options.items() if k not in ADAPTER_OPTIONS},
        "cache_dir": ctx.cache_dir,
    }
    with _pool(path, ctx, cfg["workers"]).checkout() as worker:  # this item's worker, serving nothing else until it answers
        answer = worker.request({"item": item.to_dict(), "ctx": user_ctx}, cfg["timeout_s"], ctx)
        adapter = {"worker": worker.slot, "process_starts": worker.starts}
    if not isinstance(answer, Mapping) or ("reply" not in answer and "error" not in answer):
        raise TargetError(f"python target {path.name}: its worker answered {str(answer)[:200]!r}")
    if "error" in answer:
        raise TargetError(error_text(f"python target {path.name}", answer["error"]))
    hyp = hypothesis_from_response(answer["reply"], f"python target {path.name}")
    return dataclasses.replace(hyp, debug={**hyp.debug, "python_adapter": adapter})
