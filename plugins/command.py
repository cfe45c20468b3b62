"""Target ``command``: benchmark your own memory system as a subprocess (any language). See plugins/README.md.

Options:
- ``command``: the program, as an argv list (no shell) or a string split with ``shlex``. Required.
- ``mode``: ``per-item`` (default; one process per item: the item JSON on stdin, one JSON object on stdout, log
  lines before or after it tolerated) or ``jsonl`` (one long-lived process, ``processes.Worker``: one JSON line in,
  one JSON line out per item; restarted after a crash, a timeout or a protocol error; items are sent one at a time).
- ``timeout_s``: seconds per item (default 300). On timeout the whole process group is killed and the item is an
  error row of kind ``timeout``.
- ``cwd``: working directory for the process (a run resolves it against the project, and runs the command in the
  project when it is not given).

The item, the environment (``processes.environment``) and the reply are plugins/README.md's contract. A timeout,
a non-zero exit, no JSON object or a missing ``hypothesis`` is a TargetError carrying the process's stderr tail;
never a hang.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import shutil
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from lme.targets import (
    ChatRequest,
    Hypothesis,
    PublicItem,
    TargetContext,
    did_you_mean,
    hypothesis_from_response,
    processes,
)

NAME = "command"
MODES = ("per-item", "jsonl")


def settings(options: Mapping[str, Any]) -> dict[str, Any]:
    raw = options.get("command")
    if isinstance(raw, str):
        argv = shlex.split(raw)
    elif isinstance(raw, Sequence) and all(isinstance(a, str) for a in raw):
        argv = list(raw)
    else:
        argv = []
    if not argv:
        raise ValueError("the command target needs option command (an argv list or a string), "
                         "e.g. --target-option command='python my_memory.py' (quoted: one shell word)")
    mode = str(options.get("mode", "per-item"))
    if mode not in MODES:
        raise ValueError(f"command option mode must be one of {MODES}, got {mode!r}")
    return {"command": argv, "mode": mode, "timeout_s": processes.timeout_option(options),
            "cwd": options.get("cwd") or None}


def describe(options: Mapping[str, Any]) -> dict[str, Any]:
    """The settings, checked as a run's start checks them: the folder exists, the program can be started."""
    cfg = settings(options)
    cwd, program = cfg["cwd"], cfg["command"][0]
    if cwd is not None and not Path(cwd).is_dir():
        raise ValueError(f"command option cwd: {cwd} is not a folder")
    if os.sep in program:
        found = (Path(cwd or ".") / program).expanduser()
        if not (found.is_file() and os.access(found, os.X_OK)):
            raise ValueError(f"command {program!r} is not an executable file{' in ' + cwd if cwd else ''}"
                             f"{did_you_mean(found.resolve())}")
    elif shutil.which(program) is None:
        raise ValueError(f"command {program!r} is not on PATH (a typo? the whole command line is one quoted word: "
                         f"--target-option command='python my_memory.py')")
    return {"name": NAME, **cfg}


def prepare_requests(item: PublicItem, ctx: TargetContext) -> list[ChatRequest]:
    return []  # the user's process makes its own calls: unknown to a dry run


def _jsonl_pool(argv: list[str], cwd: str | None, ctx: TargetContext) -> processes.WorkerPool:
    """The one long-lived process of a jsonl command (a pool of one: items go to it one at a time)."""
    source = f"command {shlex.join(argv)!r} (jsonl)"

    def worker(slot: int) -> processes.Worker:
        return processes.Worker(argv, cwd, source, slot=slot)

    key = (NAME, tuple(argv), cwd, ctx.provider, ctx.model, ctx.cache_dir)
    return processes.pool(key, lambda: processes.WorkerPool(worker, limit=1))


def generate(item: PublicItem, ctx: TargetContext) -> Hypothesis:
    cfg = settings(ctx.options)
    source = f"command {shlex.join(cfg['command'])!r}"
    t0 = time.monotonic()
    if cfg["mode"] == "per-item":
        payload = json.dumps(item.to_dict(), ensure_ascii=False).encode("utf-8")
        try:
            reply = processes.run_once(cfg["command"], payload, cfg["timeout_s"], cfg["cwd"],
                                       processes.environment(ctx))
        finally:  # the process is gone: a call it left in flight is waited for, into this item's row
            processes.settle(ctx.endpoint)  # type: ignore[arg-type]
        adapter: dict[str, Any] = {"mode": "per-item"}
    else:
        with _jsonl_pool(cfg["command"], cfg["cwd"], ctx).checkout() as worker:
            reply = worker.request(item.to_dict(), cfg["timeout_s"], ctx)
            adapter = {"mode": "jsonl", "process_starts": worker.starts}
    hyp = hypothesis_from_response(reply, source)
    elapsed = (time.monotonic() - t0) * 1000.0
    return dataclasses.replace(hyp, latencyMs=hyp.latencyMs or round(elapsed, 3),
                               debug={**hyp.debug, "command_adapter": adapter})
