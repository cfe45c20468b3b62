"""Crash-safe files: atomic replace, fsynced appends, torn-tail repair, and the one lock design. Standard library only.

The guarantees (``references/SPEC.md`` states them for users):

* a whole file is replaced atomically: temp file in the same directory, fsync, ``os.replace``, fsync the directory;
* an append is one ``os.write`` on an ``O_APPEND`` file (looped over a short write), then fsync;
* a crash mid-append leaves at most one partial last line; the first append in a process repairs it
  (``repair_tail``), and readers skip it (``iter_jsonl``), so no complete line is lost and no torn line is read;
* a lock is an OS lock on a file (flock on POSIX, msvcrt on Windows) that dies with its process, so a crash never
  leaves a lock behind.

Which records a file holds (and so which torn tail is a complete record) is the caller's business: ``run_store``
passes its schemas in.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from lme.core.errors import UserError

IsComplete = Callable[[dict], bool]
"""Whether a parsed last line is a whole record (a schema check); None: any JSON object is."""
CheckRecord = Callable[[dict, str, bytes], None]
"""Validate one record read from ``where`` (``file:line``; ``raw``: the line's bytes); raises a UserError naming
the fault."""

_TAIL_CHUNK = 1 << 16


# --------------------------------------------------------------------------- whole files


def fsync_dir(directory: Path) -> None:
    if os.name != "posix":
        return  # Windows cannot open a directory for fsync; os.replace is already durable enough there.
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _read_umask() -> int:
    mask = os.umask(0)  # the only way to read it; set straight back, once, at import (before any worker thread)
    os.umask(mask)
    return mask


_UMASK = _read_umask()


def write_atomic_bytes(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` so a reader sees the old file or the new one, never a mix."""
    path = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as err:  # name the file the caller wrote, not a temporary name
        raise OSError(err.errno, err.strerror, str(path)) from err
    try:
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600; give the file the mode a plain open() would
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as err:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(err, OSError) and err.filename in (None, tmp):  # name the file the caller wrote
            raise OSError(err.errno, err.strerror, str(path)) from err
        raise
    fsync_dir(path.parent)


def write_atomic_json(path: Path, obj: Any) -> None:
    """Write ``obj`` as indented JSON via temp file + fsync + ``os.replace`` + directory fsync."""
    text = json.dumps(obj, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    write_atomic_bytes(Path(path), text.encode("utf-8"))


def write_atomic_text(path: Path, text: str) -> None:
    write_atomic_bytes(Path(path), text.encode("utf-8"))


def read_json(path: Path, *, check: Callable[[Any, str], None] | None = None) -> Any:
    """Read one JSON file (``check(obj, where)`` validates it); every failure is one UserError line."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{path}: file not found") from None
    except UnicodeDecodeError as e:
        raise UserError(f"{path}: not UTF-8 text (byte {e.start})", fix="restore the file or start a new run") from None
    except OSError as e:
        raise UserError(f"{path}: cannot read ({e.strerror})") from None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise UserError(
            f"{path}: not valid JSON ({e.msg} at line {e.lineno} column {e.colno})",
            fix="fix or delete the file",
        ) from None
    if check is not None:
        check(obj, str(path))
    return obj


def ensure_writable_dir(path: Path) -> Path:
    """Create ``path`` if needed and prove it writable; otherwise a UserError naming it."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserError(f"cannot create directory {path} ({e.strerror})", fix="choose a writable runs_dir") from None
    if not path.is_dir():
        raise UserError(f"{path} exists and is not a directory", fix="choose another runs_dir")
    try:
        fd, probe = tempfile.mkstemp(dir=path, prefix=".write-probe.")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise UserError(f"directory {path} is not writable ({e.strerror})", fix="fix its permissions or choose another runs_dir") from None
    return path


# --------------------------------------------------------------------------- appends


class _AppendState:
    """Per-process bookkeeping for appends: which files had their tail repaired, one lock per file.

    The torn-tail repair must run once per file per process before its first append, and threads of one run
    append to the same files, so this state is process-wide by nature.
    """

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}
        self._repaired: set[str] = set()

    def lock_for(self, path: Path) -> threading.Lock:
        key = os.path.abspath(path)
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())

    def needs_repair(self, path: Path) -> bool:
        return os.path.abspath(path) not in self._repaired

    def mark_repaired(self, path: Path) -> None:
        self._repaired.add(os.path.abspath(path))

    def forget(self, path: Path) -> None:
        self._repaired.discard(os.path.abspath(path))


APPENDS = _AppendState()


def _last_newline_offset(fh, size: int) -> int:
    """Offset just past the last ``\\n`` in the file (0 when there is none)."""
    end = size
    while end > 0:
        start = max(0, end - _TAIL_CHUNK)
        fh.seek(start)
        chunk = fh.read(end - start)
        i = chunk.rfind(b"\n")
        if i >= 0:
            return start + i + 1
        end = start
    return 0


def repair_tail(path: Path, is_complete: IsComplete | None = None) -> str | None:
    """Make ``path`` end at a line boundary. Returns what was done: None, ``"newline"`` or ``"truncated"``.

    A last line without ``\\n`` that parses as a complete record (a JSON object that ``is_complete`` accepts)
    gets its ``\\n``; anything else after the last ``\\n`` is the remains of an append a crash cut short, and is
    cut off. A final line that has its ``\\n`` but is not a JSON object (garbage left by a power loss) is cut too.
    """
    path = Path(path)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return None
    if size == 0:
        return None
    with open(path, "r+b") as fh:
        fh.seek(size - 1)
        if fh.read(1) == b"\n":
            # Whole last line: keep it unless it is unreadable (e.g. NUL bytes after a power loss), which
            # readers skip as a torn tail and a following append would turn into a corrupt middle line.
            cut = _last_newline_offset(fh, size - 1)
            fh.seek(cut)
            last = fh.read(size - cut)
            if not last.strip() or _parses_as_object(last):
                return None
            fh.truncate(cut)
            fh.flush()
            os.fsync(fh.fileno())
            return "truncated"
        cut = _last_newline_offset(fh, size)
        fh.seek(cut)
        tail = fh.read(size - cut)
        if _is_complete_record(tail, is_complete):
            fh.seek(size)
            fh.write(b"\n")
            action = "newline"
        else:
            fh.truncate(cut)
            action = "truncated"
        fh.flush()
        os.fsync(fh.fileno())
    return action


def _parses_as_object(blob: bytes) -> bool:
    try:
        return isinstance(json.loads(blob.decode("utf-8")), dict)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return False


def _is_complete_record(blob: bytes, is_complete: IsComplete | None) -> bool:
    try:
        obj = json.loads(blob.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return False
    return isinstance(obj, dict) and (is_complete is None or is_complete(obj))


def append_bytes(path: Path, data: bytes, *, repair: Callable[[Path], Any] | None = None) -> None:
    """Append ``data`` with one ``os.write`` (O_APPEND), then fsync; ``repair(path)`` runs before the first append
    to ``path`` in this process. Threads appending to one file are serialised."""
    path = Path(path)
    with APPENDS.lock_for(path):
        if repair is not None and APPENDS.needs_repair(path):
            repair(path)
            APPENDS.mark_repaired(path)
        created = not path.exists()
        fd = os.open(path, os.O_APPEND | os.O_CREAT | os.O_WRONLY | getattr(os, "O_BINARY", 0), 0o644)
        try:
            written = os.write(fd, data)
            while written < len(data):  # a short write (disk full, signal) must not leave a torn line behind
                written += os.write(fd, data[written:])
            os.fsync(fd)
        finally:
            os.close(fd)
    if created:
        fsync_dir(path.parent)


def json_line(obj: Mapping[str, Any]) -> bytes:
    """One compact JSON line, as every JSONL file of a run holds them."""
    return (json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n").encode("utf-8")


def append_jsonl(path: Path, obj: Mapping[str, Any], *, is_complete: IsComplete | None = None,
                 line: bytes | None = None) -> None:
    """Append one JSON line (``line``: its bytes, default ``json_line(obj)``); repairs a torn tail on first use."""
    append_bytes(Path(path), json_line(obj) if line is None else line,
                 repair=lambda p: repair_tail(p, is_complete))


def append_text_line(path: Path, text: str) -> None:
    """Append one line of text (a Markdown table row), fsynced; the file's content is never repaired or cut."""
    append_bytes(Path(path), (text.rstrip("\n") + "\n").encode("utf-8"))


def iter_jsonl(path: Path, *, check: CheckRecord | None = None) -> Iterator[tuple[int, dict]]:
    """Yield ``(line_number, record)``. An unparseable final line (a torn append) is skipped; a bad line
    anywhere else is a ``UserError`` naming ``file:line``. ``check`` validates each record; a final line
    without its ``\\n`` that fails it is a torn append too."""
    for number, _, obj in _jsonl_records(Path(path), check):
        yield number, obj


def iter_jsonl_at(path: Path) -> Iterator[tuple[int, dict]]:
    """``iter_jsonl``'s records as ``(byte offset of the line, record)``: a reader that keeps offsets rather
    than large records reads one again with ``read_jsonl_at``."""
    for _, offset, obj in _jsonl_records(Path(path), None):
        yield offset, obj


def read_jsonl_at(path: Path, offset: int) -> dict:
    """The record of the line that starts at ``offset`` (an offset ``iter_jsonl_at`` gave)."""
    with open(path, "rb") as fh:
        fh.seek(offset)
        raw = fh.readline()
    parsed = _parse_line(Path(path), 0, raw, check=None, final=False)
    return parsed[1]


def _jsonl_records(path: Path, check: CheckRecord | None) -> Iterator[tuple[int, int, dict]]:
    try:
        fh = open(path, "rb")
    except FileNotFoundError:
        return
    with fh:
        pending: tuple[int, bytes, int] | None = None
        offset = 0
        for number, raw in enumerate(fh, 1):
            if pending is not None:
                yield _at(_parse_line(path, *pending[:2], check=check, final=False), pending[2])
            pending = (number, raw, offset) if raw.strip() else None
            offset += len(raw)
        if pending is not None:
            parsed = _parse_line(path, *pending[:2], check=check, final=True)
            if parsed is not None:
                yield _at(parsed, pending[2])


def _at(parsed: tuple[int, dict], offset: int) -> tuple[int, int, dict]:
    return parsed[0], offset, parsed[1]


def _parse_line(path: Path, number: int, raw: bytes, *, check: CheckRecord | None, final: bool):
    where = f"{path}:{number}"
    try:
        obj = json.loads(raw.decode("utf-8"))
        if not isinstance(obj, dict):
            raise ValueError("not a JSON object")
    except (UnicodeDecodeError, ValueError) as e:
        if final:
            return None
        raise UserError(
            f"{where}: corrupt line in the middle of an append-only file ({e})",
            fix="restore the file from a backup or start a new run; do not edit it by hand",
        ) from None
    if check is not None:
        try:
            check(obj, where, raw)
        except UserError:
            if final and not raw.endswith(b"\n"):
                return None
            raise
    return number, obj


# --------------------------------------------------------------------------- the lock


class LockHeld(UserError):
    """The lock is held by another process (``holder``: its pid when it wrote one)."""

    def __init__(self, message: str, holder: int | None) -> None:
        super().__init__(message)
        self.holder = holder


class FileLock:
    """An OS lock on ``directory/name`` (flock on POSIX, msvcrt on Windows), the holder's pid written in it.

    The OS drops the lock when its process dies, so a lock file left behind by a crash never blocks anyone; the
    file stays (deleting a lock file races with the next locker). ``shared=True`` takes a shared lock (several
    holders, no exclusive one; Windows has no shared flock: there it is exclusive). ``wait`` blocks until the
    lock is free, for at most ``timeout`` seconds when given; otherwise a held lock is refused at once.
    Subclasses word the refusal (``busy_message``).
    """

    _WIN_LOCK_OFFSET = 64  # Windows locks a byte range; keep it clear of the pid text so others can read it
    _POLL_S = 0.05

    def __init__(self, directory: Path, name: str, *, shared: bool = False, wait: bool = False,
                 timeout: float | None = None) -> None:
        self.directory = Path(directory)
        self.path = self.directory / name
        self.shared = shared
        self.wait = wait
        self.timeout = timeout
        self._fd: int | None = None

    def busy_message(self, holder: int | None) -> str:
        return f"{self.path} is held by {f'pid {holder}' if holder else 'another process'}"

    def acquire(self) -> "FileLock":
        ensure_writable_dir(self.directory)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            self._lock_fd(fd)
        except OSError:
            os.close(fd)
            holder = self.holder_pid()
            raise LockHeld(self.busy_message(holder), holder) from None
        if not self.shared:  # several shared holders: the pid in the file stays the last exclusive holder's
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
            os.write(fd, f"{os.getpid()}\n".encode())
            os.fsync(fd)
        self._fd = fd
        return self

    def _lock_fd(self, fd: int) -> None:
        if not self.wait:
            self._os_lock(fd, block=False)
            return
        if self.timeout is None:
            self._os_lock(fd, block=True)
            return
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                self._os_lock(fd, block=False)
                return
            except OSError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(self._POLL_S)

    def release(self) -> None:
        if self._fd is None:
            return
        try:
            self._os_unlock(self._fd)
        finally:
            os.close(self._fd)
            self._fd = None

    def holder_pid(self) -> int | None:
        try:
            with open(self.path, "rb") as fh:
                text = fh.read(32).decode("ascii", "replace").strip()
        except OSError:
            return None
        return int(text) if text.isdigit() else None

    def __enter__(self) -> "FileLock":
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()

    if sys.platform == "win32":  # pragma: no cover - exercised on Windows only

        def _os_lock(self, fd: int, *, block: bool) -> None:
            import msvcrt

            os.lseek(fd, self._WIN_LOCK_OFFSET, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_LOCK if block else msvcrt.LK_NBLCK, 1)

        def _os_unlock(self, fd: int) -> None:
            import msvcrt

            os.lseek(fd, self._WIN_LOCK_OFFSET, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

    else:

        def _os_lock(self, fd: int, *, block: bool) -> None:
            import fcntl

            mode = fcntl.LOCK_SH if self.shared else fcntl.LOCK_EX
            fcntl.flock(fd, mode if block else mode | fcntl.LOCK_NB)

        def _os_unlock(self, fd: int) -> None:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_UN)
