"""selftest_scoring: the real label rule and metrics reproduce hand-computed figures; a broken rule is caught."""

from __future__ import annotations

import pytest

import selftest_scoring


def test_real_label_rule_and_metrics_pass_every_check(capsys):
    pytest.importorskip("judge_shim")
    checks = selftest_scoring.run_selftest()
    assert checks and [c for c in checks if not c["ok"]] == []
    assert selftest_scoring.main([]) == 0
    out = capsys.readouterr().out
    assert "| all I don't know | strict macro | 0.2222 | 0.2222 | pass |" in out


def test_upstream_substring_rule_passes():
    checks = selftest_scoring.run_selftest(lambda reply: "yes" in reply.strip().lower())
    assert all(c["ok"] for c in checks)
    assert len({c["scenario"] for c in checks}) == 5


def test_stricter_yes_parse_is_caught():
    """The pitfall seen elsewhere: only "yes"/"yes." counted. "Yes, because..." must then fail the self-test."""
    checks = selftest_scoring.run_selftest(lambda reply: reply.strip().lower() in ("yes", "yes."))
    failed = {c["scenario"] for c in checks if not c["ok"]}
    assert failed == {"judge wording: Yes, because... / YES. / no"}


def test_label_rule_that_says_yes_to_no_is_caught():
    checks = selftest_scoring.run_selftest(lambda reply: True)
    assert any(not c["ok"] for c in checks)


def test_cli_exits_1_on_failure(monkeypatch, capsys):
    monkeypatch.setattr(selftest_scoring, "run_selftest",
                        lambda: [{"scenario": "s", "figure": "f", "expected": 1.0, "got": 0.0, "ok": False}])
    assert selftest_scoring.main([]) == 1
    assert "FAIL" in capsys.readouterr().out
