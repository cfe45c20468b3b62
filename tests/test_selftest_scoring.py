"""selftest_scoring: the real label rule and metrics reproduce hand-computed figures; each listed break of the
scorer, applied to a copy of it, makes the self-test fail."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lme.score import selftest_scoring

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
"""The self-test and everything it imports: copied, then one file broken, then run."""

MUTATIONS = {
    "judged-only macro computed as micro": (
        "scripts/lme/score/metrics.py", '"accuracy_judged": _mean([per_type[t]["accuracy_judged"] for t in judged_types]),',
        '"accuracy_judged": overall["accuracy_judged"],'),
    "startswith('yes') label rule": (
        "scripts/lme/judge/judge_official.py", 'return "yes" in reply.strip().lower()',
        'return reply.strip().lower().startswith("yes")'),
    "label = 'no' not in reply": (
        "scripts/lme/judge/judge_official.py", 'return "yes" in reply.strip().lower()',
        'return "no" not in reply.strip().lower()'),
    "strict macro over judged types only": (
        "scripts/lme/score/metrics.py", '"accuracy_strict": _mean([per_type[t]["accuracy_strict"] for t in present]),',
        '"accuracy_strict": _mean([per_type[t]["accuracy_strict"] for t in judged_types]),'),
    "strict abstention over the judged-only denominator": (
        "scripts/lme/score/metrics.py", '"abstention": _block(abstention),',
        '"abstention": {**_block(abstention), "accuracy_strict": _block(abstention)["accuracy_judged"]},'),
    "Python round for display": (
        "scripts/lme/score/metrics.py",
        "return value if not math.isfinite(scaled) else math.copysign(round(scaled) / scale, value)",
        "return round(value, decimals)"),
    "3 decimals for display": ("scripts/lme/score/metrics.py", "DISPLAY_DECIMALS = 4", "DISPLAY_DECIMALS = 3"),
}


def _run_copy(tmp_path: Path, mutation: tuple[str, str, str] | None) -> subprocess.CompletedProcess:
    copy = tmp_path / "scripts"
    shutil.copytree(SCRIPTS, copy, ignore=shutil.ignore_patterns("__pycache__"))  # the scorer and what it imports
    if mutation is not None:
        name, old, new = mutation
        text = (tmp_path / name).read_text()
        assert text.count(old) == 1, f"the mutation's anchor is gone from {name}: update MUTATIONS"
        (tmp_path / name).write_text(text.replace(old, new))
    return subprocess.run([sys.executable, str(copy / "selftest_scoring.py")], capture_output=True, text=True,
                          cwd=tmp_path, timeout=60)


def test_an_unbroken_copy_of_the_scorer_passes(tmp_path):
    result = _run_copy(tmp_path, None)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "FAIL" not in result.stdout


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_each_listed_break_of_the_scorer_fails_the_selftest(tmp_path, name):
    result = _run_copy(tmp_path, MUTATIONS[name])
    assert result.returncode == 1, f"{name} passed the self-test:\n{result.stdout}"
    assert "| FAIL |" in result.stdout


def test_real_label_rule_and_metrics_pass_every_check(capsys):
    from lme.judge import judge_official  # noqa: F401  (our own module: a broken one fails here, never skips)
    checks = selftest_scoring.run_selftest()
    assert checks and [c for c in checks if not c["ok"]] == []
    assert selftest_scoring.main([]) == 0
    out = capsys.readouterr().out
    assert "| all I don't know | strict macro | 0.2222 | 0.2222 | pass |" in out


def test_upstream_substring_rule_passes():
    checks = selftest_scoring.run_selftest(lambda reply: "yes" in reply.strip().lower())
    assert all(c["ok"] for c in checks)
    assert len({c["scenario"] for c in checks}) == 8


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
    assert selftest_scoring.main([]) == 1
    assert "FAIL" in capsys.readouterr().out
