"""The files scoring leaves in a run directory: ``metrics.json`` and ``scorecard.md`` (replaced atomically), read
back checked, and the charts folder. Part of ``run_store`` (which re-exports these names)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

from lme.core import fileio
from lme.core.errors import UserError
from lme.core.fileio import write_atomic_bytes
from lme.store.run_layout import CHARTS_DIR, METRICS_FILE, SCORECARD_FILE


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
