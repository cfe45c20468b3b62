"""The project folder as setup writes into it: checked before anything is written (writable; no file where setup
needs a folder, no folder where it needs a file, no symbolic link on the way), paths named relative to it, JSON
written into it. Standard library only."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from lme.core import fileio
from lme.core.errors import UserError
from lme.core.facts import CONFIG_FILE, DATA_DIR, STATE_DIR, VENV_DIR


def check_project_writable(project: Path) -> None:
    probe = project
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        raise UserError(f"project path {project} is not a directory (its ancestor {probe} is a file)",
                        fix="pass --project a directory")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise UserError(f"cannot write to project directory {probe}", fix="pass --project a directory you own")


def check_state_paths(project: Path) -> None:
    """Refuse, before anything is written, a file where setup needs a folder (or a folder where it needs a file)."""
    folders = (project / STATE_DIR, project / DATA_DIR, project / VENV_DIR)
    files = (project / STATE_DIR / CONFIG_FILE, project / STATE_DIR / ".gitignore")
    for folder in folders:
        if folder.exists() and not folder.is_dir():
            raise UserError(f"{folder} is a file, but setup needs a folder there",
                            fix="move or delete that file and re-run")
    for file in files:
        if file.is_dir():
            raise UserError(f"{file} is a folder, but setup needs a file there",
                            fix="move or delete that folder and re-run")
    for path in (*folders[:2], *files, project / ".gitignore", project / VENV_DIR):
        fileio.check_no_symlinks(path, include_self=True)  # setup writes there: never through a link


def project_relative(project: Path, path: Path) -> str:
    """Config paths are relative to the project root when the file lives inside it."""
    try:
        return path.resolve().relative_to(project.resolve()).as_posix()
    except ValueError:
        return str(path.resolve())


def write_json(path: Path, obj: Any) -> None:
    """``fileio.write_atomic_json`` (a failure names the file, not its temporary name), its folder made first."""
    fileio.make_dirs(path.parent)
    fileio.write_atomic_json(path, obj)
