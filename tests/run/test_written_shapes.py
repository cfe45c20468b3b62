"""The files a run writes keep their shape: key order, which keys are left out, int or float, null or not.

The shapes of a fake-server run's files (item rows, run-meta, manifest, metrics.json), a memory-ref run's rows, a
dry run's estimate and a comparison are held in ``tests/fixtures/written_shapes/``: a change to how any record is
turned into JSON that moves a key, drops one or turns an int into a float fails here. Values that differ from one
run to the next (times, hashes, paths, ports) are replaced by their kind. ``LME_UPDATE_SHAPES=1`` rewrites the
fixtures (only when a file's shape is meant to change: say so in SPEC and the CHANGELOG).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from lme.cli import compare_runs, run_benchmark, scorecard
from run_project import make_project, register_answers, run_dir

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "written_shapes"
_PORT = re.compile(r"127\.0\.0\.1:\d+")


def shape(value: Any) -> Any:
    """``value`` with its structure and kinds kept and its run-to-run values replaced."""
    if isinstance(value, dict):
        return [[_PORT.sub("127.0.0.1:PORT", str(k)), shape(v)] for k, v in value.items()]
    if isinstance(value, list):
        return [shape(v) for v in value]
    if value is None:
        return value
    return type(value).__name__


def check(name: str, value: Any) -> None:
    path = FIXTURES / f"{name}.json"
    got = shape(value)
    if os.environ.get("LME_UPDATE_SHAPES") == "1":
        path.write_text(json.dumps(got, indent=1) + "\n")
    assert got == json.loads(path.read_text()), f"{name}: the written shape changed"


def lines(path: Path) -> list[Any]:
    """The rows of a JSONL file by question id (the workers finish in any order)."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return sorted(rows, key=lambda r: r["question_id"])


def test_the_files_a_run_writes_keep_their_shape(tmp_path, fake_llm, capsys):
    project = make_project(tmp_path / "p")
    register_answers(fake_llm, correct_share=0.5)
    base = ["--project", str(project), "--progress", "quiet", "--no-scorecard"]
    assert run_benchmark.main([*base, "--run-id", "a", "--max", "6"]) == 0
    assert run_benchmark.main([*base, "--run-id", "b", "--max", "6", "--offline"]) == 0
    assert run_benchmark.main([*base, "--run-id", "m", "--max", "2", "--target", "memory-ref"]) == 0
    for run in ("a", "b"):
        assert scorecard.main(["--project", str(project), "--run-id", run, "--no-charts", "--no-html"]) == 0
    capsys.readouterr()
    a = run_dir(project, "a")
    check("item-results", lines(a / "item-results.jsonl"))
    check("item-results-offline", lines(run_dir(project, "b") / "item-results.jsonl"))
    check("item-results-memory-ref", lines(run_dir(project, "m") / "item-results.jsonl"))
    check("run-meta", json.loads((a / "run-meta.json").read_text()))
    check("manifest", json.loads((a / "manifest.json").read_text()))
    check("metrics", json.loads((a / "metrics.json").read_text()))
    check("metrics-offline", json.loads((run_dir(project, "b") / "metrics.json").read_text()))
    assert compare_runs.main([str(a), str(run_dir(project, "b")), "--json", "--force"]) == 0
    check("comparison", json.loads(capsys.readouterr().out))
    assert run_benchmark.main(["--project", str(project), "--dry-run", "--json", "--target", "memory-ref"]) == 0
    check("estimate", json.loads(capsys.readouterr().out))
