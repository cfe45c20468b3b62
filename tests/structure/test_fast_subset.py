"""``bash tests/run_tests.sh --fast`` leaves out the slow kinds pytest.ini lists and nothing else: what it runs and
what it leaves out are the whole suite (which the full command runs), every slow kind marks some test, a run
that collects no test fails, and it starts two pytest workers per core unless told otherwise.

The command runs as a developer types it (the venv check included), with ``--collect-only`` and a probe plugin that
records what pytest kept and what ``-m`` deselected, with each test's markers."""

from __future__ import annotations

import configparser
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

PROBE = '''
import json, os

deselected = []


def pytest_deselected(items):
    deselected.extend(items)


def pytest_collection_finish(session):
    def markers(item):
        return sorted({m.name for m in item.iter_markers()})

    with open(os.environ["FAST_SUBSET_PROBE"], "w") as out:
        json.dump({"kept": {i.nodeid: markers(i) for i in session.items},
                   "left_out": {i.nodeid: markers(i) for i in deselected}}, out)
'''


def slow_markers() -> set[str]:
    ini = configparser.ConfigParser()
    ini.read(REPO / "pytest.ini")
    lines = [line.strip() for line in ini["pytest"]["markers"].splitlines() if line.strip()]
    return {line.split(":")[0] for line in lines if line.split(":")[1].strip() == "slow"}


WORKERS_PROBE = '''
import json, os


def pytest_cmdline_main(config):
    with open(os.environ["FAST_SUBSET_PROBE"], "w") as out:
        json.dump({"workers": config.getoption("numprocesses")}, out)
    return 0
'''
"""Records the worker count pytest was given, then ends before xdist starts a worker."""


def run_fast(tmp_path: Path, *args: str, workers: str | None = "0") -> subprocess.CompletedProcess:
    (tmp_path / "fast_subset_probe.py").write_text(PROBE)
    (tmp_path / "fast_workers_probe.py").write_text(WORKERS_PROBE)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PYTEST_") and k != "LONGMEMEVAL_TEST_WORKERS"}  # as typed, not from a test worker
    if workers is not None:
        env["LONGMEMEVAL_TEST_WORKERS"] = workers
    env.update({"LONGMEMEVAL_TEST_VENV": sys.prefix,
                "FAST_SUBSET_PROBE": str(tmp_path / "probe.json"),
                "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))})
    return subprocess.run(["bash", str(REPO / "tests" / "run_tests.sh"), "--fast", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=900)


def test_the_fast_set_and_the_slow_set_are_the_whole_suite_and_each_slow_kind_marks_a_test(tmp_path):
    slow = slow_markers()
    assert {"claude_code", "browser", "background", "kill"} <= slow
    done = run_fast(tmp_path, "--collect-only", "-q", "-p", "fast_subset_probe")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    probe = json.loads((tmp_path / "probe.json").read_text())
    kept, left_out = probe["kept"], probe["left_out"]
    assert len(kept) > 1000 and set(kept).isdisjoint(left_out)
    assert [t for t, marks in kept.items() if slow & set(marks)] == []  # nothing slow runs in the fast set
    assert [t for t, marks in left_out.items() if not slow & set(marks)] == []  # nothing else is left out
    assert {m for marks in left_out.values() for m in marks} >= slow  # each slow kind marks some test
    assert "tests/structure/test_fast_subset.py::" + test_a_fast_run_that_collects_no_test_fails.__name__ in kept


def test_a_fast_run_that_collects_no_test_fails(tmp_path):
    done = run_fast(tmp_path, "tests/structure/test_fast_subset.py", "-k", "no_test_has_this_name")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "error: pytest collected no tests" in done.stderr


def test_the_fast_set_starts_two_workers_per_core_unless_told_otherwise(tmp_path):
    cores = int(subprocess.run(["getconf", "_NPROCESSORS_ONLN"], capture_output=True, text=True,
                               check=True).stdout)
    for told, expected in [(None, 2 * cores), ("3", 3)]:
        done = run_fast(tmp_path, "-p", "fast_workers_probe", workers=told)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        assert json.loads((tmp_path / "probe.json").read_text()) == {"workers": expected}, told
