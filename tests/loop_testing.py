"""Helpers for the iteration-loop tests: a real git project with a bare remote, and runs written to disk.

Runs are written through run_store (the same validated appends the driver uses; ``factories``) with invented
items; the metrics.json beside them comes from the real scorecard.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Mapping

import factories
from lme.core import fileio
from lme.store import run_store
from lme.core.clock import utc_now
from lme.core.facts import QUESTION_TYPES
from factories import scorecard_of

LOOP_BRANCH = "longmemeval-iter"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Loop Test",
    "GIT_AUTHOR_EMAIL": "loop@test.invalid",
    "GIT_COMMITTER_NAME": "Loop Test",
    "GIT_COMMITTER_EMAIL": "loop@test.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(args: list[str], cwd: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **GIT_ENV}
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=check, env=env)


def make_loop_project(
    root: Path, *, branch: str = LOOP_BRANCH, remote: bool = True, venv: bool = True, loop: Mapping | None = None
) -> Path:
    """``root/project``: a git repo on ``branch`` with one commit, pushed to the bare ``root/remote.git``."""
    project = root / "project"
    project.mkdir(parents=True)
    git(["init", "-q", "-b", "main"], project)
    for key, value in (("user.name", "Loop Test"), ("user.email", "loop@test.invalid"), ("commit.gpgsign", "false")):
        git(["config", key, value], project)
    (project / "README.md").write_text("project under test\n")
    (project / ".gitignore").write_text(".longmemeval-venv/\n.longmemeval-benchmarks/runs/\n.longmemeval-benchmarks/cache/\n")
    if loop is not None:
        cfg_dir = project / ".longmemeval-benchmarks"
        cfg_dir.mkdir()
        (cfg_dir / "config.json").write_text(json.dumps({"loop": dict(loop)}))
    git(["add", "README.md", ".gitignore"], project)
    git(["commit", "-q", "-m", "initial"], project)
    if branch != "main":
        git(["switch", "-q", "-c", branch], project)
    if remote:
        bare = root / "remote.git"
        git(["init", "-q", "--bare", str(bare)], root)
        git(["remote", "add", "origin", str(bare)], project)
        git(["push", "-q", "origin", f"HEAD:refs/heads/{branch}"], project)
    if venv:
        bin_dir = project / ".longmemeval-venv" / "bin"
        bin_dir.mkdir(parents=True)
        # a wrapper, not a symlink: a symlinked venv python would lose the venv's site-packages
        wrapper = bin_dir / "python"
        wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
        wrapper.chmod(0o755)
    return project


def item_ids(n: int) -> dict[str, str]:
    """``n`` invented question ids -> types, cycling through the six types; every tenth is an abstention item."""
    out = {}
    for i in range(n):
        qtype = QUESTION_TYPES[i % len(QUESTION_TYPES)]
        qid = f"q{i:03d}" + ("_abs" if i % 10 == 9 and qtype not in ("single-session-preference", "single-session-assistant") else "")
        out[qid] = qtype
    return out


def make_row(qid: str, qtype: str, label: bool | None, *, hypothesis: str | None = None, **extra) -> dict:
    """A schema-valid result row (``factories.result_row``): judged with ``label``, or an error row when ``label``
    is None (``kind``: its error kind, default rate_limit)."""
    if hypothesis is None:
        hypothesis = f"answer for {qid}" if label is not None else None
    error = {"kind": extra.pop("kind", "rate_limit"), "message": "429", "attempts": 8}
    return factories.result_row(qid, qtype, label, question=f"invented question {qid}?", answer=f"gold {qid}",
                                hypothesis=hypothesis, error=error, finished_at=utc_now(),
                                without=("latencyMs", "tokensIn", "tokensOut", "target", "retrieval", "cost", "calls"),
                                **extra)


def run_meta(run_id: str, n_total: int, status: str = "completed") -> dict:
    return factories.run_meta(run_id, n_total, status=status, sha="ab" * 32,
                              target={"name": "memory-ref", "provider": "anthropic", "model": "stand-in"},
                              started_at="2026-11-29T10:00:00Z", finished_at="2026-11-29T11:00:00Z")


def write_scorecard_metrics(run_dir: Path) -> dict:
    """metrics.json for the run, built by the real scorecard."""

    record = scorecard_of(run_store.load_run(run_dir))
    card = record.to_dict()
    fileio.write_atomic_json(run_dir / run_store.METRICS_FILE, card)
    return card


def measure_noise_floor(project: Path, run_id: str, rate: float = 0.0) -> dict:
    """A measured noise floor for the run's stack (every type flipping at ``rate``), as noise_floor.finish writes."""
    from lme.loop import noise_floor

    meta = run_store.read_meta(project / ".longmemeval-benchmarks" / "runs" / run_id)
    stack = noise_floor.stack_of(meta)
    n = 100
    flips = round(rate * n)
    bucket = {"n": n, "flips": flips, "generation_flips": flips, "judge_flips": 0, "rate": rate,
              "generation_rate": rate, "judge_rate": 0.0, "ids": []}
    record = {"status": "measured", "run_id": run_id, "stack": stack, "stack_key": noise_floor.stack_key(stack),
              "sample": [], "before": {}, "per_type": {}, "overall": dict(bucket), "measured_at": utc_now()}
    fileio.write_atomic_json(project / noise_floor.NOISE_FLOOR_FILE, record)
    return record


def write_run(
    project: Path,
    run_id: str,
    types: Mapping[str, str],
    labels: Mapping[str, bool | None],
    *,
    rows: Mapping[str, Mapping] | None = None,
) -> Path:
    """Append one row per labelled id (marks for judged ones) to run ``run_id``; rewrite manifest/meta/metrics.

    Appending to an existing run works like a resume: later rows win.
    """
    run_dir = project / ".longmemeval-benchmarks" / "runs" / run_id
    rows_now = [dict(rows[qid]) if rows and qid in rows else make_row(qid, types[qid], label)
                for qid, label in labels.items()]
    factories.write_run(run_dir, types, rows_now, meta=run_meta(run_id, len(types)))
    write_scorecard_metrics(run_dir)
    return run_dir
