"""Judge stability: --judge-repeat K / --repeat K re-judge with the cache bypassed, keep the first verdict as the
label, write the project registry; the scorecard counts unstable labels; compare/decide report their flips apart."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from lme.score import run_comparison
from lme.loop import decide
from lme.cli import judge_shim
from lme.judge import stability as judge_stability
from lme.cli import run_benchmark
from lme.report import scorecard_md
from lme.store.run_store import load_run
from loop_testing import make_loop_project
from lme.core.records import Verdict
from run_project import SAMPLE, make_project, register_answers, run_dir
from factories import SSU, official_row, write_run, scorecard_of
from test_decide import _round
from helpers_data import judge_json

SAMPLE_ITEMS = json.loads(SAMPLE.read_text())
VICTIM = SAMPLE_ITEMS[0]


def run(project: Path, *args: str) -> int:
    return run_benchmark.main(["--project", str(project), "--progress", "quiet", "--no-scorecard", *args])


def rows_of(project: Path, run_id: str) -> dict[str, dict]:
    path = run_dir(project, run_id) / "item-results.jsonl"
    return {r["question_id"]: r for r in (json.loads(x) for x in path.read_text().splitlines() if x.strip())}


def registry_lines(project: Path) -> list[dict]:
    path = judge_stability.registry_path(project)
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def flipping_judge(server) -> Counter:
    """The judge answers yes, except on VICTIM, where it alternates yes, no, yes, ... per call."""
    calls: Counter = Counter()

    def judge(prompt: str) -> str:
        if VICTIM["question"] not in prompt:
            return "yes"
        calls["victim"] += 1
        return "yes" if calls["victim"] % 2 else "no"

    server.judge_fn = judge
    return calls


def judge_requests(server) -> int:
    return sum(1 for q in server.requests if (q.get("body") or {}).get("max_tokens") == 10)


def test_repeats_record_every_verdict_keep_the_first_and_fill_the_registry(tmp_path, fake_llm):
    project = make_project(tmp_path / "p", concurrency=1)
    register_answers(fake_llm, correct_share=1.0)
    flipping_judge(fake_llm)
    assert run(project, "--run-id", "s", "--max", "3", "--judge-repeat", "3") == 0
    assert judge_requests(fake_llm) == 9
    rows = rows_of(project, "s")
    for r in rows.values():
        judgment = r["judgment"]
        assert len(judgment["verdicts"]) == 3 and judgment["verdicts"][0]["label"] == judgment["label"]
    victim = rows[VICTIM["question_id"]]["judgment"]
    assert [v["label"] for v in victim["verdicts"]] == [True, False, True]
    assert victim["stability"] == {"n": 3, "yes": 2, "no": 1, "flaky": True}
    lines = registry_lines(project)
    assert len(lines) == 3
    flaky = [line for line in lines if line["flaky"]]
    assert [(f["question_id"], f["yes"], f["no"], f["n"]) for f in flaky] == [(VICTIM["question_id"], 2, 1, 3)]
    assert flaky[0]["prompt_sha256"] == victim["prompt_sha256"] and flaky[0]["judge_model"] == "gpt-4o-2024-08-06"
    assert json.loads((run_dir(project, "s") / "run-meta.json").read_text())["settings"]["judge_repeat"] == 3

    record = scorecard_of(load_run(run_dir(project, "s")))
    card = record.to_dict()
    assert card["judge_stability"]["unstable_ids"] == [VICTIM["question_id"]]
    assert card["judge_stability"]["repeated_items"] == 3
    assert "1 of 3 judged labels are unstable" in scorecard_md.render_markdown(record)


def test_repeats_bypass_the_cache_and_counts_accumulate_per_prompt(tmp_path, fake_llm):
    project = make_project(tmp_path / "p", concurrency=1)
    register_answers(fake_llm, correct_share=1.0)
    flipping_judge(fake_llm)
    assert run(project, "--run-id", "a", "--max", "2", "--judge-repeat", "3") == 0
    before = judge_requests(fake_llm)
    assert run(project, "--run-id", "b", "--max", "2", "--judge-repeat", "3") == 0
    assert judge_requests(fake_llm) - before == 4  # per item: the first verdict from the cache, two fresh repeats
    victim = rows_of(project, "b")[VICTIM["question_id"]]["judgment"]
    assert victim["verdicts"][0]["source"] == "cache" and victim["label"] is True  # the cached first verdict
    assert [v["source"] for v in victim["verdicts"][1:]] == ["call", "call"]
    last = [line for line in registry_lines(project) if line["question_id"] == VICTIM["question_id"]][-1]
    assert last["n"] == 6 and last["flaky"]


def test_a_resume_keeps_the_runs_judge_repeat(tmp_path, fake_llm):
    project = make_project(tmp_path / "p", concurrency=1)
    register_answers(fake_llm)
    fake_llm.fail_next("400")  # the first item fails: the run stops with items pending
    assert run(project, "--run-id", "r", "--max", "4", "--judge-repeat", "2") == 1
    assert run(project, "--run-id", "r") == 0  # no --judge-repeat: the run's own 2
    rows = rows_of(project, "r")
    assert len(rows) == 4 and all(len(r["judgment"]["verdicts"]) == 2 for r in rows.values())


def test_judge_repeat_below_one_is_one_line_and_nothing_written(tmp_path, capsys):
    from lme.core.errors import run_main

    project = make_project(tmp_path / "p")
    assert run_main(run_benchmark.main, ["--project", str(project), "--judge-repeat", "0"]) == 2
    assert "--judge-repeat 0 must be >= 1" in capsys.readouterr().err
    assert not (project / ".longmemeval-benchmarks" / "runs").exists()


def test_hyp_file_repeat_writes_every_verdict_and_the_registry(fake_llm, tmp_path, capsys):
    from upstream_standin import make_upstream_tree

    root = make_upstream_tree(tmp_path / "up")
    hyp = tmp_path / "hyps.jsonl"
    hyp.write_text("".join(json.dumps({"question_id": r["question_id"], "hypothesis": str(r["answer"])}) + "\n"
                           for r in SAMPLE_ITEMS[:2]))
    flipping_judge(fake_llm)
    assert judge_shim.main(["--longmemeval-root", str(root), "--hyp-file", str(hyp), "--ref-file", str(SAMPLE),
                            "--repeat", "2", "--project", str(tmp_path)]) == 0
    out = [json.loads(x) for x in Path(f"{hyp}.eval-results-gpt-4o").read_text().splitlines()]
    assert [len(o["autoeval_verdicts"]) for o in out] == [2, 2]
    assert out[0]["autoeval_label"]["label"] is True and [v["label"] for v in out[0]["autoeval_verdicts"]] == [True, False]
    lines = registry_lines(tmp_path)
    assert {line["question_id"]: line["flaky"] for line in lines} == {SAMPLE_ITEMS[0]["question_id"]: True,
                                                                      SAMPLE_ITEMS[1]["question_id"]: False}
    assert lines[0]["source"].startswith("judge_shim ")


def test_a_failed_repeat_keeps_the_official_label(tmp_path):
    from lme.core.records import Completion
    from upstream_standin import make_upstream_tree

    class OneThenBroken:
        def __init__(self):
            self.calls = 0

        def complete(self, request):
            self.calls += 1
            if self.calls > 1:
                from lme.models.providers import ProviderError

                raise ProviderError("server", "HTTP 503", attempts=8)
            return Completion(text="yes", tokensIn=1, tokensOut=1, latencyMs=1, provider="openai",
                              model="gpt-4o-2024-08-06")

    verdict = judge_json("multi-session", "Q", "A", "A", make_upstream_tree(tmp_path), question_id="q",
                               llm=OneThenBroken(), repeat=2)
    assert verdict["label"] is True and verdict["verdicts"][1]["label"] is None
    assert verdict["stability"] == {"n": 1, "yes": 1, "no": 0, "flaky": False}


def _stable_pair(tmp_path: Path, flaky_ids: set[str]) -> tuple[Path, Path]:
    """Runs in one project: a1 and a2 flip wrong -> right; the registry marks ``flaky_ids`` flaky."""
    project = tmp_path / "proj"
    runs = project / ".longmemeval-benchmarks" / "runs"
    items = [("a1", SSU), ("a2", SSU), ("a3", SSU)]

    def judged(qid: str, label: bool) -> dict:
        r = official_row(qid, SSU, label)
        r["judgment"]["prompt_sha256"] = f"{qid:0>64}"[-64:].replace("a", "0")
        return r

    before = write_run(runs / "before", items, [judged("a1", False), judged("a2", False), judged("a3", True)])
    after = write_run(runs / "after", items, [judged("a1", True), judged("a2", True), judged("a3", True)])
    registry = judge_stability.StabilityRegistry(project)
    for qid in flaky_ids:
        judgment = judged(qid, True)["judgment"]
        registry.record(qid, Verdict.from_dict({**judgment, "verdicts": [{"label": True}, {"label": False}]}), "test")
    return before, after


def test_compare_reports_flips_on_flaky_items_apart_and_never_hides_them(tmp_path):
    before, after = _stable_pair(tmp_path, {"a2"})
    res_record = run_comparison.compare(before, after)
    res = res_record.to_dict()
    assert (res["fixes"], res["net"]) == (2, 2)  # the official counts are untouched
    assert res["flaky_flips"] == {"fixes": 1, "regressions": 0, "net": 1, "ids": ["a2"]}
    assert res["net_excluding_flaky"] == 1
    assert [c["flaky"] for c in sorted(res["changed"], key=lambda c: c["question_id"])] == [False, True]
    md = run_comparison.render_markdown(res_record)
    assert "Flips on unstable judge labels" in md and "fix (unstable label)" in md


def test_decide_uses_the_net_without_flips_of_unstable_labels(tmp_path, monkeypatch):
    project = make_loop_project(tmp_path)
    _, retest, _ = _round(project, fixes=2, regressions=0)
    flipped = set(retest[:2])
    monkeypatch.setattr(judge_stability, "row_is_unstable", lambda r, flaky: r is not None and r.question_id in flipped)
    record = decide.run_decision(project, "v1", "loop")
    assert record["net"] == 2 and record["net_excluding_flaky"] == 0
    assert record["decision"] == "revert" and sorted(record["flaky_flips"]["ids"]) == sorted(flipped)
    assert "without 2 flip(s) of unstable judge labels" in decide.describe(record)


@pytest.mark.parametrize("verdicts,expected", [
    ([{"label": True}, {"label": True}], {"n": 2, "yes": 2, "no": 0, "flaky": False}),
    ([{"label": True}, {"label": False}, {"label": None}], {"n": 2, "yes": 1, "no": 1, "flaky": True}),
])
def test_stability_counts_only_verdicts_that_have_a_label(verdicts, expected):
    assert judge_stability.stability(verdicts) == expected


def test_a_dry_run_counts_k_judge_calls_per_item(tmp_path):
    import dataclasses

    from lme.core import config
    from lme.run import dry_run
    from lme.run import settings as run_settings

    project = make_project(tmp_path / "p")
    args = run_benchmark.build_parser().parse_args(["--project", str(project), "--max", "3"])
    once = run_settings.resolve(config.load_config(project), args, project)
    thrice = dataclasses.replace(once, judge_repeat=3)
    assert dry_run.estimate(thrice).judge.tokens_in == 3 * dry_run.estimate(once).judge.tokens_in
