"""Self-test of the scoring path: synthetic runs with known truth, through the real label rule, runs and metrics.

The command (its parser, ``main()`` and help text) is ``lme/cli/selftest_scoring.py``."""

from __future__ import annotations

from fractions import Fraction as F
from typing import Callable

from lme.score import metrics
from lme.core.facts import is_abstention
from lme.judge.official import label_from_reply
from lme.score import selftest_run
from lme.score.selftest_run import KU, MS, SSA, SSP, SSU, TR

# The stored runs' 14 items; 4 abstention items (never adjacent, so rotating answers never hands an abstention item
# another's).
ITEMS: tuple[tuple[str, str], ...] = tuple((qid, qtype) for qid, qtype, _ in selftest_run.ITEMS)
ABSTAIN = "I don't know: the history never mentions it."


def expected_response(qid: str) -> str:
    """What a perfect system says: the gold fact, or a refusal for an abstention item."""
    return ABSTAIN if is_abstention(qid) else f"the gold fact of {qid}"


def judge_reply(qid: str, hypothesis: str, yes: str = "Yes", no: str = "No") -> str:
    """A deterministic judge: ``yes`` exactly when the hypothesis is the expected response."""
    return yes if hypothesis == expected_response(qid) else no


def _first_of_type() -> set[str]:
    seen: dict[str, str] = {}
    for qid, qtype in ITEMS:
        seen.setdefault(qtype, qid)
    return set(seen.values())


def _rotated() -> dict[str, str]:
    ids = [q for q, _ in ITEMS]
    return {q: expected_response(ids[(i + 1) % len(ids)]) for i, q in enumerate(ids)}


def _replies(scenario: str) -> dict[str, str | None]:
    """The judge's reply per item for a scenario; None = the judge call failed (an error row)."""
    if scenario == "all expected answers":
        return {q: judge_reply(q, expected_response(q)) for q, _ in ITEMS}
    if scenario == "all I don't know":
        return {q: judge_reply(q, ABSTAIN) for q, _ in ITEMS}
    if scenario == "answers rotated between questions":
        rotated = _rotated()
        return {q: judge_reply(q, rotated[q]) for q, _ in ITEMS}
    if scenario == "judge wording: Yes, because... / YES. / no":
        firsts = _first_of_type()
        out = {}
        for i, (q, _) in enumerate(ITEMS):
            hyp = expected_response(q) if q in firsts else "something else"
            out[q] = judge_reply(q, hyp, yes="Yes, because it states the fact." if i % 2 else "YES.", no="no")
        return out
    if scenario == "judge failed on two multi-session items":
        return {q: None if q in ("ms-1", "ms-3") else judge_reply(q, expected_response(q)) for q, _ in ITEMS}
    if scenario == "judge wording: yes inside, both words, empty":
        return dict(WORDED_REPLIES)
    if scenario == "two items beyond the manifest, never run":
        return {q: judge_reply(q, expected_response(q)) for q, _ in ITEMS}
    if scenario == "judge failed on every preference item and on an abstention item":
        return {q: None if q in ("ssp-1", "tr-2_abs") else judge_reply(q, expected_response(q)) for q, _ in ITEMS}
    raise ValueError(scenario)


WORDED_REPLIES: tuple[tuple[str, str], ...] = (
    # (question id, judge reply); the label upstream's rule gives is written in the comment, by hand
    ("ssu-1", "Correct: yes."),        # yes (not at the start)
    ("ssu-2_abs", ""),                 # no (an empty reply)
    ("ssu-3", "Yes, I know it."),      # yes ("know" holds "no")
    ("ssa-1", "The answer is yes"),    # yes
    ("ssa-2", "No."),                  # no
    ("ssp-1", "yes, not no"),          # yes (both words)
    ("ms-1", "   "),                   # no (blank)
    ("ms-2_abs", "Nope"),              # no
    ("ms-3", "no, yes"),               # yes (both words, "no" first)
    ("ms-4_abs", "YES"),               # yes
    ("tr-1", "No, it is not correct"),  # no
    ("tr-2_abs", "The eyes have it"),  # yes ("eyes" holds "yes")
    ("ku-1", "Yes"),                   # yes
    ("ku-2", "no"),                    # no
)


# Expected figures, computed by hand from ITEMS (type sizes: SSU 3, SSA 2, SSP 1, MS 4, TR 2, KU 2; abstention 4).
ONE, ZERO = F(1), F(0)
EXPECTED: dict[str, dict[str, F]] = {
    "all expected answers": {
        **{f"strict {t}": ONE for t in (SSU, SSA, SSP, MS, TR, KU)},
        "strict macro": ONE, "strict micro": ONE, "strict abstention": ONE,
    },
    "all I don't know": {
        f"strict {SSU}": F(1, 3), f"strict {SSA}": ZERO, f"strict {SSP}": ZERO, f"strict {MS}": F(2, 4),
        f"strict {TR}": F(1, 2), f"strict {KU}": ZERO,
        "strict macro": (F(1, 3) + F(1, 2) + F(1, 2)) / 6,  # 2/9
        "strict micro": F(4, 14), "strict abstention": ONE,
    },
    "answers rotated between questions": {
        **{f"strict {t}": ZERO for t in (SSU, SSA, SSP, MS, TR, KU)},
        "strict macro": ZERO, "strict micro": ZERO, "strict abstention": ZERO,
    },
    "judge wording: Yes, because... / YES. / no": {
        f"strict {SSU}": F(1, 3), f"strict {SSA}": F(1, 2), f"strict {SSP}": ONE, f"strict {MS}": F(1, 4),
        f"strict {TR}": F(1, 2), f"strict {KU}": F(1, 2),
        "strict macro": (F(1, 3) + F(1, 2) + 1 + F(1, 4) + F(1, 2) + F(1, 2)) / 6,  # 37/72
        "strict micro": F(6, 14), "strict abstention": ZERO,
    },
    "judge failed on two multi-session items": {
        f"strict {MS}": F(2, 4), f"judged {MS}": ONE, f"strict {SSU}": ONE,
        "strict macro": (5 + F(1, 2)) / 6, "judged macro": ONE,
        "strict micro": F(12, 14), "judged micro": ONE, "strict abstention": ONE, "coverage": F(12, 14),
    },
    "judge wording: yes inside, both words, empty": {
        f"strict {SSU}": F(2, 3), f"strict {SSA}": F(1, 2), f"strict {SSP}": ONE, f"strict {MS}": F(2, 4),
        f"strict {TR}": F(1, 2), f"strict {KU}": F(1, 2),
        "strict macro": (F(2, 3) + F(1, 2) + 1 + F(1, 2) + F(1, 2) + F(1, 2)) / 6,  # 11/18
        "judged macro": F(11, 18),  # nothing failed: judged-only equals strict, and differs from micro (8/14)
        "strict micro": F(8, 14), "judged micro": F(8, 14),
        "strict abstention": F(2, 4), "judged abstention": F(2, 4),
    },
    "judge failed on every preference item and on an abstention item": {
        f"strict {SSP}": ZERO, f"strict {TR}": F(1, 2), f"judged {TR}": ONE,
        "strict macro": (4 + 0 + F(1, 2)) / 6,  # 3/4: the preference type counts, at 0, among the six
        "judged macro": ONE,  # over the five types with a judged item
        "strict micro": F(12, 14), "judged micro": ONE,
        "strict abstention": F(3, 4), "judged abstention": ONE, "coverage": F(12, 14),
    },
    "two items beyond the manifest, never run": {
        "strict micro": F(14, 16), "judged micro": ONE, "strict macro": ONE, f"strict {MS}": ONE,
        "strict abstention": ONE, "coverage": F(14, 16),
    },
}

UNATTRIBUTED = {"two items beyond the manifest, never run": 2}
"""Scenarios scored with ``unattributed`` items (``--n-total`` above the manifest): wrong in the overall strict
figure only."""

INTERVALS: tuple[tuple[int, int, float, float], ...] = (
    # (correct, n, low, high): 95% Wilson bounds solved by hand from (p^ - p)^2 = z^2 p (1 - p) / n, 6 decimals
    (0, 10, 0.0, 0.277533),
    (10, 10, 0.722467, 1.0),
    (5, 10, 0.236593, 0.763407),
    (7, 12, 0.319511, 0.806740),
    (475, 500, 0.927232, 0.965906),
)
INTERVALS_SHOWN: tuple[tuple[list[float] | None, str], ...] = (
    ([0.2365931, 0.7634069], "[0.237, 0.763]"),
    (None, "\u2014"),
)

DISPLAYED: tuple[tuple[float | None, str], ...] = (
    (7 / 160, "0.0438"),  # numpy rounding, as upstream prints it (Python's round gives 0.0437)
    (1 / 3, "0.3333"),
    (2 / 3, "0.6667"),
    (11 / 18, "0.6111"),
    (0.5, "0.5000"),
    (None, "\u2014"),
)
"""Figures as people read them: upstream's ``round(np.mean(...), 4)``, four decimals, a dash when undefined."""


def _scenario_checks(scenario: str, expected: dict[str, F], label_rule: Callable[[str], bool]) -> list[dict]:
    labels = {q: None if reply is None else bool(label_rule(reply)) for q, reply in _replies(scenario).items()}
    scored = metrics.score(labels, dict(ITEMS), unattributed=UNATTRIBUTED.get(scenario, 0))
    return [selftest_run.check(scenario, name, value, selftest_run.figure(scored, name))
            for name, value in expected.items()]


def _label_checks(label_rule: Callable[[str], bool]) -> list[dict]:
    return [c for scenario, expected in EXPECTED.items()
            for c in selftest_run.guarded(scenario, lambda s=scenario, e=expected: _scenario_checks(s, e, label_rule))]


def _interval_checks() -> list[dict]:
    checks = []
    for correct, n, low, high in INTERVALS:
        got = metrics.wilson_interval(correct, n) or [None, None]
        checks += [selftest_run.check("95% Wilson intervals", f"low, {correct}/{n}", low, got[0], tol=5e-7),
                   selftest_run.check("95% Wilson intervals", f"high, {correct}/{n}", high, got[1], tol=5e-7)]
    checks.append(selftest_run.check("95% Wilson intervals", "exact ends: low of 0/10, high of 10/10", [0.0, 1.0],
                                     [metrics.wilson_interval(0, 10)[0], metrics.wilson_interval(10, 10)[1]]))
    checks += [selftest_run.check("displayed figures", f"fmt_interval({value!r})", shown, metrics.fmt_interval(value))
               for value, shown in INTERVALS_SHOWN]
    return checks


def _display_checks() -> list[dict]:
    return [selftest_run.check("displayed figures", f"fmt({'None' if value is None else repr(value)})", shown,
                               metrics.fmt(value)) for value, shown in DISPLAYED]


def run_selftest(label_rule: Callable[[str], bool] | None = None) -> list[dict]:
    """Every check as ``{"scenario", "figure", "expected", "got", "ok"}``; failures are the ones with ok False.

    ``label_rule`` defaults to judge_official.label_from_reply; tests pass a broken rule to prove a break is caught
    (the stored runs always go through the real judge path)."""
    label_rule = label_from_reply if label_rule is None else label_rule
    checks = _label_checks(label_rule)
    checks += selftest_run.guarded("95% Wilson intervals", _interval_checks)
    checks += selftest_run.guarded("displayed figures", _display_checks)
    checks += selftest_run.stored_run_checks()
    return checks
