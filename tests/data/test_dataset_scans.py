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


def _count_passes(monkeypatch) -> list[str]:
    """Every pass over a dataset file from here on, by what made it (``scan`` or ``iter_items``)."""
    passes: list[str] = []
    real_iter = dataset._ItemStream.__iter__

    def counted(self):
        passes.append(str(self.path))
        return real_iter(self)

    monkeypatch.setattr(dataset._ItemStream, "__iter__", counted)
    return passes


@pytest.mark.parametrize("stored_scan", [False, True])
def test_the_cost_gate_costs_no_pass_of_its_own(tmp_path, monkeypatch, fake_llm, stored_scan):
    """A paid run without --yes: the gate's estimate rides on the new run's scan (or, with the scan stored, is the
    one pass before the run), then the run streams its items: two passes at most, as an approved run makes."""
    data = tmp_path / "data.json"
    data.write_bytes(SAMPLE.read_bytes())
    project = make_project(tmp_path / "p", dataset=data, confirmCostUsd=1000, cacheEnabled=False)
    if stored_scan:
        assert run(project, "--run-id", "first", "--max", "1") == 0
    passes = _count_passes(monkeypatch)
    args = ["--project", str(project), "--progress", "quiet", "--no-scorecard", "--run-id", "gated", "--max", "3"]
    assert run_main(run_benchmark.main, args) == 0
    assert len(passes) == 2
    gated = json.loads((run_dir(project, "gated") / "manifest.json").read_text())
    assert len(gated["items"]) == 3 and len(fake_llm.requests) == 6  # the run covers its --max 3 items


def test_the_gate_shows_the_same_estimate_whether_or_not_the_scan_was_stored(tmp_path, capsys, fake_llm):
    data = tmp_path / "data.json"
    data.write_bytes(SAMPLE.read_bytes())
    project = make_project(tmp_path / "p", dataset=data, confirmCostUsd=0.0)
    args = ["--project", str(project), "--progress", "quiet", "--no-scorecard", "--max", "5"]
    assert run_main(run_benchmark.main, args) == 5
    on_the_scan = capsys.readouterr().out
    assert run(project, "--run-id", "first", "--max", "1") == 0  # stores the scan
    capsys.readouterr()
    assert run_main(run_benchmark.main, args) == 5
    assert capsys.readouterr().out == on_the_scan and "estimate: 5 items" in on_the_scan
    assert [p.name for p in (project / ".longmemeval-benchmarks" / "runs").iterdir()] == ["first"]


def test_the_scan_cache_key_covers_code_that_exists():
    """A renamed module would silently drop out of the key (a missing file hashes as "-"): every file it names is there."""
    missing = [str(p) for p in dataset_scans.SCANNER if not p.is_file()]
    assert not missing, f"dataset_scans.SCANNER names files that do not exist: {missing}"
