"""The loop across the day the official judge retires: the hard rule (the official judge, or after the day the
user's calibrated successor throughout), the BLOCKED halt and its choices, the successor's baseline, and how
decide, confirm, status and the Stop hook word a successor-judged loop. Files and git only; the runs against the
fake server are tests/loop/test_judge_day_runs.py, and a real Claude Code session tests/claude_code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lme.core import config
from lme.core.errors import UserError, run_main
from lme.judge import agreement as judge_agreement
from lme.judge import request_shapes as judge_shapes
from lme.loop import confirm, decide, judge_day
from lme.loop import rules as loop_rules
from lme.loop import session as loop_session
from lme.loop import state as loop_state
from lme.loop import steps as loop_steps
from lme.loop import stop_hook as loop_stop_hook
from lme.cli import confirm as confirm_cli
from lme.cli import rounds as rounds_cli
from lme.run.settings import RunSettings
from lme.score import drop_qids
from loop_testing import git, item_ids, make_loop_project, make_row, write_run

SUCCESSOR = "openai:o3-mini"
BY_SUCCESSOR = {"official": False, "successor": True, "provider": "openai", "model": "o3-mini-2025-01-31",
                "requested_model": "o3-mini"}
SESSION = "9b2f4c1e-0000-4000-8000-00000000d4a7"


@pytest.fixture
def project(tmp_path):
    project = make_loop_project(tmp_path)
    cfg = config.default_config()
    cfg["loop"] = {"run_id": "loop"}
    config.write_config(project, cfg, force=True)
    loop_state.init(project)
    return project


def name_successor(project: Path, spec: str | None = SUCCESSOR) -> None:
    """What the user does: successorJudge in the config (the loop's rules cannot)."""
    path = project / ".longmemeval-benchmarks" / "config.json"
    cfg = json.loads(path.read_text())
    cfg["successorJudge"] = spec
    path.write_text(json.dumps(cfg))


def calibrate(project: Path, spec: str = SUCCESSOR, shape: dict | None = None) -> dict:
    """A calibration record of ``spec`` (what judge_agreement.py --all --candidate appends)."""
    provider, model = spec.split(":")
    record = {"candidate": spec, "candidate_provider": provider, "candidate_model": model,
              "request_shape": shape or judge_shapes.shape_for(provider, model, None).to_dict(),
              "verdict_set_sha256": "ab" * 32, "n": 500, "agree": 488, "agreement": 0.976, "kappa": 0.93,
              "kappa_ci95": [0.9, 0.96], "flips": [], "measured_at": "2027-01-10T10:00:00Z", "source": "--all"}
    judge_agreement.append_record(project, record)
    return record


def loop_run(project: Path, labels: dict | None = None, judgment: dict | None = None, n: int = 12) -> Path:
    types = item_ids(n)
    labels = labels if labels is not None else {q: i % 2 == 0 for i, q in enumerate(types)}
    rows = {q: make_row(q, types[q], label, judgment=judgment) for q, label in labels.items()} if judgment else None
    return write_run(project, "loop", types, labels, rows=rows)


def blocked_rows(project: Path) -> list[str]:
    return [r for r in (project / "history_max_effort.md").read_text().splitlines() if r.startswith("| BLOCKED |")]


def settings_of(project: Path, successor: str | None = None) -> RunSettings:
    return RunSettings(project=str(project), dataset_path="d.json", variant="_s", runs_dir=str(project),
                       longmemeval_root=None, target="memory-ref", target_provider="openai", target_model="m",
                       target_options={}, judge_provider="openai", judge_model="gpt-4o-2024-08-06", max_evals=12,
                       concurrency=1, cache_enabled=False, cache_read=False, cache_dir=str(project / "cache"),
                       error_threshold=0, timeout_s=5, max_attempts=1, successor_judge=successor)


def judge_of(settings: RunSettings) -> tuple[str | None, bool]:
    return settings.successor_judge, settings.successor_only


# --------------------------------------------------------------------------- the hard rule


def test_the_loops_judge_is_official_then_retired_then_the_users_calibrated_successor(project):
    assert loop_rules.loop_judge(project).kind == "official"
    judge_day.record_day(project, "loop", "a 404 mid-run")
    assert loop_rules.loop_judge(project)[:2] == ("retired", None)
    name_successor(project, "o3-mini")  # a bare model is openai's, as a run reads it
    assert loop_rules.loop_judge(project)[:3] == ("retired", None, SUCCESSOR)
    record = json.loads((project / ".longmemeval-benchmarks/judge-day.json").read_text())
    record.update(successor=SUCCESSOR, baseline_at="2027-01-15T00:00:00Z")
    (project / ".longmemeval-benchmarks/judge-day.json").write_text(json.dumps(record))
    assert loop_rules.loop_judge(project)[:2] == ("successor", SUCCESSOR)
    name_successor(project, "openai:gpt-4o-mini")  # the user changed their mind: a new baseline first
    assert loop_rules.loop_judge(project).kind == "retired"


def test_the_rules_refuse_a_successor_before_the_day_a_retired_judge_and_a_mixed_one_after(project):
    def problems(**request):
        base = dict(n_total=12, max_items=None, judge_provider="openai", judge_model="gpt-4o-2024-08-06",
                    symbolic={"symbolic_resolver": True, "symbolic_temporal": True, "symbolic_bypass": True},
                    target=None)
        return [p for p in loop_rules.check_loop_run(loop_rules.LoopRunRequest(**base, **request), project)
                if "branch" not in p]

    assert problems() == []
    assert "before the day" in problems(successor=SUCCESSOR)[0]  # no fallback item by item
    judge_day.record_day(project, "loop", "the start-up check")
    assert problems()[0].startswith("BLOCKED: official judge retired")
    name_successor(project)
    record = json.loads((project / ".longmemeval-benchmarks/judge-day.json").read_text())
    (project / ".longmemeval-benchmarks/judge-day.json").write_text(
        json.dumps({**record, "successor": SUCCESSOR, "baseline_at": "2027-01-15T00:00:00Z"}))
    assert problems(successor=SUCCESSOR, successor_only=True) == []
    assert "for every item" in problems(successor=SUCCESSOR)[0]
    assert "the successor openai:o3-mini for every item" in problems(successor="openai:gpt-4o-mini",
                                                                     successor_only=True)[0]


def test_a_loop_run_takes_its_judge_from_the_loop_never_from_the_command_line(project):
    name_successor(project)  # named before the day: the official judge still judges, with no fallback
    assert judge_of(judge_day.for_loop_run(settings_of(project, SUCCESSOR), None)) == (None, False)
    with pytest.raises(UserError, match="never one named on the command line"):
        judge_day.for_loop_run(settings_of(project, "openai:gpt-4o-mini"), "openai:gpt-4o-mini")
    judge_day.record_day(project, "loop", "a 404 mid-run")
    with pytest.raises(judge_day.JudgeRetired):
        judge_day.for_loop_run(settings_of(project), None)
    calibrate(project)
    loop_run(project)
    judge_day.successor_baseline(project, "loop")
    assert judge_of(judge_day.for_loop_run(settings_of(project), None)) == (SUCCESSOR, True)


# --------------------------------------------------------------------------- BLOCKED and the user's choices


def test_the_judge_gone_with_no_successor_is_blocked_once_per_session_with_the_users_choices(project):
    loop_run(project)
    loop_session.start(project, SESSION)
    lines = judge_day.halt(project, "loop", "a 404 mid-run, in run loop")
    assert lines[0].startswith("BLOCKED: official judge retired") and "a 404 mid-run" in lines[0]
    assert "archive-only figures: 0 of the 12 hypotheses of the loop run loop have an archived" in lines[1]
    assert "successorJudge" in lines[2] and "judge_agreement.py --all --candidate" in lines[2]
    assert "never official" in lines[2] and "only the user names the successor" in lines[-1]
    judge_day.halt(project, "loop", "the same step again")  # a run that stopped, then step 1 again
    assert len(blocked_rows(project)) == 1 and "official judge retired" in blocked_rows(project)[0]
    found = json.loads((project / ".longmemeval-benchmarks/judge-day.json").read_text())
    assert found["found_by"] == {"run_id": "loop", "how": "a 404 mid-run, in run loop", "round": 0}
    verdict = loop_session.verdict(project, SESSION)
    assert not verdict.keep_going and verdict.why.startswith("BLOCKED: official judge retired")
    loop_session.start(project, SESSION)  # the next session: the old row no longer blocks, a new halt does
    judge_day.halt(project, "loop", "the start-up check")
    assert len(blocked_rows(project)) == 2


def test_a_named_successor_without_its_calibration_stays_blocked_and_says_calibrate_first(project):
    loop_run(project)
    name_successor(project)
    calibrate(project, shape={"family": "upstream", "max_tokens": 10, "temperature": 0, "n": 1})  # another shape
    judge_day.record_day(project, "loop", "a 404 mid-run")
    code, lines = judge_day.successor_baseline(project, "loop")
    assert code == 2 and lines[0].startswith("BLOCKED: official judge retired")
    assert any("the config names openai:o3-mini, uncalibrated" in line and "calibrate it first" in line
               for line in lines)
    assert "the successor the config names is uncalibrated" in blocked_rows(project)[-1]
    assert loop_rules.loop_judge(project).kind == "retired"


def test_a_calibrated_successor_named_before_the_day_is_not_blocked_its_baseline_comes_next(project):
    loop_run(project)
    name_successor(project)
    calibrate(project)
    lines = judge_day.halt(project, "loop", "the start-up check")
    assert "the config names the calibrated successor openai:o3-mini" in lines[0] and "Cohen's kappa 0.930" in lines[0]
    assert "rounds.py successor-baseline --run-id loop" in lines[1]
    assert not blocked_rows(project)
    assert loop_state.position(project).step.startswith("the official judge retired: the successor baseline")


def test_dry_runs_say_it_and_write_nothing(project):
    loop_run(project)
    judge_day.halt(project, "loop", "the start-up check", log=False)
    assert not blocked_rows(project) and not (project / ".longmemeval-benchmarks/judge-day.json").exists()


# --------------------------------------------------------------------------- the successor's baseline


def _round_in_flight(project: Path) -> str:
    """Round v1 begun on an official baseline, its fix committed, its re-test not decided."""
    loop_run(project)
    loop_state.bump(project)
    loop_steps.snapshot(project, "loop")
    (project / "memory.py").write_text("FIX = 1\n")
    git(["add", "memory.py"], project)
    git(["commit", "-q", "-m", "fix(v1): prefer the latest session"], project)
    return git(["rev-parse", "HEAD"], project).stdout.strip()


def test_the_successor_baseline_voids_the_round_in_flight_and_rejudges_every_item(project, capsys):
    sha = _round_in_flight(project)
    judge_day.record_day(project, "loop", "a 404 mid-run")
    name_successor(project)
    calibrate(project)
    (project / ".longmemeval-benchmarks/confirmation.json").write_text(json.dumps({"status": "pending"}))
    assert run_main(rounds_cli.main, ["--project", str(project), "successor-baseline", "--run-id", "loop"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("successor baseline: official judge retired: from here on the successor openai:o3-mini")
    assert "round v1 voided" in out and "12 item(s) of run loop will be judged again" in out
    [void] = [json.loads(x) for x in (project / ".longmemeval-benchmarks/decisions.jsonl").read_text().splitlines()]
    assert (void["round"], void["decision"], void["fix_commit"]) == (1, "void", sha) and void["revert_commit"]
    assert not (project / "memory.py").exists()  # the unmeasured fix is reverted
    assert decide.describe(void).startswith("VOID: round v1 was in flight when the official judge retired")
    run_dir = project / ".longmemeval-benchmarks/runs/loop"
    assert (run_dir / "item-results.jsonl").read_text() == "" and (run_dir / "questions_completed.jsonl").read_text() == ""
    assert json.loads((project / ".longmemeval-benchmarks/confirmation.json").read_text())["status"] == "void"
    day = json.loads((project / ".longmemeval-benchmarks/judge-day.json").read_text())
    assert (day["successor"], day["rejudged"], day["voided_round"]["round"]) == (SUCCESSOR, 12, 1)
    assert day["calibration"]["kappa"] == 0.93 and day["request_shape"]["family"] == "reasoning"
    assert loop_state.position(project).step.startswith("step 1")  # the full run resumes every item
    assert "judge: the successor openai:o3-mini for every item" in "\n".join(loop_state.status(project))
    history = (project / "history_max_effort.md").read_text()
    assert "| JUDGE |" in history and "not official" in history
    assert git(["log", "-1", "--format=%s"], project).stdout.startswith("successor baseline: openai:o3-mini")
    assert git(["log", "-1", "--format=%s", "origin/longmemeval-iter"], project).stdout.startswith("successor baseline")
    with pytest.raises(UserError, match="was voided"):
        loop_steps.finish(project, "loop")
    assert judge_day.successor_baseline(project, "loop")[1][0].endswith("go on at the step rounds.py status names")


def test_rows_the_successor_judged_already_stay_and_before_the_day_there_is_nothing_to_do(project):
    assert judge_day.successor_baseline(project, "loop")[1][0].startswith("the official judge has not retired")
    types = item_ids(4)
    labels = {q: True for q in types}
    rows = {q: make_row(q, t, True, judgment=BY_SUCCESSOR if i < 2 else None) for i, (q, t) in
            enumerate(types.items())}
    write_run(project, "loop", types, labels, rows=rows)
    judge_day.record_day(project, "loop", "a 404 mid-run")
    name_successor(project)
    calibrate(project)
    assert judge_day.successor_baseline(project, "loop")[0] == 0
    kept = [json.loads(x)["question_id"] for x in
            (project / ".longmemeval-benchmarks/runs/loop/item-results.jsonl").read_text().splitlines()]
    assert kept == list(types)[:2]


# --------------------------------------------------------------------------- decide and confirm, after the day


def test_a_round_judged_by_the_successor_on_both_sides_is_decided_and_says_so(project):
    types = item_ids(12)
    ids = list(types)
    labels = {q: i % 2 == 0 for i, q in enumerate(ids)}
    write_run(project, "loop", types, labels, rows={q: make_row(q, types[q], labels[q], judgment=BY_SUCCESSOR)
                                                   for q in ids})
    loop_state.bump(project)
    loop_steps.snapshot(project, "loop")
    fixed = [q for q in ids if not labels[q]][:3]
    drop_qids.drop_qids(project / ".longmemeval-benchmarks/runs/loop", fixed)
    write_run(project, "loop", types, {q: True for q in fixed},
              rows={q: make_row(q, types[q], True, judgment=BY_SUCCESSOR) for q in fixed})
    record = decide.run_decision(project, "v1", "loop")
    assert (record["decision"], record["net"], record["judge"]) == ("keep", 3, "the successor openai:o3-mini")
    line = decide.describe(record)
    assert line.startswith("KEEP") and "judged by the successor openai:o3-mini before and after" in line
    assert "not official" in line


def _confirmable(project: Path, estimate: dict | None) -> dict:
    loop_run(project, labels={q: True for q in item_ids(20)}, judgment=BY_SUCCESSOR, n=20)
    judge_day.record_day(project, "loop", "a 404 mid-run")
    day = json.loads((project / ".longmemeval-benchmarks/judge-day.json").read_text())
    day.update(successor=SUCCESSOR, baseline_at="2027-01-15T00:00:00Z",
               calibration=judge_agreement.compact(calibrate(project)))
    (project / ".longmemeval-benchmarks/judge-day.json").write_text(json.dumps(day))
    record = confirm.start(project, "loop")
    rerun = write_run(project, record["confirm_run_id"], item_ids(20), {q: True for q in item_ids(20)},
                      rows={q: make_row(q, t, True, judgment=BY_SUCCESSOR) for q, t in item_ids(20).items()})
    if estimate is not None:
        metrics = json.loads((rerun / "metrics.json").read_text())
        (rerun / "metrics.json").write_text(json.dumps({**metrics, "official_estimate": estimate}))
    return record


@pytest.mark.parametrize("estimate,said", [
    ({"accuracy": 0.9512, "ci95": [0.93, 0.968], "method": "kappa-corrected", "calibration": [], "official": 0,
      "corrected": 20, "min_per_class": 10, "assumption": "a", "task_averaged": {}, "abstention": {},
      "per_type": {}, "by_source": None},
     "official-scale estimate 0.9512 (95% CI 0.9300-0.9680), kappa-corrected"),
    (None, "no official-scale estimate")])
def test_a_successor_judged_confirmation_is_reported_as_the_successors_never_as_the_official_target(
        project, capsys, estimate, said):
    record = _confirmable(project, estimate)
    assert run_main(confirm_cli.main, ["--project", str(project), "finish", "--commit"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("CONFIRMED by the successor openai:o3-mini, not official (calibrated: agreement")
    assert said in err and "no official figure is claimed" in err and "official target met" not in err
    state = json.loads((project / ".longmemeval-benchmarks/confirmation.json").read_text())
    assert state["status"] == "confirmed" and state["judge"]["successor"] == SUCCESSOR
    stored = state["judge"]["official_estimate"]  # the confirmation run's block as it is (scoring always writes one)
    assert stored == estimate if estimate else stored is None or stored["accuracy"] is None
    subject = git(["log", "-1", "--format=%s"], project).stdout.strip()
    assert subject == (f"FINAL: LongMemEval 20/20 by the successor openai:o3-mini (not official), confirmed by "
                       f"clean rerun {record['confirm_run_id']} (20/20)")
    history = (project / "history_max_effort.md").read_text()
    assert "CONFIRMED by the successor openai:o3-mini, not official" in history and said in history


def test_an_official_confirmation_keeps_its_words(project):
    loop_run(project, labels={q: True for q in item_ids(20)}, n=20)
    record = confirm.start(project, "loop")
    write_run(project, record["confirm_run_id"], item_ids(20), {q: True for q in item_ids(20)})
    state = confirm.finish(project)
    assert "judge" not in state and confirm.outcome_line(state) == "CONFIRMED: the loop ends here"


# --------------------------------------------------------------------------- what status and the Stop hook say


def test_the_stop_hook_lets_a_blocked_loop_end_and_says_why(project):
    loop_run(project)
    loop_session.start(project, SESSION)
    hook_input = {"session_id": SESSION, "cwd": str(project), "hook_event_name": "Stop"}
    assert "judge: the official one" in loop_stop_hook.decide(hook_input)["hookSpecificOutput"]["additionalContext"]
    judge_day.halt(project, "loop", "a 404 mid-run")
    message = loop_stop_hook.decide(hook_input)["systemMessage"]
    assert message.startswith("LongMemEval loop: BLOCKED: official judge retired")
    assert "letting the session end so the user can decide" in message


def test_status_and_the_hook_name_the_successor_baseline_once_a_calibrated_successor_is_named(project):
    loop_run(project)
    judge_day.record_day(project, "loop", "a 404 mid-run")
    name_successor(project)
    lines = loop_state.status(project)
    assert "judge: the official judge retired; no successor baseline yet (the config names openai:o3-mini)" in lines
    assert lines[-1].startswith("next: the official judge retired: the successor baseline (the skill's \"The "
                                "official judge retired\": rounds.py successor-baseline")
    loop_session.start(project, SESSION)
    context = loop_stop_hook.decide({"session_id": SESSION, "cwd": str(project)})["hookSpecificOutput"]
    assert "judge: the official one retired, no successor baseline yet" in context["additionalContext"]
