"""selftest_scoring: the real scoring path reproduces hand-computed figures, and every planted mistake of
``selftest_mutations.MUTATIONS``, applied one at a time to a copy of the toolkit, makes the self-test fail."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import selftest_mutations
from lme.score import scoring, selftest_run, selftest_scoring
from lme.cli import selftest_scoring as selftest_scoring_cli
from selftest_mutations import MUTATIONS, REPO

NAMES = [m.name for m in MUTATIONS]


# --------------------------------------------------------------------------- the mutation set


def test_the_mutation_set_has_at_least_30_distinct_mistakes_each_saying_what_it_breaks():
    assert len(selftest_mutations.by_name()) == len(MUTATIONS) >= 30
    assert all(m.breaks and m.old != m.new for m in MUTATIONS)


@pytest.mark.parametrize("mutation", MUTATIONS, ids=NAMES)
def test_each_mutation_still_finds_its_snippet_exactly_once(mutation):
    count = selftest_mutations.anchor_count(REPO, mutation)
    assert count == 1, (f"mutation {mutation.name!r} is stale: its snippet occurs {count} times in {mutation.file}; "
                        "update it in tests/selftest_mutations.py to the code's new form")


@pytest.fixture(scope="module")
def mutation_results(tmp_path_factory):
    """The self-test of a copy of the toolkit, unmutated and with each mutation (one runner subprocess)."""
    copy = selftest_mutations.make_copy(tmp_path_factory.mktemp("toolkit-copy"))
    return selftest_mutations.run_mutations(copy, [None, *NAMES])


def test_the_unmutated_copy_passes_the_selftest(mutation_results):
    result = mutation_results["none"]
    assert result["status"] == "passed", result


@pytest.mark.parametrize("name", NAMES)
def test_each_planted_mistake_fails_the_selftest(mutation_results, name):
    result = mutation_results[name]
    assert result["status"] == "killed", (
        f"{name} ({selftest_mutations.by_name()[name].breaks}): the self-test "
        + {"survived": "passed with it", "stale": f"could not plant it: {result.get('detail')}",
           "crashed": f"crashed instead of failing:\n{result.get('crash')}"}.get(result["status"], str(result)))


def test_a_mutation_is_planted_for_the_run_then_undone_and_a_stale_one_is_refused(tmp_path):
    source = tmp_path / "scripts" / "lme" / "score" / "metrics.py"
    source.parent.mkdir(parents=True)
    source.write_text("DISPLAY_DECIMALS = 4\n", encoding="utf-8")
    fresh = selftest_mutations.Mutation("3 decimals", "scripts/lme/score/metrics.py", "= 4", "= 3", "display")
    with selftest_mutations.planted(tmp_path, fresh):
        assert source.read_text(encoding="utf-8") == "DISPLAY_DECIMALS = 3\n"
    assert source.read_text(encoding="utf-8") == "DISPLAY_DECIMALS = 4\n"
    stale = selftest_mutations.Mutation("gone", "scripts/lme/score/metrics.py", "no such code", "x", "nothing")
    with pytest.raises(selftest_mutations.StaleMutation, match="'gone': its snippet occurs 0 times"):
        with selftest_mutations.planted(tmp_path, stale):
            pass
    assert source.read_text(encoding="utf-8") == "DISPLAY_DECIMALS = 4\n"


# --------------------------------------------------------------------------- the self-test itself


def test_real_scoring_path_passes_every_check(capsys):
    checks = selftest_scoring.run_selftest()
    assert checks and [c for c in checks if not c["ok"]] == []
    assert selftest_scoring_cli.main([]) == 0
    out = capsys.readouterr().out
    assert "| all I don't know | strict macro | 0.2222 | 0.2222 | pass |" in out
    assert "| compare A -> B (items both judged, exact McNemar) | p_value | 0.6250 | 0.6250 | pass |" in out
    assert ("| compare A -> B (items both judged, exact McNemar) | not compared: error_in_a | ssa-1, tr-2_abs | "
            "ssa-1, tr-2_abs | pass |") in out
    scenarios = {c["scenario"] for c in checks}
    assert {"stored run A (reader output, shards)", "stored run B (a hypotheses file)",
            "stored run A without the registry's gold errors", "stored run A retrieval (session level)",
            "95% Wilson intervals"} <= scenarios


def test_the_command_runs_offline_and_leaves_no_file(tmp_path):
    """As a user runs it: its own process, no network, no project, HOME and the temp dir pointed at empty folders."""
    temp, home = tmp_path / "tmp", tmp_path / "home"
    temp.mkdir()
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.endswith("_BASE_URL") and not k.endswith("_API_KEY")}
    env.update(TMPDIR=str(temp), HOME=str(home))
    result = subprocess.run([sys.executable, str(REPO / "scripts" / "selftest_scoring.py")], capture_output=True,
                            text=True, cwd=tmp_path, env=env, timeout=120)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    assert "FAIL" not in result.stdout and "checks passed" in result.stderr
    assert list(temp.iterdir()) == [] and list(home.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home", "tmp"]


def test_a_stage_that_raises_is_a_failed_check_not_a_traceback(monkeypatch, capsys):
    def broken(*args, **kwargs):
        raise KeyError("per_type")

    monkeypatch.setattr(scoring, "build_scorecard", broken)
    checks = selftest_scoring.run_selftest()
    failed = [c for c in checks if not c["ok"]]
    assert failed and {c["figure"] for c in failed} == {"runs without raising"}
    assert failed[0]["got"] == "KeyError: 'per_type'"
    assert selftest_scoring_cli.main([]) == 1
    assert "| stored run A (reader output, shards) | runs without raising |" in capsys.readouterr().out


def test_a_judge_prompt_other_than_the_expected_one_fails():
    judge = selftest_run.SelftestJudge({"the expected prompt": "Yes"})
    from lme.core.records import ChatRequest

    reply = judge.complete(ChatRequest(provider="openai", model="gpt-4o-2024-08-06",
                                       messages=({"role": "user", "content": "another prompt"},),
                                       max_tokens=10, temperature=0, n=1))
    assert reply.text == "No" and judge.unexpected == ["another prompt"] and judge.bad_calls == []
    checks = selftest_run._judge_checks("s", judge)
    assert [c["ok"] for c in checks] == [False, True]


def test_upstream_substring_rule_passes():
    checks = selftest_scoring.run_selftest(lambda reply: "yes" in reply.strip().lower())
    assert all(c["ok"] for c in checks)


def test_stricter_yes_parse_is_caught():
    """The pitfall seen elsewhere: only "yes"/"yes." counted. "Yes, because..." must then fail the self-test."""
    checks = selftest_scoring.run_selftest(lambda reply: reply.strip().lower() in ("yes", "yes."))
    failed = {c["scenario"] for c in checks if not c["ok"]}
    assert failed == {"judge wording: Yes, because... / YES. / no", "judge wording: yes inside, both words, empty"}


def test_label_rule_that_says_yes_to_no_is_caught():
    checks = selftest_scoring.run_selftest(lambda reply: True)
    assert any(not c["ok"] for c in checks)


def test_cli_exits_1_on_failure(monkeypatch, capsys):
    monkeypatch.setattr(selftest_scoring, "run_selftest",
                        lambda: [{"scenario": "s", "figure": "f", "expected": 1.0, "got": 0.0, "ok": False}])
    assert selftest_scoring_cli.main([]) == 1
    assert "FAIL" in capsys.readouterr().out
