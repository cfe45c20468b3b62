"""A run's background worker: started detached from the caller, recorded in ``worker.json``, checked for life.

What is checked in the calling process, how the child is detached (so a tool's time limit or the end of the Claude
Code session does not stop it) and what ``worker.json`` holds: ``references/SPEC.md``, "Background runs and their
status".
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any, Sequence

from lme.core import fileio
from lme.core.errors import UserError
from lme.store import run_store
from lme.store.run_layout import LOG_FILE, WORKER_FILE
from lme.core.clock import utc_now
from lme.core import process_life
from lme.core.facts import SCHEMA_VERSIONS


def read_worker(root: Path) -> dict[str, Any] | None:
    path = Path(root) / WORKER_FILE
    if not path.is_file():
        return None
    try:
        return run_store.read_json(path)
    except Exception:  # noqa: BLE001 - a damaged record says nothing about a live worker
        return None


def live_worker(root: Path) -> dict[str, Any] | None:
    info = read_worker(root)
    return info if process_life.alive(info) else None


def start(root: Path, argv: Sequence[str], *, run_id: str, cwd: Path, log_header: str) -> dict[str, Any]:
    """``root``: the run's or its shard's directory. The live-worker check and the start are serialised by a lock
    so two callers cannot both start one."""
    root = Path(root)
    log = root / LOG_FILE
    with run_store.RunLock(root, name=run_store.WORKER_LOCK_FILE, wait=True):
        running = live_worker(root)
        if running is not None:
            raise UserError(f"run {run_id} is already running (pid {running['pid']})",
                            fix=f"wait for it with run_status.py --run-id {run_id} --wait 100")
        started_at = utc_now()  # before the start: a run's end is never earlier than this
        with os.fdopen(fileio.open_fd(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT), "ab") as fh:
            fh.write(f"{log_header}\n".encode("utf-8"))
            fh.flush()
            pid = process_life.start_detached(argv, cwd=cwd, stdout=fh, stderr=subprocess.STDOUT)
        info = {"schemaVersion": SCHEMA_VERSIONS["run-worker"], **process_life.identity(pid),
                "started_at": started_at, "log": str(log)}
        run_store.write_atomic_json(root / WORKER_FILE, info)
    return info
