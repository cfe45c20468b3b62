"""The project's venv (``.longmemeval-venv``): created, and the toolkit's requirements installed, unless its marker
says that is done for these requirements. Standard library only (this makes the venv)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from lme.core import fileio
from lme.core.errors import UserError
from lme.core.facts import VENV_DIR
from lme.core.setup_steps import Report, Runner, output_tail

REQUIREMENTS = Path(__file__).resolve().parents[2] / "requirements.txt"
VENV_MARKER = ".longmemeval-requirements.sha256"
"""In the venv: the sha256 of the requirements file last installed there."""


def venv_python(venv: Path) -> Path | None:
    """The venv's interpreter in either layout (POSIX ``bin/python``, Windows ``Scripts/python.exe``)."""
    for candidate in (venv / "bin" / "python", venv / "Scripts" / "python.exe"):
        if candidate.exists():
            return candidate
    return None


def ensure_venv(project: Path, report: Report, *, requirements: Path = REQUIREMENTS, index_url: str | None = None,
                offline: bool = False, runner: Runner = subprocess.run) -> None:
    venv = project / VENV_DIR
    marker = venv / VENV_MARKER
    digest = fileio.sha256_file(requirements, follow_symlinks=True)
    python = venv_python(venv)
    if python and marker.exists() and marker.read_text(encoding="utf-8").strip() == digest:
        report.add("venv", f"ready: {venv} is up to date; nothing to do")
        return
    manual = (f"python3 -m venv {venv} && {venv}/bin/python -m pip install -r {requirements}")
    if offline:
        report.add("venv", f"skipped (--offline); later run: {manual}")
        return
    if python is None:
        print(f"creating {venv} ...", file=sys.stderr)
        done = runner([sys.executable, "-m", "venv", str(venv)], capture_output=True, text=True)
        python = venv_python(venv)
        if done.returncode != 0 or python is None:
            raise UserError(f"could not create the venv at {venv}: {output_tail(done.stderr)}",
                            fix="install your python's venv module (e.g. apt install python3-venv) and re-run")
        created = "created"
    else:
        created = "updated"
    command = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q", "-r", str(requirements)]
    if index_url:
        command += ["--index-url", index_url]
    print(f"installing {requirements.name} into {venv} (a few minutes the first time) ...", file=sys.stderr)
    done = runner(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise UserError(f"pip could not install {requirements} into {venv}: {output_tail(done.stderr)}",
                        fix=f"check the network or pass --index-url; by hand: {manual}")
    fileio.write_atomic_text(marker, digest + "\n")
    report.add("venv", f"ready: {created} {venv} and installed {requirements.name}; scripts run with {python}")
