"""User-facing errors and the one way a script's ``main`` turns them into an exit status."""

from __future__ import annotations

import atexit
import errno
import gc
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Callable, NoReturn, Sequence

EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130


class UserError(Exception):
    """A mistake the user can fix. ``str(err)`` is the whole message: one line, names the fix."""

    def __init__(self, message: str, *, fix: str | None = None) -> None:
        text = " ".join(message.split())
        if fix:
            text = f"{text} ({' '.join(fix.split())})"
        super().__init__(text)


def run_main(main: Callable[[Sequence[str] | None], int | None], argv: Sequence[str] | None = None) -> int:
    """Call ``main(argv)``; map UserError to one stderr line + exit 2 and Ctrl-C to 130."""
    try:
        _take_over_ctrl_c()
        return int(main(argv) or 0)
    except UserError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USER_ERROR
    except OSError as err:
        line = storage_error_line(err)
        if line is None:
            raise
        print(f"error: {line}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def exit_now(code: int) -> NoReturn:
    """End a command's process with ``code``: what is garbage is collected (an SQLite connection in a reference
    cycle closes, and checkpoints and removes its -wal/-shm files), its exit handlers run and its streams are
    flushed, but the interpreter is not torn down: a run has imported an SDK's ~900 modules, and unloading them all
    cost 0.3 s of CPU after the last line was printed (the collection costs ~0.05 s). For a command's ``__main__``
    only: callers in a process (tests) use ``run_main``."""
    gc.collect()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


FULL = {errno.ENOSPC, errno.EFBIG, getattr(errno, "EDQUOT", errno.ENOSPC)}
"""Out of space: the disk, the quota, or the process's file-size limit (EFBIG, how the tests simulate a full disk)."""
READ_ONLY = {errno.EACCES, errno.EPERM, errno.EROFS}


def storage_error_line(err: OSError) -> str | None:
    """The one line for a write the file system refused (disk full, not writable), or None for any other error."""
    where = err.filename or "to the disk"
    if err.errno in FULL:
        return (f"cannot write {where}: disk full or file too large ({err.strerror}); free some space (or raise the "
                "file-size limit), then run the same command again")
    if err.errno in READ_ONLY:
        return (f"cannot write {where}: not writable ({err.strerror}); fix its permissions (or point the config's "
                "runs_dir / cache_dir at a writable folder), then run the same command again")
    return None


def _take_over_ctrl_c() -> None:
    """From here SIGINT is Python's KeyboardInterrupt again (caught above, or by the run's own handlers), not the
    early exit ``entry_guard`` installed for the imports. The guard imports ``signal`` to install it, so without
    ``signal`` loaded there is nothing to take over (and this module, which every command and users' targets load,
    stays free of ``signal`` and ``threading``)."""
    signal = sys.modules.get("signal")
    if signal is None or not getattr(signal.getsignal(signal.SIGINT), "early_interrupt", False):
        return
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    except ValueError:  # not the main thread: only the main thread's handlers can be set, and they stay the guard's
        pass
