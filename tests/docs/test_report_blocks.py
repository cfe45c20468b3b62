"""The report command's and skill's blocks as written: which run they score or compare, and how they fail.

(The scorecard's content is tested in tests/report/test_scorecard.py; every block also runs in test_markdown_blocks.py.)
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lme.store import run_store
from lme.core import command_names
from command_env import clean_env
from loop_testing import item_ids, write_run

REPO = Path(__file__).resolve().parents[2]
DOCS = {"command": REPO / "commands" / "longmemeval-report.md", "skill": REPO / "skills" / "report" / "SKILL.md"}


def _block(doc: Path, script: str, arguments: str = "") -> str:
    blocks = re.findall(r"```bash\n(.*?)```", doc.read_text(encoding="utf-8"), flags=re.S)
    (block,) = [b for b in blocks if f" {script}" in b]
    return block.replace("$ARGUMENTS", arguments)


def _project(tmp_path: Path, *, venv: bool = True) -> Path:
    project = tmp_path / "proj"
    (project / ".longmemeval-benchmarks" / "runs").mkdir(parents=True)
    if venv:
        shim = project / ".longmemeval-venv" / "bin" / "python"
        shim.parent.mkdir(parents=True)
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
        shim.chmod(0o755)
    return project


def _run(project: Path, run_id: str, started_at: str, labels: dict[str, bool]) -> Path:
    run_dir = write_run(project, run_id, item_ids(len(labels)), labels)
    meta = run_store.read_json(run_dir / "run-meta.json")
    meta["started_at"] = started_at
    run_store.write_atomic_json(run_dir / "run-meta.json", meta)
    return run_dir


def _bash(script: str, project: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", script], cwd=project, capture_output=True, text=True, timeout=120,
                          env=clean_env(PATH="/usr/bin:/bin", HOME=str(tmp_path), CLAUDE_PLUGIN_ROOT=str(REPO)))


@pytest.mark.parametrize("doc", sorted(DOCS))
def test_a_broken_config_fails_the_block_with_the_error_only(tmp_path, doc):
    project = _project(tmp_path)
    (project / ".longmemeval-benchmarks" / "config.json").write_text("{broken")
    done = _bash(_block(DOCS[doc], "scorecard.py"), project, tmp_path)
    assert done.returncode == 2
    assert "config.json" in done.stderr and done.stderr.count("error:") == 1


@pytest.mark.parametrize("doc", sorted(DOCS))
def test_with_no_run_yet_the_block_says_to_start_one(tmp_path, doc):
    done = _bash(_block(DOCS[doc], "scorecard.py"), _project(tmp_path), tmp_path)
    assert done.returncode == 2 and "no runs under" in done.stderr and command_names.RUN in done.stderr


@pytest.mark.parametrize("doc", sorted(DOCS))
def test_without_the_venv_the_block_says_to_run_setup(tmp_path, doc):
    project = _project(tmp_path, venv=False)
    done = _bash(_block(DOCS[doc], "scorecard.py"), project, tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == (f"error: .longmemeval-venv not found in {project}: run setup first: "
                                   f"{command_names.step(command_names.SETUP, env={})}")


def test_the_command_scores_the_latest_started_run_or_the_one_named_by_run_id(tmp_path):
    project = _project(tmp_path)
    _run(project, "first", "2026-11-28T09:00:00Z", {q: True for q in item_ids(6)})
    _run(project, "second", "2026-11-29T09:00:00Z", {q: False for q in item_ids(6)})
    latest = _bash(_block(DOCS["command"], "scorecard.py"), project, tmp_path)
    assert latest.returncode == 0, latest.stderr
    assert "run `second`" in latest.stdout
    named = _bash(_block(DOCS["command"], "scorecard.py", "--run-id first"), project, tmp_path)
    assert named.returncode == 0, named.stderr
    assert "run `first`" in named.stdout and "run `second`" not in named.stdout
    bare = _bash(_block(DOCS["command"], "scorecard.py", "first"), project, tmp_path)  # "report first" in chat
    assert bare.returncode == 0, bare.stderr
    assert "run `first`" in bare.stdout and "run `second`" not in bare.stdout


def test_the_skills_comparison_orders_runs_by_start_not_by_folder_time(tmp_path):
    project = _project(tmp_path)
    types = item_ids(6)
    before = _run(project, "before", "2026-11-28T09:00:00Z", {q: i < 3 for i, q in enumerate(types)})
    _run(project, "after", "2026-11-29T09:00:00Z", {q: True for q in types})
    # re-scoring the older run touches its folder last: a folder-time rule would swap the two
    later = time.time() + 60
    os.utime(before, (later, later))
    os.utime(before / "run-meta.json", (later - 120, later - 120))
    done = _bash(_block(DOCS["skill"], "compare_runs.py"), project, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "# Comparison: before (before) -> after (after)" in done.stdout
    assert "Fixes (wrong -> right): 3; regressions (right -> wrong): 0; net +3" in done.stdout


def test_the_skills_comparison_with_one_run_says_two_are_needed(tmp_path):
    project = _project(tmp_path)
    _run(project, "only", "2026-11-29T09:00:00Z", {q: True for q in item_ids(3)})
    done = _bash(_block(DOCS["skill"], "compare_runs.py"), project, tmp_path)
    assert (done.returncode, done.stdout.strip()) == (0, "need two runs to compare")
    assert json.loads((project / ".longmemeval-benchmarks/runs/only/run-meta.json").read_text())["runId"] == "only"
