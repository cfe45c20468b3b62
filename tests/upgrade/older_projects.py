"""Projects made by older versions of the product (``tests/fixtures/upgrade/<version>-<sha>/``), unpacked at a new
path for today's version to carry on: the project's files, its git history cloned from a bare remote made from the
bundle, and a venv that is a wrapper around the tests' python (as ``loop_testing.make_loop_project`` makes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "upgrade"
SCRIPTS = REPO / "scripts"
GIT_ENV = {"GIT_AUTHOR_NAME": "Upgrade Test", "GIT_AUTHOR_EMAIL": "upgrade@test.invalid",
           "GIT_COMMITTER_NAME": "Upgrade Test", "GIT_COMMITTER_EMAIL": "upgrade@test.invalid",
           "GIT_CONFIG_NOSYSTEM": "1"}


def fixture_dirs() -> list[Path]:
    return sorted(p.parent for p in FIXTURES.glob("*/fixture.json"))


@dataclass(frozen=True)
class OldProject:
    """An unpacked fixture: ``path`` is where it lives now, ``record`` is its fixture.json (the old path in it)."""

    path: Path
    remote: Path
    record: dict[str, Any]

    def run_dir(self, run_id: str) -> Path:
        return self.path / ".longmemeval-benchmarks" / "runs" / run_id

    def script(self, name: str, *args: str, env: dict[str, str] | None = None,
               timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """``python scripts/<name> ...`` from the project's root with the project's venv python, as a user runs it."""
        python = self.path / ".longmemeval-venv" / "bin" / "python"
        return subprocess.run([str(python), str(SCRIPTS / name), *args], cwd=self.path, capture_output=True,
                              text=True, env=env or dict(os.environ), timeout=timeout)


def git(args: list[str], cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True,
                          env={**os.environ, **GIT_ENV}).stdout


def unpack(fixture: Path, dest: Path) -> OldProject:
    """The fixture's project at ``dest/project`` (a path the old version never saw), its remote at ``dest/remote.git``."""
    record = json.loads((fixture / "fixture.json").read_text())
    dest.mkdir(parents=True, exist_ok=True)
    remote = dest / "remote.git"
    git(["clone", "-q", "--bare", str(fixture / "project.bundle"), str(remote)], dest)
    git(["clone", "-q", "-b", record["head_branch"], str(remote), "project"], dest)
    project = dest / "project"
    for key, value in (("user.name", "Upgrade Test"), ("user.email", "upgrade@test.invalid"),
                       ("commit.gpgsign", "false")):
        git(["config", key, value], project)
    with tarfile.open(fixture / "project.tar.gz") as tar:
        tar.extractall(dest, filter="data")
    bin_dir = project / ".longmemeval-venv" / "bin"
    bin_dir.mkdir(parents=True)
    wrapper = bin_dir / "python"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    wrapper.chmod(0o755)
    assert not Path(record["old_project_path"]).exists(), "the old machine's path exists here: the move is not tested"
    return OldProject(project, remote, record)


def rows(run_dir: Path) -> list[bytes]:
    return (run_dir / "item-results.jsonl").read_bytes().splitlines(keepends=True)
