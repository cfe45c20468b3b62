"""A run directory's ``run-meta.json`` and ``manifest.json``: read (schema-checked; an old run's run-meta brought
up to date by ``migrations``), peeked at by status polls, replaced atomically. Part of ``run_store`` (which
re-exports these names)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lme.core import fileio, migrations
from lme.core.errors import UserError
from lme.core.run_records import Manifest, RunMeta
from lme.store.run_layout import MANIFEST_FILE, META_FILE, shard_dirs
from lme.store.run_rows import read_json


def meta_path(directory: Path) -> Path:
    return Path(directory) / META_FILE


def has_meta(directory: Path) -> bool:
    return meta_path(directory).is_file()


RESTORE_FIX = ("restore it from a copy of the run; never delete it: `run_benchmark.py --run-id` of the run says how "
               "to go on")
"""What to do about a broken run-meta.json. Never "delete it": a resume would then know the run only from today's
config (issue 38); the resume's refusal (``lme.run.meta_recovery``) names the settings the run's rows recorded."""


def read_meta(directory: Path) -> RunMeta:
    """The directory's run-meta, schema-checked (UserError when missing or invalid), an old run's brought up to
    date by its numbered steps (``migrations``)."""
    return _meta_at(meta_path(directory))


def _meta_at(path: Path) -> RunMeta:
    return RunMeta.from_dict(migrations.upgrade("run-meta", read_json(path, schema="run-meta", fix=RESTORE_FIX)))


def meta_fault(directory: Path) -> str | None:
    """Why the directory's run-meta.json is broken (empty, not JSON, not a run-meta: ``read_meta``'s own line,
    without its fix), or None when it is absent or reads. The one "broken" verdict: status and resume ask here."""
    path = meta_path(directory)
    if not (path.exists() or path.is_symlink()):
        return None
    try:
        _meta_at(path)
    except UserError as err:
        text = str(err)
        return text[: -len(f" ({RESTORE_FIX})")] if text.endswith(f"({RESTORE_FIX})") else text
    return None


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


def manifest_path(root: Path) -> Path:
    return Path(root) / MANIFEST_FILE


def read_manifest(root: Path) -> Manifest | None:
    """The run's manifest (schema-checked), or None when the directory has none (a snapshot of an old run)."""
    path = manifest_path(root)
    return Manifest.from_dict(migrations.upgrade("manifest", read_json(path, schema="manifest"))) if path.exists() \
        else None


def write_manifest(root: Path, manifest: Manifest) -> None:
    fileio.write_atomic_json(manifest_path(root), manifest.to_dict())


def stored_settings(root: Path) -> dict[str, Any] | None:
    """The settings the run was started with (the root's run-meta, else the first shard's), or None (none reads:
    ``lme.run.meta_recovery`` decides whether the run may go on)."""
    for directory in [root, *shard_dirs(root)]:
        if has_meta(directory) and meta_fault(directory) is None:  # a broken one: the resume's check says so
            return dict(read_meta(directory).settings)
    return None
