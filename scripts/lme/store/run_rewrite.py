"""Rewriting a run for the loop (``drop_qids``): the rows and marks of some questions taken out under every lock of
the run, a backup first; and copying a run. Part of ``run_store`` (which re-exports these names)."""

from __future__ import annotations

import os
from contextlib import ExitStack
from pathlib import Path
from typing import Iterable, Sequence

from lme.core import bounded_json, fileio
from lme.core.clock import utc_now, utc_stamp
from lme.core.fileio import json_line, write_atomic_bytes
from lme.core.run_records import ResultRow
from lme.store.run_discovery import RunLock
from lme.store.run_layout import (
    BACKUPS_DIR,
    COMPLETED_FILE,
    LOCK_FILE,
    RESERVE_FILE,
    RESULTS_FILE,
    SNAPSHOT_FILES,
    run_dirs,
    shard_dirs,
)
from lme.store.run_rows import repair


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
                    blob += b"".join(json_line(r.to_dict()) for r in add_rows)
                if d == run_dir and name == COMPLETED_FILE:
                    blob += b"".join(json_line({"question_id": q, "at": utc_now()}) for q in add_completed)
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
