"""A run directory's records on disk, schema-checked, and its two logs: ``item-results.jsonl`` (one
``ResultRow`` per line, the last per question wins) and ``questions_completed.jsonl`` (a mark per judged row),
fsynced appends, torn tails repaired, and ``reconcile`` making the two agree after a crash. Part of ``run_store``
(which re-exports these names: callers import them from there)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence, TypeVar

from lme.core import fileio, migrations
from lme.core.clock import utc_now
from lme.core.fileio import APPENDS, json_line, repair_tail, write_atomic_bytes
from lme.core.facts import SCHEMA_VERSIONS
from lme.core.run_records import ResultRow
from lme.core.schemas import check_version, is_valid, validate, validate_versioned
from lme.store.run_layout import COMPLETED_FILE, RESULTS_FILE, run_dirs

_SCHEMA_OF_FILE = {RESULTS_FILE: "item-result", COMPLETED_FILE: "completed"}
T = TypeVar("T")


_VALID_LINES: set[tuple[str, bytes]] = set()
"""Lines (by schema and a digest of their bytes) this process has validated already: a run reads its logs several
times per invocation (reconcile, status figures, cost gate, scorecard), and validating a row is most of a read."""
_VALID_LINES_KEPT = 500_000


def _line_digest(schema: str, raw: bytes) -> tuple[str, bytes]:
    return schema, hashlib.blake2b(raw, digest_size=16).digest()


def _remember_valid(seen: Iterable[tuple[str, bytes]]) -> None:
    for key in seen:
        if len(_VALID_LINES) > _VALID_LINES_KEPT:
            _VALID_LINES.clear()
        _VALID_LINES.add(key)


def _checker(schema: str):
    def check(obj: Any, where: str, raw: bytes | None = None) -> None:
        if isinstance(obj, dict) and "schemaVersion" in obj:
            check_version(obj, where=where, kind=schema)
        seen = None if raw is None else _line_digest(schema, raw)
        if seen is not None and seen in _VALID_LINES:
            return
        validate_versioned(schema, obj, where=where)
        if seen is not None:
            _remember_valid([seen])

    return check


def read_json(path: Path, *, schema: str | None = None, fix: str = "fix or delete the file") -> Any:
    """Read one JSON file; with ``schema``, check its ``schemaVersion`` major and validate it. ``fix``: what to do
    about a file that is not JSON."""
    return fileio.read_json(path, check=None if schema is None else _checker(schema), fix=fix)


def iter_jsonl(path: Path, *, schema: str | None = None) -> Iterator[tuple[int, dict]]:
    """``fileio.iter_jsonl`` with each record validated against ``schema``."""
    return fileio.iter_jsonl(path, check=None if schema is None else _checker(schema))


def repair(path: Path) -> str | None:
    """Repair a torn tail of one of the run's JSONL files (a last line is complete when its schema accepts it)."""
    schema = _SCHEMA_OF_FILE.get(Path(path).name)
    return repair_tail(path, None if schema is None else (lambda obj: is_valid(schema, obj)))


def _append(path: Path, records: Sequence[Mapping[str, Any]], *, valid_as: str | None = None) -> None:
    """Append ``records`` with one ``os.write`` and one fsync (a crash leaves at most the last line torn).
    ``valid_as``: the schema the caller validated them against; reading these very lines back in this process
    (the scorecard after a run) then skips validating them again."""
    if records:
        lines = [json_line(r) for r in records]
        fileio.append_bytes(path, b"".join(lines), repair=repair)
        if valid_as is not None:
            _remember_valid(_line_digest(valid_as, line) for line in lines)


def _question_where(path: Path, row: Mapping[str, Any]) -> str:
    qid = row.get("question_id") if isinstance(row, Mapping) else None
    return f"{path} (question {qid})" if qid else str(path)


# --------------------------------------------------------------------------- the run's two logs


def append_row(run_dir: Path, row: ResultRow) -> None:
    """Validate ``row`` against ``item-result.schema.json`` and append it to ``item-results.jsonl``."""
    append_rows(run_dir, [row])


def append_rows(run_dir: Path, rows: Sequence[ResultRow]) -> None:
    """``append_row`` for several rows with one write and one fsync (items that finished together); every row is
    validated before anything is written."""
    path = Path(run_dir) / RESULTS_FILE
    data = [row.to_dict() for row in rows]
    for d in data:
        where = _question_where(path, d)
        check_version(d, where=where, kind="item-result")
        validate("item-result", d, where=where)
    _append(path, data, valid_as="item-result")


def mark_completed(run_dir: Path, question_id: str) -> None:
    """Append ``{"question_id", "at"}`` to ``questions_completed.jsonl`` (call only after a judged row)."""
    mark_completed_many(run_dir, [question_id])


def mark_completed_many(run_dir: Path, question_ids: Sequence[str]) -> None:
    """``mark_completed`` for several questions with one write and one fsync."""
    path = Path(run_dir) / COMPLETED_FILE
    records = [{"schemaVersion": SCHEMA_VERSIONS["completed"], "question_id": qid, "at": utc_now()}
               for qid in question_ids]
    for record in records:
        validate("completed", record, where=_question_where(path, record))
    _append(path, records, valid_as="completed")


def row_of(line: Mapping[str, Any]) -> ResultRow:
    """One schema-checked line of ``item-results.jsonl`` as a ``ResultRow``, an older row brought up to today's
    shape first (``migrations``): the one place rows are read."""
    return ResultRow.from_dict(migrations.upgrade("item-result", line))


def _dirs(run_dir: Path, include_shards: bool) -> list[Path]:
    return run_dirs(run_dir) if include_shards else [Path(run_dir)]


def iter_rows(run_dir: Path, *, include_shards: bool = True) -> Iterator[ResultRow]:
    """Every complete row of ``item-results.jsonl`` (then each ``shard-*/``), in append order."""
    for d in _dirs(run_dir, include_shards):
        for _, row in iter_jsonl(d / RESULTS_FILE, schema="item-result"):
            yield row_of(row)


def load_results(run_dir: Path, *, include_shards: bool = True) -> dict[str, ResultRow]:
    """The last row per question_id. Across shard files a later ``finished_at`` wins."""
    return load_rows(run_dir, include_shards=include_shards)[0]


def load_rows(run_dir: Path, *, include_shards: bool = True) -> tuple[dict[str, ResultRow], list[ResultRow]]:
    """``load_results`` and every row the last ones replaced (the earlier attempts, in no particular order): the
    two together are every row of the run, what its spending adds up."""
    latest: dict[str, ResultRow] = {}
    earlier: list[ResultRow] = []
    for d in _dirs(run_dir, include_shards):
        this_file: dict[str, ResultRow] = {}
        for _, raw in iter_jsonl(d / RESULTS_FILE, schema="item-result"):
            row = row_of(raw)
            replaced = this_file.get(row.question_id)
            if replaced is not None:
                earlier.append(replaced)
            this_file[row.question_id] = row
        for qid, row in this_file.items():
            old = latest.get(qid)
            if old is None or row.finished_at >= old.finished_at:
                latest[qid] = row
                if old is not None:
                    earlier.append(old)
            else:
                earlier.append(row)
    return latest, earlier


def load_completed(run_dir: Path, *, include_shards: bool = True) -> set[str]:
    """Question ids marked completed in ``questions_completed.jsonl`` (and each ``shard-*/``)."""
    done: set[str] = set()
    for d in _dirs(run_dir, include_shards):
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
        with APPENDS.lock_for(path):
            repair(path)
            APPENDS.mark_repaired(path)
    rows = load_results(run_dir, include_shards=False)
    marked_records = [rec for _, rec in iter_jsonl(run_dir / COMPLETED_FILE, schema="completed")]
    marked = {rec["question_id"] for rec in marked_records}
    judged = {qid for qid, row in rows.items() if row.judged}

    unmarked = sorted(marked - judged)
    if unmarked:
        keep = [rec for rec in marked_records if rec["question_id"] in judged]
        blob = b"".join(json_line(r) for r in keep)
        path = run_dir / COMPLETED_FILE
        with APPENDS.lock_for(path):
            write_atomic_bytes(path, blob)
    to_mark = [qid for qid in rows if qid in judged and qid not in marked]  # results-file order
    for qid in to_mark:
        mark_completed(run_dir, qid)
    return {"marked": to_mark, "unmarked": unmarked}
