"""Is a detached process we started still running? Standard library only (setup runs before the venv exists).

A record of a process keeps its pid with the host name, the boot id and, on Linux, the process's start time, so a
pid reused after a restart (or by another program) is not mistaken for ours. Runs' background workers and
setup's background job both use it.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import IO, Any, Mapping, Sequence


def boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip() or None
    except OSError:
        return None


def proc_stat(pid: int) -> list[str] | None:
    """Fields of ``/proc/<pid>/stat`` after the command name (state is [0], start time is [19]), or None."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return raw[raw.rfind(")") + 2:].split()


def proc_start(pid: int) -> str | None:
    fields = proc_stat(pid)
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
    fields = proc_stat(pid)
    return not (fields and fields[0] in ("Z", "X"))


def identity(pid: int) -> dict[str, Any]:
    """What a record keeps to recognise ``pid`` later (see ``alive``)."""
    return {"pid": pid, "hostname": socket.gethostname(), "boot_id": boot_id(), "proc_start": proc_start(pid)}


def alive(info: Mapping[str, Any] | None) -> bool:
    """Is the process that ``info`` (``identity`` plus anything else) describes still running? A record from another
    machine, or from before this machine booted, is not; a pid that now belongs to another process is not."""
    if not info:
        return False
    if info.get("hostname") not in (None, socket.gethostname()):
        return False
    boot = boot_id()
    if info.get("boot_id") and boot and info["boot_id"] != boot:
        return False
    pid = int(info.get("pid") or 0)
    if not pid_alive(pid):
        return False
    recorded, current = info.get("proc_start"), proc_start(pid)
    return not (recorded and current and recorded != current)


def start_detached(argv: Sequence[str], *, cwd: Path, stdout: IO[bytes], stderr: IO[bytes] | int) -> int:
    """Start ``argv`` in its own session (process group on Windows), stdin ``/dev/null``, so the caller's end, its
    process group or a tool's time limit does not stop it; return its pid. It is never waited for."""
    kwargs: dict[str, Any] = {}
    if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
        kwargs["creationflags"] = subprocess.DETACHED_PROCESS | subprocess.CREATE_NEW_PROCESS_GROUP
    else:
        kwargs["start_new_session"] = True
    proc = subprocess.Popen(list(argv), cwd=str(cwd), stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr,
                            close_fds=True, **kwargs)
    proc.returncode = 0  # keeps Popen's destructor from warning about a running child
    return proc.pid
