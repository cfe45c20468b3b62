"""Crash-safe run state: atomic JSON files, append-only JSONL with fsync, torn-tail repair, reconcile, run lock.

The guarantees (``references/SPEC.md`` states them for users):

* whole files (``run-meta.json``, ``manifest.json``, a rewritten ``questions_completed.jsonl``) are replaced
  atomically: temp file in the same directory, fsync, ``os.replace``, fsync the directory;
* ``item-results.jsonl`` and ``questions_completed.jsonl`` only grow, one ``os.write`` per line, then fsync;
* a crash mid-append leaves at most one partial last line; the first append in a process repairs it, and readers
  skip it, so no complete row is ever lost and no torn row is ever read;
* ``reconcile`` makes the two files agree after a crash: a completed mark counts only with a judged row;
* one writing process per run directory, held by an OS lock on ``.lock`` that dies with the process.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import tempfile
import threading
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence, TypeVar

from errors import UserError
from schemas import SchemaError, check_version, is_valid, validate

RESULTS_FILE = "item-results.jsonl"
COMPLETED_FILE = "questions_completed.jsonl"
META_FILE = "run-meta.json"
MANIFEST_FILE = "manifest.json"
LOCK_FILE = ".lock"
SHARD_GLOB = "shard-*"

_SCHEMA_OF_FILE = {RESULTS_FILE: "item-result", COMPLETED_FILE: "completed"}
_RUN_ID_RE = re.compile(r"[A-Za-z0-9._-]{1,80}")
_TAIL_CHUNK = 1 << 16

T = TypeVar("T")


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# --------------------------------------------------------------------------- whole files


def _fsync_dir(directory: Path) -> None:
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
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600; give the file the mode a plain open() would
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(path.parent)


def write_atomic_json(path: Path, obj: Any) -> None:
    """Write ``obj`` as indented JSON via temp file + fsync + ``os.replace`` + directory fsync."""
    text = json.dumps(obj, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    write_atomic_bytes(Path(path), text.encode("utf-8"))


def read_json(path: Path, *, schema: str | None = None) -> dict:
    """Read one JSON file; with ``schema``, check its ``schemaVersion`` major and validate it."""
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
    if schema is not None:
        if isinstance(obj, dict) and "schemaVersion" in obj:
            check_version(obj, where=str(path))
        validate(schema, obj, where=str(path))
    return obj


# --------------------------------------------------------------------------- append-only JSONL


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


_APPENDS = _AppendState()


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


def repair_tail(path: Path, schema: str | None = None) -> str | None:
    """Make ``path`` end at a line boundary. Returns what was done: None, ``"newline"`` or ``"truncated"``.

    A last line without ``\\n`` that parses as a complete valid record gets its ``\\n``; anything else after the
    last ``\\n`` is the remains of an append a crash cut short, and is cut off. A final line that has its ``\\n``
    but is not a JSON object (garbage left by a power loss) is cut off too.
    """
    path = Path(path)
    schema = schema or _SCHEMA_OF_FILE.get(path.name)
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
        if _is_complete_record(tail, schema):
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


def _is_complete_record(blob: bytes, schema: str | None) -> bool:
    try:
        obj = json.loads(blob.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return False
    return isinstance(obj, dict) and (schema is None or is_valid(schema, obj))


def append_jsonl(path: Path, obj: Mapping[str, Any]) -> None:
    """Append one JSON line: one ``os.write`` (O_APPEND), then fsync. Repairs a torn tail on first use."""
    append_jsonl_many(path, [obj])


def append_jsonl_many(path: Path, objs: Sequence[Mapping[str, Any]]) -> None:
    """Append JSON lines with one ``os.write`` and one fsync (a crash leaves at most the last line torn)."""
    if not objs:
        return
    path = Path(path)
    line = b"".join((json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n").encode("utf-8")
                    for obj in objs)
    with _APPENDS.lock_for(path):
        if _APPENDS.needs_repair(path):
            repair_tail(path)
            _APPENDS.mark_repaired(path)
        created = not path.exists()
        fd = os.open(path, os.O_APPEND | os.O_CREAT | os.O_WRONLY | getattr(os, "O_BINARY", 0), 0o644)
        try:
            written = os.write(fd, line)
            while written < len(line):  # a short write (disk full, signal) must not leave a torn line behind
                written += os.write(fd, line[written:])
            os.fsync(fd)
        finally:
            os.close(fd)
    if created:
        _fsync_dir(path.parent)


def iter_jsonl(path: Path, *, schema: str | None = None) -> Iterator[tuple[int, dict]]:
    """Yield ``(line_number, record)``. An unparseable final line (a torn append) is skipped; a bad line
    anywhere else is a ``UserError`` naming ``file:line``. With ``schema``, each record is validated."""
    path = Path(path)
    try:
        fh = open(path, "rb")
    except FileNotFoundError:
        return
    with fh:
        pending: tuple[int, bytes] | None = None
        for number, raw in enumerate(fh, 1):
            if pending is not None:
                yield _parse_line(path, *pending, schema=schema, final=False)
            pending = (number, raw) if raw.strip() else None
            if pending is None:
                continue
        if pending is not None:
            parsed = _parse_line(path, *pending, schema=schema, final=True)
            if parsed is not None:
                yield parsed


def _parse_line(path: Path, number: int, raw: bytes, *, schema: str | None, final: bool):
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
    if schema is not None:
        if "schemaVersion" in obj:
            check_version(obj, where=where)
        seen = (schema, hashlib.blake2b(raw, digest_size=16).digest())
        if seen in _VALID_LINES:
            return number, obj
        try:
            validate(schema, obj, where=where)
        except SchemaError:
            if final and not raw.endswith(b"\n"):
                return None
            raise
        if len(_VALID_LINES) > _VALID_LINES_KEPT:
            _VALID_LINES.clear()
        _VALID_LINES.add(seen)
    return number, obj


_VALID_LINES: set[tuple[str, bytes]] = set()
"""Lines (by schema and a digest of their bytes) this process has validated already: a run reads its logs several
times per invocation (reconcile, status figures, cost gate, scorecard), and validating a row is most of a read."""
_VALID_LINES_KEPT = 500_000


# --------------------------------------------------------------------------- the run's two logs


def _question_where(path: Path, row: Mapping[str, Any]) -> str:
    qid = row.get("question_id") if isinstance(row, Mapping) else None
    return f"{path} (question {qid})" if qid else str(path)


def append_item_result(run_dir: Path, row: Mapping[str, Any]) -> None:
    """Validate ``row`` against ``item-result.schema.json`` and append it to ``item-results.jsonl``."""
    append_item_results(run_dir, [row])


def append_item_results(run_dir: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    """``append_item_result`` for several rows with one write and one fsync (items that finished together)."""
    path = Path(run_dir) / RESULTS_FILE
    for row in rows:
        where = _question_where(path, row)
        check_version(row, where=where)
        validate("item-result", row, where=where)
    append_jsonl_many(path, rows)


def mark_completed(run_dir: Path, question_id: str) -> None:
    """Append ``{"question_id", "at"}`` to ``questions_completed.jsonl`` (call only after a judged row)."""
    mark_completed_many(run_dir, [question_id])


def mark_completed_many(run_dir: Path, question_ids: Sequence[str]) -> None:
    """``mark_completed`` for several questions with one write and one fsync."""
    path = Path(run_dir) / COMPLETED_FILE
    records = [{"question_id": qid, "at": utc_now()} for qid in question_ids]
    for record in records:
        validate("completed", record, where=_question_where(path, record))
    append_jsonl_many(path, records)


def _run_dirs(run_dir: Path) -> list[Path]:
    run_dir = Path(run_dir)
    shards = sorted(p for p in run_dir.glob(SHARD_GLOB) if p.is_dir())
    return [run_dir, *shards]


def iter_result_rows(run_dir: Path, *, include_shards: bool = True) -> Iterator[dict]:
    """Every complete row of ``item-results.jsonl`` (then each ``shard-*/``), in append order."""
    dirs = _run_dirs(run_dir) if include_shards else [Path(run_dir)]
    for d in dirs:
        for _, row in iter_jsonl(d / RESULTS_FILE, schema="item-result"):
            yield row


def load_results(run_dir: Path, *, include_shards: bool = True) -> dict[str, dict]:
    """The last row per question_id. Across shard files a later ``finished_at`` wins."""
    latest: dict[str, dict] = {}
    dirs = _run_dirs(run_dir) if include_shards else [Path(run_dir)]
    for d in dirs:
        this_file: dict[str, dict] = {}
        for _, row in iter_jsonl(d / RESULTS_FILE, schema="item-result"):
            this_file[row["question_id"]] = row
        for qid, row in this_file.items():
            old = latest.get(qid)
            if old is None or str(row.get("finished_at", "")) >= str(old.get("finished_at", "")):
                latest[qid] = row
    return latest


def load_completed(run_dir: Path, *, include_shards: bool = True) -> set[str]:
    """Question ids marked completed in ``questions_completed.jsonl`` (and each ``shard-*/``)."""
    dirs = _run_dirs(run_dir) if include_shards else [Path(run_dir)]
    done: set[str] = set()
    for d in dirs:
        for _, rec in iter_jsonl(d / COMPLETED_FILE, schema="completed"):
            done.add(rec["question_id"])
    return done


def _question_id(item: Any) -> str:
    if isinstance(item, Mapping):
        return str(item["question_id"])
    return str(getattr(item, "question_id"))


def filter_pending(items: Iterable[T], done: set[str]) -> list[T]:
    """The items (dicts or Questions) whose id is not in ``done``, in dataset order."""
    return [item for item in items if _question_id(item) not in done]


def reconcile(run_dir: Path) -> dict[str, list[str]]:
    """Make ``questions_completed.jsonl`` agree with ``item-results.jsonl`` in this directory (not shards).

    Call it while holding the ``RunLock``. A judged last row without a mark gets its mark; a mark whose question
    has no row, or whose last row is an error, is dropped (the file is rewritten atomically). Returns
    ``{"marked": [...], "unmarked": [...]}``.
    """
    run_dir = Path(run_dir)
    for name in (RESULTS_FILE, COMPLETED_FILE):
        path = run_dir / name
        with _APPENDS.lock_for(path):
            repair_tail(path)
            _APPENDS.mark_repaired(path)
    rows = load_results(run_dir, include_shards=False)
    marked_records = [rec for _, rec in iter_jsonl(run_dir / COMPLETED_FILE, schema="completed")]
    marked = {rec["question_id"] for rec in marked_records}
    judged = {qid for qid, row in rows.items() if row.get("status") == "judged"}

    unmarked = sorted(marked - judged)
    if unmarked:
        keep = [rec for rec in marked_records if rec["question_id"] in judged]
        blob = "".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in keep)
        path = run_dir / COMPLETED_FILE
        with _APPENDS.lock_for(path):
            write_atomic_bytes(path, blob.encode("utf-8"))
    to_mark = [qid for qid in rows if qid in judged and qid not in marked]  # results-file order
    for qid in to_mark:
        mark_completed(run_dir, qid)
    return {"marked": to_mark, "unmarked": unmarked}


# --------------------------------------------------------------------------- the lock


class RunLock:
    """Exclusive writer lock on ``run_dir/.lock`` (flock on POSIX, msvcrt on Windows), holding the pid.

    The OS drops the lock when the process dies, so a stale ``.lock`` file never blocks a resume. ``shared=True``
    is what shard writers take on the run's root: shards of one run coexist, but not with a writer of the whole
    run (an unsharded resume, drop_qids). Windows has no shared flock: there a shared lock is exclusive.
    """

    _WIN_LOCK_OFFSET = 64  # Windows locks a byte range; keep it clear of the pid text so others can read it

    def __init__(self, run_dir: Path, *, shared: bool = False, name: str = LOCK_FILE, wait: bool = False) -> None:
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / name
        self.shared = shared
        self.wait = wait
        """Block until the lock is free instead of refusing (for short critical sections)."""
        self._fd: int | None = None

    def acquire(self) -> "RunLock":
        ensure_writable_dir(self.run_dir)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            self._os_lock(fd)
        except OSError:
            os.close(fd)
            holder = self.holder_pid()
            who = f"pid {holder}" if holder else "another process (a shard of this run?)"
            raise UserError(
                f"run {self.run_dir} is being written by {who}; wait for it or stop it"
            ) from None
        if self.shared:  # several holders: the pid in the file stays the last exclusive writer's
            self._fd = fd
            return self
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, f"{os.getpid()}\n".encode())
        os.fsync(fd)
        self._fd = fd
        return self

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

    def __enter__(self) -> "RunLock":
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()

    if sys.platform == "win32":  # pragma: no cover - exercised on Windows only

        def _os_lock(self, fd: int) -> None:
            import msvcrt

            os.lseek(fd, self._WIN_LOCK_OFFSET, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_LOCK if self.wait else msvcrt.LK_NBLCK, 1)

        def _os_unlock(self, fd: int) -> None:
            import msvcrt

            os.lseek(fd, self._WIN_LOCK_OFFSET, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

    else:

        def _os_lock(self, fd: int) -> None:
            import fcntl

            mode = fcntl.LOCK_SH if self.shared else fcntl.LOCK_EX
            fcntl.flock(fd, mode if self.wait else mode | fcntl.LOCK_NB)

        def _os_unlock(self, fd: int) -> None:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_UN)


# --------------------------------------------------------------------------- run ids and directories


def new_run_id() -> str:
    return str(uuid.uuid4())


def validate_run_id(run_id: str) -> str:
    """A run id is a plain directory name: ``[A-Za-z0-9._-]{1,80}``, no leading dot, no ``..``."""
    if (
        not isinstance(run_id, str)
        or not _RUN_ID_RE.fullmatch(run_id)
        or run_id.startswith(".")
        or ".." in run_id
    ):
        raise UserError(
            f"invalid run id {run_id!r}",
            fix="use 1-80 letters, digits, '.', '_' or '-', not starting with '.', without '..' or slashes",
        )
    return run_id


def run_dir_for(runs_dir: Path, run_id: str) -> Path:
    """``runs_dir/run_id``, refusing any id whose resolved path would leave ``runs_dir``."""
    validate_run_id(run_id)
    base = Path(runs_dir).resolve()
    path = (base / run_id).resolve()
    if path.parent != base:
        raise UserError(f"run id {run_id!r} resolves outside {base}", fix="use a plain run id")
    return path


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
