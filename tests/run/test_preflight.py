"""Pre-flight: one line per check, FAIL lines exit 2, a non-upstream judge prompt is a warning."""

from __future__ import annotations

from lme.run import preflight
from lme.cli import preflight as preflight_cli
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
