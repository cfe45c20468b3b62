"""A new run on a dataset file scanned before reuses that scan; a changed file, or a refused run, does not."""

from __future__ import annotations

import json
import os

import pytest

from lme.data import dataset
from lme.data import dataset_scans
from lme.cli import run_benchmark
from lme.core.errors import run_main
from run_project import SAMPLE, make_project, run_dir


def run(project, *args):
    return run_main(run_benchmark.main, ["--project", str(project), "--progress", "quiet", "--no-scorecard",
                                         "--offline", *args])


def scans(project):
    folder = project / ".longmemeval-benchmarks" / "cache" / dataset_scans.FOLDER
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


def test_a_second_new_run_on_the_same_file_does_not_scan_it_again(tmp_path, monkeypatch):
    data = tmp_path / "data.json"
    data.write_bytes(SAMPLE.read_bytes())
    project = make_project(tmp_path / "p", dataset=data)
    assert run(project, "--run-id", "first") == 0
    assert len(scans(project)) == 1
    first = json.loads((run_dir(project, "first") / "manifest.json").read_text())

    def no_scan(*_a, **_k):
        raise AssertionError("the dataset was scanned again")

    monkeypatch.setattr(dataset, "scan", no_scan)
    assert run(project, "--run-id", "second") == 0
    assert json.loads((run_dir(project, "second") / "manifest.json").read_text()) == first
    assert json.loads((run_dir(project, "second") / "run-meta.json").read_text())["dataset"]["sha256"] == \
        json.loads((run_dir(project, "first") / "run-meta.json").read_text())["dataset"]["sha256"]

    st = data.stat()
    os.utime(data, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # the file may have changed: scan it
    with pytest.raises(AssertionError, match="scanned again"):
        run_benchmark.main(["--project", str(project), "--progress", "quiet", "--no-scorecard", "--offline",
                            "--run-id", "third"])


def test_a_refused_run_leaves_no_scan_behind(tmp_path):
    project = make_project(tmp_path / "p")
    assert run(project, "--run-id", "loop", "--loop", "--max", "3") == 2  # loop mode refuses a partial N
    assert scans(project) == []
