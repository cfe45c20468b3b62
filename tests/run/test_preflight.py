"""Pre-flight: one line per check, FAIL lines exit 2, a non-upstream judge prompt is a warning, your own system seen
and run once (the smoke test, also where the cost gate asks)."""

from __future__ import annotations

import pytest

from lme.run import preflight
from lme.cli import preflight as preflight_cli
from lme.cli import run_benchmark
from lme.core.errors import run_main
from run_project import make_project


def test_a_stand_in_judge_prompt_is_a_warning_and_the_checks_pass(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-DUMMY")
    project = make_project(tmp_path / "p")
    assert run_main(preflight_cli.main, ["--project", str(project)]) == 0
    out = capsys.readouterr().out
    assert "WARN judge prompt in" in out and "non-official" in out
    assert "ok   OPENAI_API_KEY is set" in out and "sk-test-DUMMY" not in out
    # the sample is named as every report names it, never as LongMemEval _s
    assert out.rstrip().endswith(", dataset synthetic sample in the _s schema, not LongMemEval _s")


def test_a_missing_key_and_a_missing_checkout_fail_with_their_fixes(tmp_path, capsys):
    project = make_project(tmp_path / "p")
    code = run_main(preflight_cli.main, ["--project", str(project), "--longmemeval-root", str(tmp_path / "nowhere")])
    captured = capsys.readouterr()
    assert code == 2
    assert "FAIL OPENAI_API_KEY is not set: export it" in captured.out
    assert "FAIL upstream LongMemEval checkout missing" in captured.out and "--clone-upstream" in captured.out
    assert "2 pre-flight check(s) failed" in captured.err


def test_an_unknown_target_is_a_fail_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-DUMMY")
    project = make_project(tmp_path / "p")
    assert run_main(preflight_cli.main, ["--project", str(project), "--target", "nosuch"]) == 2
    assert "FAIL target nosuch" in capsys.readouterr().out


# --------------------------------------------------------------------------- your own system: seen, and run once


def _memsys(project, body):
    (project / "memsys.py").write_text(body)


def test_preflight_runs_one_item_through_your_system_and_says_what_it_answered(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-DUMMY")
    project = make_project(tmp_path / "p")
    _memsys(project, "def generate(item, ctx):\n    return {'hypothesis': 'You adopted a beagle named Biscuit.'}\n")
    assert run_main(preflight_cli.main, ["--project", str(project), "--target", "memsys.py"]) == 0
    out = capsys.readouterr().out
    assert "ok   target smoke test (d20b14a8, one item, no judge call): answered 'You adopted a beagle named " \
           "Biscuit.' in " in out


def test_preflight_fails_a_system_that_fails_its_smoke_test_with_the_cause(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-DUMMY")
    project = make_project(tmp_path / "p")
    _memsys(project, "def generate(item, ctx):\n    raise KeyError('sessions_by_date')\n")
    assert run_main(preflight_cli.main, ["--project", str(project), "--target", "python", "--target-option",
                                         "path=memsys.py"]) == 2
    out = capsys.readouterr().out
    (line,) = [x for x in out.splitlines() if "smoke test" in x]
    assert line.startswith("FAIL target smoke test") and line.endswith("KeyError: 'sessions_by_date'")


@pytest.mark.parametrize("args, needle", [
    (["--target", "python"], "FAIL target python: the python target needs option path"),
    (["--target", "python", "--target-option", "path=memsy.py"], "is not a file (did you mean "),
])
def test_preflight_fails_a_python_target_that_would_fail_every_item(tmp_path, capsys, monkeypatch, args, needle):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-DUMMY")
    project = make_project(tmp_path / "p")
    _memsys(project, "def generate(item, ctx):\n    return {'hypothesis': 'x'}\n")
    assert run_main(preflight_cli.main, ["--project", str(project), *args]) == 2
    out = capsys.readouterr().out
    assert needle in out and "smoke test" not in out


def test_the_cost_gate_runs_the_smoke_test_before_it_asks(tmp_path, capsys, fake_llm):
    project = make_project(tmp_path / "p", confirmCostUsd=0)
    _memsys(project, "def generate(item, ctx):\n    return {'hypothesis': 'Luna'}\n")
    assert run_main(run_benchmark.main, ["--project", str(project), "--target", "memsys.py"]) == 5
    out = capsys.readouterr().out
    smoke, gate = out.index("ok   target smoke test (d20b14a8"), out.index("cost gate: this run needs confirmation")
    assert smoke < gate and "answered 'Luna'" in out
    assert not [q for q in fake_llm.requests if (q.get("body") or {}).get("max_tokens") == 10]  # no judge call
    assert not (project / ".longmemeval-benchmarks" / "runs").exists()
