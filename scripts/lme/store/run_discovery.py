"""Runs as places: the writer lock, run ids, the run directory of an id, the project's runs folder, finding runs
(latest, by start, under a folder) and which shard a question belongs to. Part of ``run_store`` (which re-exports
these names)."""

from __future__ import annotations

import os
import re
import uuid
import zlib
from pathlib import Path
from typing import Any, Mapping

from lme.core import command_names, config, fileio
from lme.core.errors import UserError
from lme.core.facts import RUNS_DIR, STATE_DIR
from lme.core.fileio import FileLock
from lme.store.run_layout import LOCK_FILE, META_FILE, SHARD_GLOB, WORKER_FILE, run_dirs
from lme.store.run_meta import has_meta, meta_path, peek_meta

_RUN_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,79}")


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


def project_holding(run_dir: Path) -> Path | None:
    """The project whose state folder holds ``run_dir`` by the store's layout
    (``<project>/.longmemeval-benchmarks/<runs|snapshots>/<id>``); None for a run folder anywhere else."""
    folder = Path(run_dir).resolve().parent
    return folder.parent.parent if folder.parent.name == STATE_DIR else None


def scoring_project(run_dir: Path) -> Path | None:
    """The project a command scores ``run_dir`` with when it names none itself: the one the run records (run-meta
    ``settings.project``) while it exists, else the one holding it (``project_holding``); None: neither. Only the
    commands ask this: a scoring function is given what it needs (``scoring_inputs``), never a place to look."""
    meta = peek_meta(run_dir)
    settings = meta.get("settings") if isinstance(meta, dict) else None
    recorded = settings.get("project") if isinstance(settings, dict) else None
    if isinstance(recorded, str) and recorded and Path(recorded).is_dir():
        return Path(recorded)
    return project_holding(run_dir)


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
