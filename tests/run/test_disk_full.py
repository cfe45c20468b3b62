"""A run that fills the disk stops with the reason and the resume command recorded, leaves no temporary file, and
resumes to the end once there is space.

A real full disk: the run's folder is a small tmpfs, mounted in a user and mount namespace (``unshare -Urm``) for
the run's process alone; the fake model server answers it through the real SDKs. Where namespaces are not allowed
the test is skipped.
"""

from __future__ import annotations

import base64
import json
import os
import random
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lme.run import status as run_status
from lme.store import run_store
from run_project import REPO, SAMPLE, make_project, register_answers

SCRIPTS = REPO / "scripts"
TMPFS_BYTES = 768 << 10
"""Room for the run's start (manifest, meta, lock and its 256 KiB reserve) and some items' prompts (each item's
haystack is padded to about 60 kB, so ``prompts.jsonl`` grows fast); then the disk is full."""
def _padded_dataset(path: Path) -> Path:
    """The sample with about 60 kB of random text in each haystack (prompts.jsonl stores prompts compressed)."""
    items = json.loads(SAMPLE.read_text())
    for number, item in enumerate(items):
        pad = base64.b64encode(random.Random(number).randbytes(45_000)).decode("ascii")
        item["haystack_sessions"][0][0]["content"] += " " + pad
    path.write_text(json.dumps(items))
    return path


def _namespaces_problem() -> str | None:
    if shutil.which("unshare") is None or sys.platform != "linux":
        return "needs Linux and util-linux's unshare"
    done = subprocess.run(["unshare", "-Urm", "true"], capture_output=True, text=True)
    return None if done.returncode == 0 else f"user namespaces are not allowed here ({done.stderr.strip()})"


def _in_a_small_disk(runs: Path, commands: list[list[str]], keep: Path) -> subprocess.CompletedProcess[str]:
    """Run ``commands`` with ``runs`` a tmpfs of TMPFS_BYTES; the run folders are copied to ``keep`` at the end."""
    lines = [f"mount -t tmpfs -o size={TMPFS_BYTES} tmpfs {shlex.quote(str(runs))} || exit 99"]
    for command in commands:
        lines.append(" ".join(shlex.quote(c) for c in command) + '; echo "exit=$?"')
    lines.append(f"cp -a {shlex.quote(str(runs))}/. {shlex.quote(str(keep))}/")
    return subprocess.run(["unshare", "-Urm", "sh", "-c", "\n".join(lines)], capture_output=True, text=True,
                          timeout=300, env=dict(os.environ))


def test_a_full_disk_stops_the_run_with_the_reason_and_the_resume_command(tmp_path, fake_llm):
    problem = _namespaces_problem()
    if problem:
        pytest.skip(problem)
    dataset = _padded_dataset(tmp_path / "padded.json")
    project = make_project(tmp_path / "project", dataset=dataset, cacheEnabled=False, concurrency=1)
    register_answers(fake_llm, dataset)
    runs = project / ".longmemeval-benchmarks" / "runs"
    runs.mkdir(parents=True)
    keep = tmp_path / "after"
    keep.mkdir()
    run = [sys.executable, str(SCRIPTS / "run_benchmark.py"), "--project", str(project), "--run-id", "full",
           "--progress", "quiet", "--no-scorecard", "--yes"]
    done = _in_a_small_disk(runs, [run], keep)
    assert "exit=99" not in done.stdout, done.stderr
    assert "exit=2" in done.stdout, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "run full stopped: the disk is full: cannot write" in errors[0], done.stderr
    assert "--run-id full" in errors[0] and "Traceback" not in done.stderr

    meta = json.loads((keep / "full" / "run-meta.json").read_text())
    assert meta["status"] == "failed" and meta["error"].startswith("the disk is full: cannot write")
    assert "free some space, then resume:" in meta["error"] and "--run-id full" in meta["error"]
    left = sorted(p.name for p in (keep / "full").iterdir())
    assert not [name for name in left if name.endswith(".tmp") or name == run_store.RESERVE_FILE], left
    rows_before = len((keep / "full" / "item-results.jsonl").read_text().splitlines())

    shutil.rmtree(runs)
    shutil.copytree(keep, runs, symlinks=True)  # space again: the same run resumes to the end
    resumed = subprocess.run(run, capture_output=True, text=True, timeout=300, env=dict(os.environ))
    assert resumed.returncode == 0, resumed.stderr
    meta = json.loads((runs / "full" / "run-meta.json").read_text())
    assert meta["status"] == "completed" and meta["counts"]["pending"] == 0
    assert rows_before < len((runs / "full" / "item-results.jsonl").read_text().splitlines())


def test_run_status_names_the_full_disk_when_a_run_could_not_record_its_end(tmp_path, monkeypatch):
    root = tmp_path / "runs" / "r1"
    root.mkdir(parents=True)
    (root / "run-meta.json").write_text(json.dumps({"status": "running", "runId": "r1"}))

    class Full:
        f_bavail, f_frsize = 3, 4096

    monkeypatch.setattr(run_status.os, "statvfs", lambda path: Full())
    state, _, _, why = run_status.state_of(root)
    assert state == "dead" and "the disk holding it (" in why and "is full (12,288 bytes free)" in why
    assert "killed" not in why
