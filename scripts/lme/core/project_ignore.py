"""The user project's ``.gitignore`` entries for what the toolkit writes that must never be committed (never the
config: it is the project's own setting and belongs in its history), and the state folder's own ``.gitignore``.
Standard library only: setup_project.py runs it with the system python.
"""

from __future__ import annotations

import os
from pathlib import Path

from lme.core import fileio
from lme.core.facts import STATE_DIR

HEADER = "# longmemeval-benchmarker: large or machine-specific, never committed (the config is)"
ENTRIES = (
    ".longmemeval-venv/",
    ".longmemeval-benchmarks/cache/",
    ".longmemeval-benchmarks/runs/",
)


def _present(lines: list[str]) -> set[str]:
    return {line.strip().rstrip("/").lstrip("/") for line in lines if line.strip() and not line.startswith("#")}


def missing_entries(project: Path) -> list[str]:
    """The entries ``ensure_gitignore`` would add to ``project/.gitignore``."""
    path = Path(project) / ".gitignore"
    lines = _read(path).splitlines()
    have = _present(lines)
    return [entry for entry in ENTRIES if entry.rstrip("/") not in have]


def ensure_gitignore(project: Path) -> list[str]:
    """Append the missing entries to ``project/.gitignore`` (created if absent); returns the lines added. A line
    already there (exactly, or without the trailing slash) is left alone: re-running setup changes nothing."""
    path = Path(project) / ".gitignore"
    added = missing_entries(project)
    if not added:
        return []
    old = _read(path)
    block = ([""] if old.strip() else []) + ([HEADER] if HEADER not in old else []) + added
    text = old + ("" if not old or old.endswith("\n") else "\n") + "\n".join(block) + "\n"
    fileio.write_atomic_text(path, text)
    return added


def _read(path: Path) -> str:
    try:
        return fileio.read_text(path, max_bytes=1 << 20)
    except FileNotFoundError:
        return ""


def write_state_gitignore(project: Path) -> None:
    """``.longmemeval-benchmarks/.gitignore``, written once (one already there, the user's or ours, is left alone)."""
    path = Path(project) / STATE_DIR / ".gitignore"
    if not os.path.lexists(path):
        fileio.make_dirs(path.parent)
        fileio.write_atomic_text(path, "# large or machine-specific: never commit\ndata/\ncache/\nLongMemEval/\n")
