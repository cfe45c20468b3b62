"""Self-test of the scoring path: synthetic runs with known truth, through the real judge label rule and metrics.

Usage:
    python scripts/selftest_scoring.py

Each scenario answers a small synthetic item set in a known way (all expected answers; all "I don't know";
answers rotated between questions; judge replies worded "Yes, because...", "no", "YES."; replies holding "yes"
but not starting with it, replies holding both "yes" and "no", empty replies; judge failures, including every
item of one type and an abstention item). A deterministic judge replies; judge_official.label_from_reply (the one label
rule) turns replies into labels; metrics.score computes the figures; metrics.fmt renders them as people read them.
Each figure and each displayed string must equal the value written here by hand. Prints a pass/fail table; exit 1
on any failure. No network, no keys, no files.

What it catches (tests/test_selftest_scoring.py applies each break to a copy of the scorer): judged-only macro
computed as micro; a ``startswith("yes")`` label rule; label = ``"no" not in reply``; strict macro over judged
types only; strict abstention over the judged-only denominator; Python ``round`` for display (7/160 shows 0.0437,
upstream 0.0438); 3 decimals for display.
"""

from __future__ import annotations

from lme.core import entry_guard  # first: the venv check and a clean Ctrl-C (see its docstring)

entry_guard.start(__name__)

import argparse
import sys
from fractions import Fraction as F
from typing import Callable, Sequence

from lme.core import cli_parser
from lme.score import metrics
from lme.core.errors import run_main
from lme.core.facts import is_abstention
from lme.judge.judge_official import label_from_reply

SSU, SSA, SSP = "single-session-user", "single-session-assistant", "single-session-preference"
MS, TR, KU = "multi-session", "temporal-reasoning", "knowledge-update"

# 14 items; 4 abstention items (never adjacent, so rotating answers never hands an abstention item another's).
ITEMS: tuple[tuple[str, str], ...] = (
    ("ssu-1", SSU), ("ssu-2_abs", SSU), ("ssu-3", SSU),
    ("ssa-1", SSA), ("ssa-2", SSA),
    ("ssp-1", SSP),
    ("ms-1", MS), ("ms-2_abs", MS), ("ms-3", MS), ("ms-4_abs", MS),
    ("tr-1", TR), ("tr-2_abs", TR),
    ("ku-1", KU), ("ku-2", KU),
)
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
}

DISPLAYED: tuple[tuple[float | None, str], ...] = (
    (7 / 160, "0.0438"),  # numpy rounding, as upstream prints it (Python's round gives 0.0437)
    (1 / 3, "0.3333"),
    (2 / 3, "0.6667"),
    (11 / 18, "0.6111"),
    (0.5, "0.5000"),
    (None, "\u2014"),
)
"""Figures as people read them: upstream's ``round(np.mean(...), 4)``, four decimals, a dash when undefined."""


def _figure(scored: dict, name: str) -> float | None:
    kind, _, what = name.partition(" ")
    if name == "coverage":
        return scored["coverage"]
    key = f"accuracy_{kind}"
    if what == "macro":
        return scored["task_averaged"][key]
    if what == "micro":
        return scored["overall"][key]
    if what == "abstention":
        return scored["abstention"][key]
    return scored["per_type"][what][key]


def run_selftest(label_rule: Callable[[str], bool] | None = None) -> list[dict]:
    """Every check as ``{"scenario", "figure", "expected", "got", "ok"}``; failures are the ones with ok False.

    ``label_rule`` defaults to judge_official.label_from_reply; tests pass a broken rule to prove a break is caught.
    """
    label_rule = label_from_reply if label_rule is None else label_rule
    types = dict(ITEMS)
    checks: list[dict] = []
    for scenario, expected in EXPECTED.items():
        labels = {q: None if reply is None else bool(label_rule(reply)) for q, reply in _replies(scenario).items()}
        scored = metrics.score(labels, types)
        for name, value in expected.items():
            got = _figure(scored, name)
            ok = got is not None and abs(got - float(value)) < 1e-12
            checks.append({"scenario": scenario, "figure": name, "expected": float(value), "got": got, "ok": ok})
    for value, shown in DISPLAYED:
        got_text = metrics.fmt(value)
        checks.append({"scenario": "displayed figures", "figure": f"fmt({'None' if value is None else repr(value)})",
                       "expected": shown, "got": got_text, "ok": got_text == shown})
    return checks


def _cell(value: float | str | None) -> str:
    return value if isinstance(value, str) else metrics.fmt(value)


def main(argv: Sequence[str] | None = None) -> int:
    parser = cli_parser.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.parse_args(argv)
    checks = run_selftest()
    print("| scenario | figure | expected | got | result |")
    print("|---|---|---:|---:|---|")
    for c in checks:
        expected = c["expected"] if isinstance(c["expected"], str) else f"{c['expected']:.4f}"
        print(f"| {c['scenario']} | {c['figure']} | {expected} | {_cell(c['got'])} | "
              f"{'pass' if c['ok'] else 'FAIL'} |")
    failures = [c for c in checks if not c["ok"]]
    print(f"{len(checks) - len(failures)}/{len(checks)} checks passed", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(run_main(main))
