"""The one owner of a run directory: its files, its lock, finding runs, and reading and writing its records.

Every other module goes through here for ``runs/<runId>/``: the run's driver appends ``ResultRow``s and completed
marks and writes ``RunMeta`` and ``Manifest``; the scorecard, comparisons, the loop, run_status and the report read
``RunData``. The file names are in ``run_layout`` (standard library only), re-exported here.

The guarantees (crash safety from ``fileio``):

* ``run-meta.json`` and ``manifest.json`` are replaced atomically; ``item-results.jsonl`` and
  ``questions_completed.jsonl`` only grow, by fsynced appends, and a torn last line is repaired on the first
  append and skipped by readers;
* a row is validated against ``item-result.schema.json`` before it is appended, and every record read is
  checked against its schema (a newer major ``schemaVersion`` is refused);
* ``reconcile`` makes the two logs agree after a crash: a completed mark counts only with a judged row;
* one writing process per run directory, held by an OS lock on ``.lock`` that dies with the process.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import uuid
import zlib
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence, TypeVar

from lme.core.clock import utc_now, utc_stamp
from lme.core import command_names
from lme.core import config
from lme.core import bounded_json
from lme.core import fileio
from lme.core.errors import UserError
from lme.core.facts import RUNS_DIR
from lme.core.fileio import APPENDS, FileLock, json_line, repair_tail, write_atomic_bytes
from lme.core.fileio import ensure_writable_dir, write_atomic_json  # noqa: F401  (re-exported for the run's writers)
from lme.store.run_layout import (  # noqa: F401  (the layout's names, re-exported: callers import them from here)
    BACKUPS_DIR,
    CHARTS_DIR,
    COMPLETED_FILE,
    HISTORY_CHART,
    LOCK_FILE,
    LOG_FILE,
    MANIFEST_FILE,
    META_FILE,
    META_LOCK_FILE,
    METRICS_FILE,
    PER_TYPE_CHART,
    PROMPTS_FILE,
    REPORT_FILE,
    RESERVE_FILE,
    RESULTS_FILE,
    SCORECARD_FILE,
    SHARD_GLOB,
    SNAPSHOT_FILES,
    SNAPSHOT_RECORD,
    WORKER_FILE,
    WORKER_LOCK_FILE,
    compare_page_name,
    run_dirs,
    shard_dir,
    shard_dirs,
    shard_name,
)
from lme.core.run_records import Manifest, ResultRow, RunMeta, item_set
from lme.store import meta_migrations
from lme.core.schemas import check_version, is_valid, validate

_SCHEMA_OF_FILE = {RESULTS_FILE: "item-result", COMPLETED_FILE: "completed"}
_RUN_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,79}")

T = TypeVar("T")


# --------------------------------------------------------------------------- records on disk, schema-checked


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
            check_version(obj, where=where)
        seen = None if raw is None else _line_digest(schema, raw)
        if seen is not None and seen in _VALID_LINES:
            return
        validate(schema, obj, where=where)
        if seen is not None:
            _remember_valid([seen])

    return check


def read_json(path: Path, *, schema: str | None = None) -> Any:
    """Read one JSON file; with ``schema``, check its ``schemaVersion`` major and validate it."""
    return fileio.read_json(path, check=None if schema is None else _checker(schema))


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
        check_version(d, where=where)
        validate("item-result", d, where=where)
    _append(path, data, valid_as="item-result")


def mark_completed(run_dir: Path, question_id: str) -> None:
    """Append ``{"question_id", "at"}`` to ``questions_completed.jsonl`` (call only after a judged row)."""
    mark_completed_many(run_dir, [question_id])


def mark_completed_many(run_dir: Path, question_ids: Sequence[str]) -> None:
    """``mark_completed`` for several questions with one write and one fsync."""
    path = Path(run_dir) / COMPLETED_FILE
    records = [{"question_id": qid, "at": utc_now()} for qid in question_ids]
    for record in records:
        validate("completed", record, where=_question_where(path, record))
    _append(path, records, valid_as="completed")


def _dirs(run_dir: Path, include_shards: bool) -> list[Path]:
    return run_dirs(run_dir) if include_shards else [Path(run_dir)]


def iter_rows(run_dir: Path, *, include_shards: bool = True) -> Iterator[ResultRow]:
    """Every complete row of ``item-results.jsonl`` (then each ``shard-*/``), in append order."""
    for d in _dirs(run_dir, include_shards):
        for _, row in iter_jsonl(d / RESULTS_FILE, schema="item-result"):
            yield ResultRow.from_dict(row)


def load_results(run_dir: Path, *, include_shards: bool = True) -> dict[str, ResultRow]:
    """The last row per question_id. Across shard files a later ``finished_at`` wins."""
    latest: dict[str, ResultRow] = {}
    for d in _dirs(run_dir, include_shards):
        this_file: dict[str, ResultRow] = {}
        for _, raw in iter_jsonl(d / RESULTS_FILE, schema="item-result"):
            row = ResultRow.from_dict(raw)
            this_file[row.question_id] = row
        for qid, row in this_file.items():
            old = latest.get(qid)
            if old is None or row.finished_at >= old.finished_at:
                latest[qid] = row
    return latest


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


# --------------------------------------------------------------------------- run-meta and manifest


def meta_path(directory: Path) -> Path:
    return Path(directory) / META_FILE


def has_meta(directory: Path) -> bool:
    return meta_path(directory).is_file()


def read_meta(directory: Path) -> RunMeta:
    """The directory's run-meta, schema-checked (UserError when missing or invalid), an old run's brought up to
    date by ``meta_migrations``."""
    return _meta_at(meta_path(directory))


def _meta_at(path: Path) -> RunMeta:
    return RunMeta.from_dict(meta_migrations.migrate(read_json(path, schema="run-meta")))


def peek_json(path: Path) -> dict[str, Any] | None:
    """A JSON object without checks, or None when it is missing or unreadable: for status polls that must never
    fail on a file a writer is replacing."""
    data = fileio.peek_json(path)
    return data if isinstance(data, dict) else None


def peek_meta(directory: Path) -> dict[str, Any] | None:
    """The run-meta as plain JSON without checks (``peek_json``)."""
    return peek_json(meta_path(directory))


def write_meta(directory: Path, meta: RunMeta) -> None:
    fileio.write_atomic_json(meta_path(directory), meta.to_dict())


def shard_metas(root: Path) -> list[RunMeta]:
    """Each shard's run-meta (schema-checked), in shard order."""
    return [read_meta(d) for d in shard_dirs(root) if has_meta(d)]


def shard_meta_paths(root: Path) -> list[Path]:
    return [meta_path(d) for d in shard_dirs(root) if has_meta(d)]


def manifest_path(root: Path) -> Path:
    return Path(root) / MANIFEST_FILE


def read_manifest(root: Path) -> Manifest | None:
    """The run's manifest (schema-checked), or None when the directory has none (a snapshot of an old run)."""
    path = manifest_path(root)
    return Manifest.from_dict(read_json(path, schema="manifest")) if path.exists() else None


def write_manifest(root: Path, manifest: Manifest) -> None:
    fileio.write_atomic_json(manifest_path(root), manifest.to_dict())


def stored_settings(root: Path) -> dict[str, Any] | None:
    """The settings the run was started with (the root's run-meta, else the first shard's), or None."""
    for path in [meta_path(root), *shard_meta_paths(root)]:
        if path.is_file():
            return dict(_meta_at(path).settings)
    return None


# --------------------------------------------------------------------------- what a reader sees


@dataclass(frozen=True)
class RunData:
    """What a scorecard, a comparison or the report reads from one run directory (or a snapshot of one)."""

    path: Path
    meta: RunMeta
    manifest: Manifest | None
    rows: Mapping[str, ResultRow]
    """The last row per question id, over the run and its shards."""

    @property
    def run_id(self) -> str:
        return str(self.meta.runId or self.path.name)

    @property
    def judge(self) -> dict[str, Any]:
        """The judge as comparable: provider and model (an old run's alias is its snapshot already:
        ``meta_migrations`` 1). Whether verdicts were official is the scorecard's banner."""
        judge = self.meta.judge
        return {"provider": judge.get("provider"), "model": str(judge.get("model")), "official": judge.get("official")}

    @property
    def dataset_sha256(self) -> str | None:
        return self.meta.dataset_sha256

    @property
    def n_total(self) -> int:
        if self.manifest is not None:
            return self.manifest.n_total
        return len(self.rows)

    def item_types(self, n_total: int | None = None) -> tuple[dict[str, str], int]:
        """``(types in manifest order, unattributed)`` of the strict denominator (``run_records.item_set``)."""
        items = None if self.manifest is None else self.manifest.item_dicts()
        return item_set(items, self.rows, self.n_total if n_total is None else n_total)


def load_run(run_dir: Path) -> RunData:
    """Read run-meta.json, manifest.json (optional) and the merged result rows of a run or snapshot directory."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise UserError(f"run directory {run_dir} does not exist",
                        fix="pass a run dir from .longmemeval-benchmarks/runs/")
    if not has_meta(run_dir):
        raise UserError(f"{meta_path(run_dir)} is missing: {run_dir} is not a run directory",
                        fix="pass a directory written by run_benchmark.py or a snapshot of one")
    return RunData(path=run_dir, meta=read_meta(run_dir), manifest=read_manifest(run_dir), rows=load_results(run_dir))


# --------------------------------------------------------------------------- the lock


class RunLock(FileLock):
    """The exclusive writer lock on ``run_dir/.lock``, holding the pid (``fileio.FileLock``).

    ``shared=True`` is what shard writers take on the run's root: shards of one run coexist, but not with a writer
    of the whole run (an unsharded resume, drop_qids). ``name`` and ``wait`` serve the run's short critical
    sections (``.meta.lock``, ``.worker.lock``).
    """

    def __init__(self, run_dir: Path, *, shared: bool = False, name: str = LOCK_FILE, wait: bool = False) -> None:
        super().__init__(run_dir, name, shared=shared, wait=wait)
        self.run_dir = Path(run_dir)

    def busy_message(self, holder: int | None) -> str:
        who = f"pid {holder}" if holder else "another process (a shard of this run?)"
        return f"run {self.run_dir} is being written by {who}; wait for it or stop it"


def writer_lock_paths(root: Path) -> list[Path]:
    """The run's writer locks: the root's and each shard's."""
    return [d / LOCK_FILE for d in run_dirs(root)]


# --------------------------------------------------------------------------- run ids, directories, discovery


def new_run_id() -> str:
    return str(uuid.uuid4())


def validate_run_id(run_id: str) -> str:
    """A run id is a plain directory name a shell command can name: ``[A-Za-z0-9][A-Za-z0-9._-]{0,79}`` (a letter
    or digit first, so ``-rf`` is no option), no ``..``."""
    if not isinstance(run_id, str) or not _RUN_ID_RE.fullmatch(run_id) or ".." in run_id:
        raise UserError(
            f"invalid run id {ascii(run_id)}",
            fix="use 1-80 letters, digits, '.', '_' or '-', starting with a letter or digit, without '..' or slashes",
        )
    return run_id


def refuse_links(run_dir: Path) -> None:
    """Refuse a run folder that holds a symbolic link anywhere (a file, a shard, charts, backups): before its lock
    is taken or anything is read, so a planted link is one line and nothing changes (``fileio`` refuses each write
    through one as well)."""
    run_dir = Path(run_dir)
    if os.path.islink(run_dir):
        raise fileio.SymlinkRefused(run_dir)
    for folder, dirs, files in os.walk(run_dir):
        for name in (*dirs, *files):
            if os.path.islink(os.path.join(folder, name)):
                raise fileio.SymlinkRefused(os.path.join(folder, name))


def run_dir_for(runs_dir: Path, run_id: str) -> Path:
    """``runs_dir/run_id``, refusing any id whose resolved path would leave ``runs_dir``."""
    validate_run_id(run_id)
    base = Path(runs_dir).resolve()
    path = (base / run_id).resolve()
    if path.parent != base:
        raise UserError(f"run id {run_id!r} resolves outside {base}", fix="use a plain run id")
    return path


def runs_dir(project: Path, *, require_config: bool = False) -> Path:
    """The project's runs directory: config ``runs_dir`` when a config exists, else the default
    (``require_config``: no config is the one-line error naming setup)."""
    if require_config or config.config_path(project).is_file():
        return configured_runs_dir(config.load_config(project), project)
    return Path(project) / RUNS_DIR


def configured_runs_dir(cfg: Mapping[str, Any], project: Path) -> Path:
    """The runs directory a loaded config names (``runs_dir``, relative to the project), else the default: a folder
    the project owns (``config.owned_folder``)."""
    return config.owned_folder(project, cfg.get("runs_dir") or RUNS_DIR, "runs_dir")


def project_run_dir(project: Path, run_id: str) -> Path:
    """``<runs_dir>/<run_id>`` of the project (the id checked)."""
    return run_dir_for(runs_dir(project), run_id)


def existing_run_dir(project: Path, run_id: str) -> Path:
    """The project's run ``run_id``; UserError when there is none."""
    path = Path(runs_dir(project)) / validate_run_id(run_id)
    if not path.is_dir():
        raise UserError(f"no run {run_id!r} at {path}", fix="check --run-id and --project")
    return path


def runs_by_start(project: Path) -> list[Path]:
    """The project's run directories, most recently started first (run-meta ``started_at``, then file time)."""
    base = runs_dir(project)
    candidates = [p for p in base.glob("*") if has_meta(p)] if base.is_dir() else []

    def started(p: Path) -> tuple[str, float]:
        meta = peek_meta(p) or {}
        return str(meta.get("started_at") or ""), meta_path(p).stat().st_mtime

    return sorted(candidates, key=started, reverse=True)


def latest_run(project: Path, *, required: bool = True) -> Path | None:
    """The most recently started run directory."""
    runs = runs_by_start(project)
    if not runs and required:
        raise UserError(f"no runs under {runs_dir(project)}", fix=f"start one: {command_names.step(command_names.RUN)}")
    return runs[0] if runs else None


def is_run(p: Path) -> bool:
    """A run directory: a run-meta, or a background worker (also a shard's) that has not written one yet."""
    return any((d / name).is_file() for d in (p, *p.glob(SHARD_GLOB)) for name in (META_FILE, WORKER_FILE))


def runs_under(base: Path) -> list[Path]:
    """Every run directory directly under ``base``, sorted by name."""
    return sorted(p for p in Path(base).glob("*") if p.is_dir() and is_run(p)) if Path(base).is_dir() else []


def runs_with_meta(base: Path) -> list[Path]:
    """Run directories under ``base`` that have a run-meta (oldest name first)."""
    base = Path(base)
    return sorted(p for p in base.iterdir() if has_meta(p)) if base.is_dir() else []


def in_shard(question_id: str, shard: tuple[int, int] | None) -> bool:
    """Deterministic, process-independent assignment of an item to shard i of n (crc32 of the id)."""
    if shard is None:
        return True
    i, n = shard
    return zlib.crc32(question_id.encode("utf-8")) % n == i - 1


# --------------------------------------------------------------------------- rewriting a run (loop edits)


def _filtered_lines(path: Path, drop: set[str]) -> tuple[bytes, int]:
    """The file's complete lines without those of ``drop`` ids (raw bytes kept), and how many were removed."""
    if not path.exists():
        return b"", 0
    kept: list[bytes] = []
    removed = 0
    for raw in fileio.read_bytes(path).splitlines(keepends=True):
        if not raw.endswith(b"\n") or not raw.strip():
            continue  # a torn tail (no newline) is never a complete row
        try:
            qid = bounded_json.loads(raw, str(path)).get("question_id")
        except (ValueError, AttributeError):
            kept.append(raw)  # not ours to judge: the readers report it
            continue
        if qid in drop:
            removed += 1
        else:
            kept.append(raw)
    return b"".join(kept), removed


def _line(obj: Mapping[str, Any]) -> bytes:
    return (json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def rewrite_run(
    run_dir: Path,
    drop: Iterable[str],
    *,
    add_rows: Sequence[ResultRow] = (),
    add_completed: Sequence[str] = (),
    label: str,
) -> dict:
    """Remove ``drop`` ids from results and marks (all shards), then append ``add_rows`` / ``add_completed``.

    Holds the RunLock of every folder it rewrites (each ``shard-*``, then the run) from before the first read to
    after the last write, so no row a writer appends can be lost; a held lock is a UserError with nothing changed.
    Shards come first: a running shard holds its own folder's lock with its pid (the run's root it holds shared,
    without one), so the refusal names that pid. Backs both files up under
    ``backups/<label>-<UTC time>/`` first; every file is replaced atomically.
    Returns ``{"backup": path, "rows_removed": n, "marks_removed": n}``.
    """
    run_dir = Path(run_dir)
    drop = set(drop)
    backup = run_dir / BACKUPS_DIR / f"{label}-{utc_stamp(precise=True)}"
    rows_removed = marks_removed = 0
    dirs = run_dirs(run_dir)
    with ExitStack() as locks:
        for d in [*dirs[1:], dirs[0]]:
            locks.enter_context(RunLock(d))
        for d in dirs:
            for name in (RESULTS_FILE, COMPLETED_FILE):
                if os.path.lexists(d / name):
                    repair(d / name)
                    target = backup / d.relative_to(run_dir) / name
                    fileio.make_dirs(target.parent)
                    fileio.copy_file(d / name, target)
        for d in dirs:
            for name in (RESULTS_FILE, COMPLETED_FILE):
                blob, removed = _filtered_lines(d / name, drop)
                if d == run_dir and name == RESULTS_FILE:
                    blob += b"".join(_line(r.to_dict()) for r in add_rows)
                if d == run_dir and name == COMPLETED_FILE:
                    blob += b"".join(_line({"question_id": q, "at": utc_now()}) for q in add_completed)
                if removed or (d == run_dir and (add_rows or add_completed)):
                    write_atomic_bytes(d / name, blob)
                if name == RESULTS_FILE:
                    rows_removed += removed
                else:
                    marks_removed += removed
    return {"backup": str(backup), "rows_removed": rows_removed, "marks_removed": marks_removed}


def copy_run(source: Path, dest: Path) -> None:
    """Copy what a snapshot keeps of the run at ``source`` into the existing directory ``dest``: its logs, meta,
    manifest and metrics, and each shard directory whole (its lock left out)."""
    source, dest = Path(source), Path(dest)
    for name in SNAPSHOT_FILES:
        if os.path.lexists(source / name):
            fileio.copy_file(source / name, dest / name)
    for shard in shard_dirs(source):
        fileio.copy_tree(shard, dest / shard.name, skip=(LOCK_FILE, RESERVE_FILE))


def has_rows(directory: Path) -> bool:
    return (Path(directory) / RESULTS_FILE).exists()


# --------------------------------------------------------------------------- the scorecard's files


def write_scorecard_files(run_dir: Path, card: Mapping[str, Any], markdown: str) -> list[Path]:
    """``metrics.json`` and ``scorecard.md``, each replaced atomically; returns their paths."""
    run_dir = Path(run_dir)
    fileio.write_atomic_json(run_dir / METRICS_FILE, card)
    write_atomic_bytes(run_dir / SCORECARD_FILE, markdown.encode("utf-8"))
    return [run_dir / METRICS_FILE, run_dir / SCORECARD_FILE]


def read_metrics(directory: Path) -> dict[str, Any]:
    """A run's (or snapshot's) ``metrics.json`` with integer ``correct`` and ``n_total``; UserError otherwise."""
    path = Path(directory) / METRICS_FILE
    if not os.path.lexists(path):
        raise UserError(f"{path} is missing", fix="run the scorecard for this run first")
    data = fileio.read_json(path)
    if not isinstance(data, dict):
        raise UserError(f"{path} is not a JSON object", fix="re-run the scorecard for this run")
    for key in ("correct", "n_total"):
        if not isinstance(data.get(key), int):
            raise UserError(f"{path} has no integer {key!r}", fix="re-run the scorecard for this run")
    return data


def charts_dir(run_dir: Path) -> Path:
    return Path(run_dir) / CHARTS_DIR
