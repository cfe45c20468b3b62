"""Crash-safe files: atomic replace, fsynced appends, torn-tail repair, the one lock design, and no file opened
through a symbolic link. Standard library only.

The guarantees are ``references/SPEC.md``'s "Crash safety" and "Other people's files"; this module keeps them.
Below a project (``own``, or the folder that holds a ``.longmemeval-benchmarks``) no parent folder of a file opened
here may be a link either: nothing outside the project is ever written, truncated or locked (``SymlinkRefused``).

Every file the product opens in a run folder, the state folder or the cache goes through here, and every JSON read
through ``bounded_json``. Which records a file holds (and so which torn tail is a complete record) is the caller's
business: ``run_store`` passes its schemas in.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import sys
import threading
import time
from pathlib import Path
from dataclasses import dataclass
from typing import IO, Any, Callable, Iterator, Mapping

from lme.core import bounded_json
from lme.core.errors import UserError
from lme.core.facts import STATE_DIR, UPSTREAM_DIR

IsComplete = Callable[[dict], bool]
"""Whether a parsed last line is a whole record (a schema check); None: any JSON object is."""
CheckRecord = Callable[[dict, str, bytes], None]
"""Validate one record read from ``where`` (``file:line``; ``raw``: the line's bytes); raises a UserError naming
the fault."""

_TAIL_CHUNK = 1 << 16


# --------------------------------------------------------------------------- paths: never through a symbolic link

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_OWNED: set[str] = set()


class SymlinkRefused(UserError):
    """A file or folder of the project's state is a symbolic link: the benchmark does not go through it."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__(f"{path} is a symbolic link (or a loop of them); the benchmark never reads or writes its "
                         "state through one: it could point anywhere outside the project",
                         fix="replace the link with the real file or folder, or remove it")
        self.path = str(path)


def own(project: str | os.PathLike[str]) -> None:
    """Declare ``project`` a project this process works in: below it, no parent folder of a file opened here may
    be a symbolic link. (Below a folder that holds a ``.longmemeval-benchmarks``, that holds without a call.)"""
    for form in (os.path.abspath(project), os.path.realpath(project)):
        _OWNED.add(form)


def _root_of(full: str) -> str | None:
    """The nearest project above ``full`` (an absolute path): an owned folder, or the folder that holds the last
    ``.longmemeval-benchmarks`` of the path."""
    best = None
    for root in _OWNED:
        if full.startswith(root.rstrip(os.sep) + os.sep) and (best is None or len(root) > len(best)):
            best = root
    parts = full.split(os.sep)
    if STATE_DIR in parts[:-1]:
        anchor = os.sep.join(parts[:len(parts) - 2 - parts[-2::-1].index(STATE_DIR)]) or os.sep
        if best is None or len(anchor) > len(best):
            best = anchor
    return best


def check_no_symlinks(path: str | os.PathLike[str], *, include_self: bool = False) -> None:
    """Refuse (``SymlinkRefused``) when a folder between ``path``'s project and ``path`` is a symbolic link (and
    ``path`` itself, with ``include_self``). Folders that do not exist yet end the check: they will be made here."""
    full = os.path.abspath(path)
    root = _root_of(full)
    if root is None:
        return  # not below a project: a folder the user named, links and all
    parts = full[len(root):].strip(os.sep).split(os.sep)
    current = root
    for part in parts if include_self else parts[:-1]:
        current = os.path.join(current, part)
        try:
            mode = os.lstat(current).st_mode
        except OSError:
            return  # missing (made next), or not a folder: the open that follows names it
        if stat.S_ISLNK(mode):
            raise SymlinkRefused(current)


class NotRegularFile(UserError):
    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__(f"{path} is not a regular file (a pipe, socket or device)", fix="replace it or remove it")


def open_fd(path: str | os.PathLike[str], flags: int, mode: int = 0o644) -> int:
    """``os.open`` that never follows a symbolic link at ``path`` nor through a linked folder of its project, and
    never opens a pipe, socket or device (a FIFO would block the open)."""
    check_no_symlinks(path)
    try:
        kind = os.lstat(path).st_mode
    except OSError:
        kind = None  # missing (O_CREAT makes it), or a parent that is not a folder: the open says which
    if kind is not None and not (stat.S_ISREG(kind) or stat.S_ISDIR(kind) or stat.S_ISLNK(kind)):
        raise NotRegularFile(path)
    try:
        fd = os.open(path, flags | _NOFOLLOW | _CLOEXEC | _NONBLOCK, mode)  # O_NONBLOCK: a FIFO swapped in never blocks
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise SymlinkRefused(path) from None
        raise
    kind = os.fstat(fd).st_mode
    if not (stat.S_ISREG(kind) or stat.S_ISDIR(kind)):
        os.close(fd)
        raise NotRegularFile(path)
    if _NONBLOCK:
        os.set_blocking(fd, True)  # a regular file: back to ordinary reads and writes
    return fd


def open_file(path: str | os.PathLike[str], mode: str = "rb") -> IO[Any]:
    """``open(path, mode)`` through ``open_fd``: never through a symbolic link."""
    return open(path, mode, opener=lambda name, flags: open_fd(name, flags, 0o666))  # noqa: SIM115 - the caller closes


def sha256_file(path: str | os.PathLike[str], *, follow_symlinks: bool = False) -> str:
    """The sha256 hex digest of a file's bytes, read in 1 MiB blocks (a 2.75 GB dataset is never read whole);
    never through a symbolic link unless ``follow_symlinks`` (a file the user named, which may be one).
    OSError as ``open`` raises it: each caller says what a missing or unreadable file means to it."""
    import hashlib  # here, not at the top: most commands never hash a file, and hashlib costs ~3 ms to load

    digest = hashlib.sha256()
    with (open(path, "rb") if follow_symlinks else open_file(path, "rb")) as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def make_dirs(path: str | os.PathLike[str]) -> Path:
    """``mkdir -p`` that refuses a symbolic link among the folders it would go through (``check_no_symlinks``)."""
    check_no_symlinks(path, include_self=True)
    os.makedirs(path, exist_ok=True)
    check_no_symlinks(path, include_self=True)  # nothing swapped a link in meanwhile
    return Path(path)


def read_bytes(path: str | os.PathLike[str], *, max_bytes: int | None = None, follow_symlinks: bool = False) -> bytes:
    """A whole file, never through a symbolic link (``follow_symlinks``: a file the user named, which may be one);
    more than ``max_bytes`` is a UserError naming it."""
    with (open(path, "rb") if follow_symlinks else open_file(path, "rb")) as fh:
        if max_bytes is not None and os.fstat(fh.fileno()).st_size > max_bytes:
            data = None  # never read(max_bytes): that allocates max_bytes
        else:
            data = fh.read()
    if data is None or (max_bytes is not None and len(data) > max_bytes):
        raise UserError(f"{path}: more than {max_bytes:,} bytes, larger than a file of this kind can be",
                        fix="restore the file or remove it")
    return data


def read_text(path: str | os.PathLike[str], *, max_bytes: int | None = None) -> str:
    """``read_bytes`` as UTF-8 text (a UserError naming the file when it is not)."""
    data = read_bytes(path, max_bytes=max_bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UserError(f"{path}: not UTF-8 text (byte {e.start})", fix="restore the file or remove it") from None


def copy_file(source: str | os.PathLike[str], dest: str | os.PathLike[str]) -> None:
    """Copy a regular file (neither end through a symbolic link); the copy is written atomically, mode kept."""
    with open_file(source, "rb") as fh:
        data = fh.read()
        mode = os.fstat(fh.fileno()).st_mode
    write_atomic_bytes(Path(dest), data)
    os.chmod(dest, stat.S_IMODE(mode))


def copy_tree(source: str | os.PathLike[str], dest: str | os.PathLike[str], *, skip: tuple[str, ...] = ()) -> None:
    """Copy a folder of regular files and folders (``skip``: names left out); a symbolic link in it is refused."""
    source, dest = Path(source), Path(dest)
    if os.path.islink(source):
        raise SymlinkRefused(source)
    make_dirs(dest)
    for entry in sorted(os.scandir(source), key=lambda e: e.name):
        if entry.name in skip:
            continue
        if entry.is_symlink():
            raise SymlinkRefused(entry.path)
        if entry.is_dir():
            copy_tree(entry.path, dest / entry.name, skip=skip)
        else:
            copy_file(entry.path, dest / entry.name)


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
    check_no_symlinks(path)  # mkstemp makes its file with O_EXCL: never through a link; os.replace replaces one
    try:
        fd, tmp = _mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=_TEMP_SUFFIX)
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
    """``obj`` as indented JSON, through ``write_atomic_bytes``."""
    text = json.dumps(obj, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    write_atomic_bytes(Path(path), text.encode("utf-8"))


def write_atomic_text(path: Path, text: str) -> None:
    write_atomic_bytes(Path(path), text.encode("utf-8"))


def read_json(path: Path, *, check: Callable[[Any, str], None] | None = None,
              limits: bounded_json.Limits = bounded_json.DEFAULT, missing_ok: bool = False,
              fix: str = "fix or delete the file") -> Any:
    """Read one JSON file within ``limits`` (``check(obj, where)`` validates it), never through a symbolic link;
    every failure is one UserError line (``fix`` says what to do about a file that is not JSON). ``missing_ok``:
    None for a file that does not exist."""
    path = Path(path)
    try:
        data = read_bytes(path, max_bytes=limits.document_bytes)
    except FileNotFoundError:
        if missing_ok:
            return None
        raise UserError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise UserError(f"{path} is a directory, not a file", fix="move it away") from None
    except OSError as e:
        raise UserError(f"{path}: cannot read ({e.strerror})") from None
    obj = bounded_json.loads(data, str(path), limits=limits, fix=fix)
    if check is not None:
        check(obj, str(path))
    return obj


def peek_json(path: Path, *, limits: bounded_json.Limits = bounded_json.DEFAULT) -> Any:
    """``read_json`` for readers that must never fail (status polls, caches): None when the file is missing,
    unreadable, a link, or not JSON within bounds."""
    try:
        return read_json(path, limits=limits, missing_ok=True)
    except (OSError, UserError):
        return None


def ensure_writable_dir(path: Path) -> Path:
    """Create ``path`` if needed and prove it writable; otherwise a UserError naming it."""
    path = Path(path)
    try:
        make_dirs(path)
    except FileExistsError:
        pass  # a file there: named below
    except OSError as e:
        raise UserError(f"cannot create directory {path} ({e.strerror})", fix="choose a writable runs_dir") from None
    if not path.is_dir():
        raise UserError(f"{path} exists and is not a directory", fix="choose another runs_dir")
    try:
        fd, probe = _mkstemp(dir=path, prefix=".write-probe.", suffix=_TEMP_SUFFIX)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise UserError(f"directory {path} is not writable ({e.strerror})", fix="fix its permissions or choose another runs_dir") from None
    return path


# --------------------------------------------------------------------------- leftovers of killed writes

STALE_TEMP_AGE_S = 3600.0
"""How long (by mtime) a temp file or partial folder of ours stays untouched before ``clean_leftovers`` removes it.
Several processes write in one project at once (the shards of a run, a background worker, the scorecard), so a
sweep must never take a temp a live writer is about to rename: a write, even of a large report, renames its temp
within seconds (a snapshot's copy touches its folder at each file), so one an hour old has no writer left: it was
killed."""
_TEMP_SUFFIX = ".tmp"
_TEMP_NAME = re.compile(r"\A\..+\.[a-z0-9_]{8}\.tmp\Z", re.DOTALL)
"""Our temps: ``.<name>.<mkstemp's or mkdtemp's 8 random characters>.tmp`` (``write_atomic_bytes``,
``ensure_writable_dir``, ``make_temp_dir``)."""
_OLD_SNAPSHOT_TEMP = re.compile(r"\A\.v[0-9]+\.[a-z0-9_]{8}\Z")
"""A partial loop snapshot's folder as the snapshot step named it before ``make_temp_dir``: ``.v<round>.XXXXXXXX``."""


def is_temp_name(name: str) -> bool:
    """Whether ``name`` is one our writers give their temp files and folders."""
    return _TEMP_NAME.match(name) is not None


def make_temp_dir(dest: Path) -> Path:
    """A new empty folder beside ``dest`` to build it in before renaming it into place; a build killed on the way
    leaves it behind, and ``clean_leftovers`` removes it once it is stale."""
    import tempfile  # see _mkstemp

    return Path(tempfile.mkdtemp(dir=Path(dest).parent, prefix=f".{Path(dest).name}.", suffix=_TEMP_SUFFIX))


@dataclass(frozen=True)
class Removed:
    """What a sweep removed: temp files and partial folders, and their bytes."""

    count: int = 0
    bytes: int = 0

    def __add__(self, other: "Removed") -> "Removed":
        return Removed(self.count + other.count, self.bytes + other.bytes)


def clean_leftovers(project: str | os.PathLike[str], *folders: str | os.PathLike[str]) -> Removed:
    """Remove the stale temps (``STALE_TEMP_AGE_S``) that killed writes left in the project's state folder and in
    ``folders`` (a configured runs or cache folder; one outside the project is never searched), the upstream
    checkout aside; says on stderr, in one line, what went when something did. Never follows a symbolic link,
    never fails: a temp it cannot remove stays for the next start."""
    project = os.path.abspath(project)
    state = os.path.join(project, STATE_DIR)
    roots = [state, *(os.path.abspath(f) for f in folders)]
    inside = [r for r in roots if r.startswith(project + os.sep)]
    roots = [r for r in dict.fromkeys(inside) if not any(r.startswith(o + os.sep) for o in inside)]
    oldest = time.time() - STALE_TEMP_AGE_S
    removed = Removed()
    for root in roots:
        if _is_real_dir(root):
            removed += _sweep(root, oldest, skip=os.path.join(project, UPSTREAM_DIR))
    if removed.count:
        print(f"removed {removed.count} stale temporary file(s) or partial folder(s) left by killed writes "
              f"({removed.bytes:,} bytes)", file=sys.stderr)
    return removed


def _is_real_dir(path: str) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _sweep(folder: str, oldest: float, *, skip: str) -> Removed:
    removed = Removed()
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        try:
            if entry.is_symlink():
                continue
            if entry.is_dir(follow_symlinks=False):
                if is_temp_name(entry.name) or _OLD_SNAPSHOT_TEMP.match(entry.name):
                    removed += _remove_partial(entry.path, oldest)
                elif entry.path != skip:
                    removed += _sweep(entry.path, oldest, skip=skip)
            elif entry.is_file(follow_symlinks=False) and is_temp_name(entry.name):
                info = entry.stat(follow_symlinks=False)
                if info.st_mtime < oldest:
                    os.unlink(entry.path)
                    removed += Removed(1, info.st_size)
        except OSError:
            continue  # gone meanwhile (another sweep), or not ours to remove: left for the next start
    return removed


def _remove_partial(folder: str, oldest: float) -> Removed:
    """Remove a partial folder when nothing in it was touched since ``oldest`` (a live build touches it)."""
    newest, size = os.lstat(folder).st_mtime, 0
    for here, dirs, files in os.walk(folder):  # never into a linked folder
        for name in dirs + files:
            info = os.lstat(os.path.join(here, name))
            newest = max(newest, info.st_mtime)
            size += info.st_size if stat.S_ISREG(info.st_mode) else 0
    if newest >= oldest:
        return Removed()
    import shutil  # here: few commands ever remove a partial folder

    shutil.rmtree(folder)  # on POSIX through file descriptors: never follows a link swapped in meanwhile
    return Removed(1, size)


# --------------------------------------------------------------------------- appends


class _AppendState:
    """Which files had their tail repaired and one lock per file, process-wide: the torn-tail repair runs once per
    file per process before its first append, and threads of one run append to the same files."""

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
        fh = os.fdopen(open_fd(path, os.O_RDWR | getattr(os, "O_BINARY", 0)), "r+b")
    except FileNotFoundError:
        return None
    with fh:
        size = os.fstat(fh.fileno()).st_size
        if size == 0:
            return None
        fh.seek(size - 1)
        whole = fh.read(1) == b"\n"
        cut = _last_newline_offset(fh, size - 1 if whole else size)
        fh.seek(cut)
        last = fh.read(size - cut)
        # A whole last line stays unless it is unreadable (e.g. NUL bytes after a power loss), which readers
        # skip as a torn tail and a following append would turn into a corrupt middle line.
        if whole and (not last.strip() or _is_complete_record(last, None)):
            return None
        if not whole and _is_complete_record(last, is_complete):
            fh.seek(size)
            fh.write(b"\n")
            action = "newline"
        else:
            fh.truncate(cut)
            action = "truncated"
        fh.flush()
        os.fsync(fh.fileno())
    return action


def _is_complete_record(blob: bytes, is_complete: IsComplete | None) -> bool:
    try:
        obj = bounded_json.loads(blob, "a last line")
    except ValueError:
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
        created = not os.path.lexists(path)
        fd = open_fd(path, os.O_APPEND | os.O_CREAT | os.O_WRONLY | getattr(os, "O_BINARY", 0), 0o644)
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


def append_jsonl(path: Path, obj: Mapping[str, Any], *, line: bytes | None = None) -> None:
    """Append one JSON line (``line``: its bytes, default ``json_line(obj)``); repairs a torn tail on first use."""
    append_bytes(Path(path), json_line(obj) if line is None else line, repair=repair_tail)


def append_text_line(path: Path, text: str) -> None:
    """Append one line of text (a Markdown table row), fsynced; the file's content is never repaired or cut."""
    append_bytes(Path(path), (text.rstrip("\n") + "\n").encode("utf-8"))


def iter_jsonl(path: Path, *, check: CheckRecord | None = None, skip_bad: bool = False) -> Iterator[tuple[int, dict]]:
    """Yield ``(line_number, record)``. An unparseable final line (a torn append) is skipped; a bad line
    anywhere else is a ``UserError`` naming ``file:line`` (``skip_bad``: skipped too, for readers that look for
    one record). ``check`` validates each record; a final line without its ``\\n`` that fails it is a torn append
    too. A line longer than ``bounded_json.DEFAULT.document_bytes`` is a bad line, read no further."""
    for number, _, obj in _jsonl_records(Path(path), check, skip_bad):
        yield number, obj


def iter_jsonl_at(path: Path) -> Iterator[tuple[int, dict]]:
    """``iter_jsonl``'s records as ``(byte offset of the line, record)``: a reader that keeps offsets rather
    than large records reads one again with ``read_jsonl_at``."""
    for _, offset, obj in _jsonl_records(Path(path), None, False):
        yield offset, obj


def read_jsonl_at(path: Path, offset: int) -> dict:
    """The record of the line that starts at ``offset`` (an offset ``iter_jsonl_at`` gave)."""
    limit = bounded_json.DEFAULT.document_bytes
    with open_file(Path(path), "rb") as fh:
        fh.seek(offset)
        raw = fh.readline(limit + 1)
    if len(raw) > limit and not raw.endswith(b"\n"):
        raw = _OVERLONG
    return _parse_line(Path(path), 0, raw, check=None, final=False)


def _jsonl_records(path: Path, check: CheckRecord | None, skip_bad: bool) -> Iterator[tuple[int, int, dict]]:
    try:
        fh = open_file(path, "rb")
    except FileNotFoundError:
        return
    limit = bounded_json.DEFAULT.document_bytes
    with fh:
        pending: tuple[int, bytes, int] | None = None
        number = 0
        offset = 0
        while True:
            start = offset
            raw = fh.readline(limit + 1)
            if not raw:
                break
            number += 1
            offset += len(raw)
            if len(raw) > limit and not raw.endswith(b"\n"):
                while raw and not raw.endswith(b"\n"):  # skip the rest of the overlong line
                    raw = fh.readline(limit)
                    offset += len(raw)
                raw = _OVERLONG  # reported (or skipped) as a bad line
            if pending is not None:
                obj = _parse_line(path, *pending[:2], check=check, final=False, skip_bad=skip_bad)
                if obj is not None:
                    yield pending[0], pending[2], obj
            pending = (number, raw, start) if raw.strip() else None
        if pending is not None:
            obj = _parse_line(path, *pending[:2], check=check, final=True, skip_bad=skip_bad)
            if obj is not None:
                yield pending[0], pending[2], obj


_OVERLONG = b"<a line too long to read>\n"
"""Stands for a line too long to read (compared by identity)."""


def _parse_line(path: Path, number: int, raw: bytes, *, check: CheckRecord | None, final: bool,
                skip_bad: bool = False) -> dict | None:
    where = f"{path}:{number}"
    try:
        if raw is _OVERLONG:
            raise ValueError(f"longer than {bounded_json.DEFAULT.document_bytes:,} bytes")
        obj = bounded_json.loads(raw, where)
        if not isinstance(obj, dict):
            raise ValueError("not a JSON object")
    except ValueError as e:
        if final or skip_bad:
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
    return obj


# --------------------------------------------------------------------------- space for the last word


class SpaceReserve:
    """A file of ``size`` bytes held while a process writes (``hold``), removed on a full disk (``release``): the
    space it gives back lets the writer still record that it stopped and why (a run's last run-meta), where a full
    disk would otherwise leave the record saying ``running``. Removed again when the writer ends."""

    def __init__(self, path: Path, size: int = 256 << 10) -> None:
        self.path = Path(path)
        self.size = size

    def hold(self) -> "SpaceReserve":
        fd = open_fd(self.path, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            if hasattr(os, "posix_fallocate"):
                os.posix_fallocate(fd, 0, self.size)  # real blocks: a sparse file would free nothing
            else:  # pragma: no cover - platforms without fallocate
                os.ftruncate(fd, 0)
                os.write(fd, b"\0" * self.size)
        except BaseException:
            os.close(fd)
            self.release()
            raise
        os.close(fd)
        return self

    def release(self) -> None:
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


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
        fd = open_fd(self.path, os.O_RDWR | os.O_CREAT, 0o644)  # a linked .lock never gets a pid written through it
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
        if not self.wait or self.timeout is None:
            self._os_lock(fd, block=self.wait)
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
            with open_file(self.path, "rb") as fh:
                text = fh.read(32).decode("ascii", "replace").strip()
        except (OSError, UserError):
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


def _mkstemp(**where: Any) -> tuple[int, str]:
    """``tempfile.mkstemp``, imported on first use: ``tempfile`` (with ``shutil`` and ``random``) costs ~4 ms, and
    many commands load this module only to read."""
    import tempfile

    return tempfile.mkstemp(**where)
