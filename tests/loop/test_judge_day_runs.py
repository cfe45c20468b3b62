"""The loop's runs across the day the official judge retires, against the fake server (real SDKs, real git): a 404
mid-run halts the loop BLOCKED and never hands an item to a successor; the day after, a calibrated successor the
user named judges every item of the loop's runs, archived official verdicts or not; a loop session never takes a
successor from the command line, and its rules cannot touch the config's judge keys."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lme.cli import claude_settings
from lme.cli import judge_agreement as judge_agreement_cli
from lme.cli import judge_shim
from lme.cli import run_benchmark
from lme.core.errors import run_main
from lme.core.facts import CONFIG_FILE, JUDGE_DAY_FILE, STATE_DIR
from lme.loop import judge_day, model_stack, noise_floor
from lme.models import provider_probe
from lme.score import drop_qids
from lme.store import run_store
from loop_testing import LOOP_BRANCH, make_loop_project
from run_project import expire_recent_probes, make_project, register_answers, run_dir

OFFICIAL = "gpt-4o-2024-08-06"
SUCCESSOR = "openai:o3-mini"
LOOP = {"branch": LOOP_BRANCH, "run_id": "loop", "target": "full-context", "target_model": "openai:gpt-4o-mini",
        "judge": "openai:gpt-4o", "targetOptions": {"symbolic_resolver": True, "symbolic_temporal": True,
                                                    "symbolic_bypass": True}}
LOOP_ARGS = ["--loop", "--run-id", "loop", "--max", "24", "--variant", "_s", "--target", "full-context",
             "--target-model", "openai:gpt-4o-mini", "--judge-model", "openai:gpt-4o", "--symbolic-resolver",
             "--symbolic-temporal", "--symbolic-bypass"]
"""What parallel_longmemeval.sh passes from the loop configuration."""

pytestmark = pytest.mark.usefixtures("fresh_probes")


@pytest.fixture
def project(tmp_path, fake_llm):
    project = make_loop_project(tmp_path)
    make_project(project, loop=LOOP)
    register_answers(fake_llm)
    return project


def loop_run(project: Path, *extra: str) -> int:
    return run_main(run_benchmark.main, ["--project", str(project), "--progress", "quiet", "--yes", "--no-scorecard",
                                         *LOOP_ARGS, *extra])


def edit_config(project: Path, **changes) -> None:
    path = project / STATE_DIR / CONFIG_FILE
    path.write_text(json.dumps({**json.loads(path.read_text()), **changes}, indent=2))


def judge_calls(server, model: str) -> list[dict]:
    return [q for q in server.requests if (q.get("body") or {}).get("model") == model
            and ((q["body"].get("max_tokens") == 10) or "max_completion_tokens" in q["body"])]


def rows(project: Path) -> dict[str, dict]:
    found = {}
    for line in (run_dir(project, "loop") / "item-results.jsonl").read_text().splitlines():
        row = json.loads(line)
        found[row["question_id"]] = row
    return found


def history(project: Path) -> list[str]:
    path = project / "history_max_effort.md"
    return path.read_text().splitlines() if path.exists() else []


def test_a_404_mid_round_halts_the_loop_blocked_and_never_hands_an_item_to_a_successor(project, fake_llm, capsys):
    edit_config(project, successorJudge=SUCCESSOR)  # named, not calibrated: the loop must not use it
    assert loop_run(project) == 0
    retest = sorted(rows(project))[:6]
    drop_qids.drop_qids(run_dir(project, "loop"), retest)  # a round's re-test
    fake_llm.gone_models[OFFICIAL] = 404  # the start-up check passed minutes ago: the judge's calls answer 404
    capsys.readouterr()
    assert loop_run(project, "--no-cache") == 2  # (a fix changes the prompts: no cached verdict serves them)
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("BLOCKED: official judge retired") and "found mid-run, in run loop" in out[0]
    assert out[1].lstrip().startswith("1. archive-only figures") and out[2].lstrip().startswith("2. a successor")
    assert any("the config names openai:o3-mini, uncalibrated" in line for line in out)
    assert judge_calls(fake_llm, "o3-mini") == [] and not [p for p in fake_llm.probes
                                                           if p["body"]["model"] == "o3-mini"]
    assert not set(retest) & set(rows(project))  # the re-test stays pending: nothing judged by anyone else
    [blocked] = [r for r in history(project) if r.startswith("| BLOCKED |")]
    assert "the successor the config names is uncalibrated" in blocked
    day = json.loads((project / JUDGE_DAY_FILE).read_text())
    assert day["found_by"]["how"] == "found mid-run, in run loop" and day["successor"] is None

    fake_llm.reset()  # the step again: refused from the loop's record, before any call
    assert loop_run(project) == 2
    assert capsys.readouterr().out.startswith("BLOCKED: official judge retired (") and fake_llm.requests == []
    assert len([r for r in history(project) if r.startswith("| BLOCKED |")]) == 1


def test_the_day_after_a_calibrated_successor_judges_every_loop_item_archived_or_not(
        project, fake_llm, capsys, upstream_prompt):
    assert loop_run(project) == 0  # 24 official verdicts, archived
    archive = project / "verdicts-export.jsonl"
    assert judge_shim.main(["export-verdicts", "--project", str(project), "--out", str(archive)]) == 0
    assert judge_shim.main(["import-verdicts", str(archive), "--project", str(project)]) == 0
    assert judge_agreement_cli.main(["--all", "--candidate", SUCCESSOR, "--project", str(project)]) == 0
    edit_config(project, successorJudge=SUCCESSOR)  # the user's choice, calibrated first
    drop_qids.drop_qids(run_dir(project, "loop"), sorted(rows(project))[:3])
    fake_llm.gone_models[OFFICIAL] = 404
    expire_recent_probes(project)  # the day after
    provider_probe.forget()
    fake_llm.reset()
    capsys.readouterr()
    assert loop_run(project) == 2  # found at the start-up check: nothing started, the baseline comes next
    out = capsys.readouterr().out
    assert "the config names the calibrated successor openai:o3-mini" in out
    assert "rounds.py successor-baseline --run-id loop" in out and "BLOCKED" not in out
    assert judge_calls(fake_llm, "o3-mini") == [] and not any(r.startswith("| BLOCKED |") for r in history(project))

    code, lines = judge_day.successor_baseline(project, "loop")
    assert code == 0 and "21 item(s) of run loop will be judged again" in lines[1]
    fake_llm.reset()
    assert loop_run(project) == 0
    judged = rows(project)
    assert len(judged) == 24 and all(r["judgment"]["successor"] and not r["judgment"]["official"]
                                     and r["judgment"]["source"] == "call" for r in judged.values())
    assert len(judge_calls(fake_llm, "o3-mini")) == 24  # every item, the archived ones too
    assert judge_calls(fake_llm, OFFICIAL) == [] and fake_llm.model_lookups == []
    assert not [p for p in fake_llm.probes if p["body"]["model"] == OFFICIAL]
    meta = run_store.read_meta(run_dir(project, "loop"))
    assert meta.invocations[-1].successor_only is True
    assert noise_floor.judge_of(meta) == "the successor openai:o3-mini"  # a new noise floor for the new judge


def test_a_loop_session_takes_no_successor_from_the_command_line(project, monkeypatch, capsys):
    monkeypatch.setenv("CLAUDE_CODE_SESSION_ID", "a-loop-session")
    monkeypatch.chdir(project)  # Claude Code runs the loop's lines in the project
    assert loop_run(project, "--successor", "openai:gpt-4o-mini", "--dry-run") == 2
    err = capsys.readouterr().err
    assert "--successor openai:gpt-4o-mini: in a loop session" in err and "the user's choice" in err
    monkeypatch.delenv("CLAUDE_CODE_SESSION_ID")
    assert loop_run(project, "--successor", "openai:gpt-4o-mini", "--dry-run") == 2  # the loop's own rule too
    assert "never one named on the command line" in capsys.readouterr().err


def test_the_loops_standing_rules_and_scripts_leave_the_configs_judge_keys_to_the_user(project):
    protected = [f"{STATE_DIR}/{CONFIG_FILE}", f"{STATE_DIR}/judge-agreement.jsonl", JUDGE_DAY_FILE]
    for rule in claude_settings.permission_rules():
        if rule.startswith("Edit("):
            pattern = rule[len("Edit(/"):-1]
            reach = (lambda p: p.startswith(pattern[:-2])) if pattern.endswith("/**") else (lambda p: p == pattern)
            assert not [p for p in protected if reach(p)], rule
    edit_config(project, successorJudge=SUCCESSOR, judgeReasoningEffort="low")
    before = json.loads((project / STATE_DIR / CONFIG_FILE).read_text())
    model_stack.set_stack(project)  # the one loop step that writes the config
    after = json.loads((project / STATE_DIR / CONFIG_FILE).read_text())
    keys = ("judgeProvider", "judgeModel", "successorJudge", "judgeReasoningEffort")
    assert {k: after.get(k) for k in keys} == {k: before.get(k) for k in keys}
    assert after["loop"]["judge"] == before["loop"]["judge"]
