"""A run's background worker: started detached from the caller, recorded in ``worker.json``, checked for life.

``run_benchmark.py --background`` makes every check in the calling process, then starts the same run as a child
in its own session and process group (stdin ``/dev/null``, stdout and stderr appended to ``<run dir>/run.log``),
so the end of the calling shell, its process group, a tool's time limit or the Claude Code session does not stop
it. ``worker.json`` (written atomically) holds ``pid``, ``started_at``, ``hostname`` and ``log``, plus on Linux the
boot id and the process start time, so a pid reused after a restart is not mistaken for the worker.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any, Mapping, Sequence

from lme.core import fileio
from lme.core.errors import UserError
from lme.store import run_store
from lme.core.clock import utc_now

WORKER_FILE = run_store.WORKER_FILE
LOG_FILE = run_store.LOG_FILE


def _boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip() or None
    except OSError:
        return None


def _proc_stat(pid: int) -> list[str] | None:
    """Fields of ``/proc/<pid>/stat`` after the command name (state is [0], start time is [19]), or None."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return raw[raw.rfind(")") + 2:].split()


def _proc_start(pid: int) -> str | None:
    fields = _proc_stat(pid)
    return fields[19] if fields and len(fields) > 19 else None


def _windows_pid_alive(pid: int) -> bool:  # pragma: no cover - exercised on Windows only
    import ctypes

    kernel32 = ctypes.windll.kernel32  # type: ignore[attr-defined]
    handle = kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
    if not handle:
        return False
    try:
        code = ctypes.c_ulong()
        return bool(kernel32.GetExitCodeProcess(handle, ctypes.byref(code))) and code.value == 259  # STILL_ACTIVE
    finally:
        kernel32.CloseHandle(handle)


def pid_alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie, or our own exited child, is dead)."""
    if pid <= 0:
        return False
    if sys.platform == "win32":  # os.kill(pid, 0) would terminate the process there
        return _windows_pid_alive(pid)
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)  # our own child (a caller that stayed alive): reap it
        if done == pid:
            return False
    except OSError:  # not our child (the usual case: the caller that started it has exited)
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    except OSError:
        return False
    fields = _proc_stat(pid)
    return not (fields and fields[0] in ("Z", "X"))


def read_worker(root: Path) -> dict[str, Any] | None:
    path = Path(root) / WORKER_FILE
    if not path.is_file():
        return None
    try:
        return run_store.read_json(path)
    except Exception:  # noqa: BLE001 - a damaged record says nothing about a live worker
        return None


def worker_alive(info: Mapping[str, Any] | None) -> bool:
    """Is the worker that ``info`` (a worker.json) describes still running? A record from another machine, or
    from before this machine booted, is not; a pid that now belongs to another process is not."""
    if not info:
        return False
    if info.get("hostname") not in (None, socket.gethostname()):
        return False
    boot = _boot_id()
    if info.get("boot_id") and boot and info["boot_id"] != boot:
        return False
    pid = int(info.get("pid") or 0)
    if not pid_alive(pid):
        return False
    recorded, current = info.get("proc_start"), _proc_start(pid)
    return not (recorded and current and recorded != current)


def live_worker(root: Path) -> dict[str, Any] | None:
    info = read_worker(root)
    return info if worker_alive(info) else None


def start(root: Path, argv: Sequence[str], *, run_id: str, cwd: Path, log_header: str) -> dict[str, Any]:
    """Start ``argv`` detached, logging to ``root/run.log`` (``root``: the run's or its shard's directory); write
    and return its worker.json record.

    Refuses (UserError) while a live worker of this run exists; the check and the start are serialised by a
    lock so two callers cannot both start one.
    """
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
            kwargs: dict[str, Any] = {}
            if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
                kwargs["creationflags"] = subprocess.DETACHED_PROCESS | subprocess.CREATE_NEW_PROCESS_GROUP
            else:
                kwargs["start_new_session"] = True
            proc = subprocess.Popen(list(argv), cwd=str(cwd), stdin=subprocess.DEVNULL, stdout=fh,
                                    stderr=subprocess.STDOUT, close_fds=True, **kwargs)
        info = {
            "pid": proc.pid,
            "started_at": started_at,
            "hostname": socket.gethostname(),
            "log": str(log),
            "boot_id": _boot_id(),
            "proc_start": _proc_start(proc.pid),
        }
        run_store.write_atomic_json(root / WORKER_FILE, info)
    proc.returncode = 0  # never waited for here; keeps Popen's destructor from warning about a running child
    return info
