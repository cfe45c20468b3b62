"""Runs for the report tests: the shipped sample through the real SDKs against the fake server, with one error row,
one hypothesis that tries to close the page's script element, and one question the judge registry calls flaky."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from lme.cli import run_benchmark
from lme.cli import scorecard
from fake_llm_server import prompt_text
from run_project import SAMPLE, make_project, register_answers, run_dir

NASTY = "</script><script>window.pwned = 1</script><!-- Asheville & <b>bold</b> \u2028 end"
"""A hypothesis that would break out of an unescaped <script> block (and spans a JS line separator)."""


@dataclass(frozen=True)
class ReportRun:
    project: Path
    run_dir: Path
    rows: dict[str, dict]
    error_id: str
    nasty_id: str
    flaky_id: str


def _rows(directory: Path) -> dict[str, dict]:
    rows = [json.loads(line) for line in (directory / "item-results.jsonl").read_text().split("\n") if line.strip()]
    return {r["question_id"]: r for r in rows}


def make_report_run(root: Path, server, run_id: str = "r1", correct_share: float = 0.5,
                    project: Path | None = None) -> ReportRun:
    """Run the sample (full-context reader, one item at a time), then score it: report.html is written."""
    items = json.loads(SAMPLE.read_text())
    project = project or make_project(root / "p", concurrency=1, errorThreshold=5)
    register_answers(server, correct_share=correct_share)
    nasty_question = items[1]["question"]
    server.answer_fn = lambda body: NASTY if nasty_question in prompt_text(body)[-3000:] else None
    server.fail_next("400")  # the first request (item 0's reader call) fails for good: an error row
    code = run_benchmark.main(["--project", str(project), "--progress", "quiet", "--no-scorecard", "--run-id", run_id,
                               "--no-cache"])
    assert code == 0
    server.answer_fn = None
    directory = run_dir(project, run_id)
    rows = _rows(directory)
    flaky = next(r for r in rows.values() if r["status"] == "judged" and r["question_id"] != items[1]["question_id"])
    registry = project / ".longmemeval-benchmarks" / "judge-stability.jsonl"
    with open(registry, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"schemaVersion": "1.0.0", "question_id": flaky["question_id"],
                             "judge_provider": "openai", "judge_model": flaky["judgment"]["model"],
                             "prompt_sha256": flaky["judgment"]["prompt_sha256"], "yes": 2, "no": 1, "n": 3,
                             "flaky": True, "source": "run test"}) + "\n")
    assert scorecard.main(["--run-id", run_id, "--project", str(project), "--no-charts"]) == 0
    return ReportRun(project, directory, rows, items[0]["question_id"], items[1]["question_id"], flaky["question_id"])
