"""Self-test of the scoring path: synthetic runs with known truth, through the real label rule, runs and metrics.

Usage:
    python scripts/selftest_scoring.py

Each scenario answers a small synthetic item set in a known way (all expected answers; all "I don't know";
answers rotated between questions; judge replies worded "Yes, because...", "no", "YES."; replies holding "yes"
but not starting with it, replies holding both "yes" and "no", empty replies; judge failures, including every
item of one type and an abstention item; items beyond the manifest). judge_official.label_from_reply (the one
label rule) turns replies into labels; metrics.score computes the figures, metrics.wilson_interval the 95%
intervals, metrics.fmt and fmt_interval render them as people read them. Then two stored runs
(``selftest_run``) take the rest of the way: the text the judge is given (upstream's prompt cases, stripped
reader output, a hypotheses file judged as written), which row of an item counts (last row, shards merged, a
manifest item with no row), the scorecard's figures with and without the registry's gold errors, retrieval
metrics, and the comparison's exact McNemar p-value. Each figure and each displayed string must equal the value
written here by hand. Prints a pass/fail table; exit 1 on any failure. No network, no keys, no project state:
the stored runs live in a temporary directory that is removed. The prompt builder there is a stand-in in our own
words with upstream's five cases: the self-test checks what we hand the builder, not your checkout's templates.

What it catches: tests/score/test_selftest_scoring.py plants each mistake of tests/selftest_mutations.py (micro for
macro, the label rule's edge cases, denominators, rounding, the interval, the row that counts, the judge's text,
the gold-error figure, retrieval, McNemar) in a copy of the toolkit, one at a time, and asserts this fails.
"""

from __future__ import annotations

import sys
from typing import Sequence

from lme.core import cli_parser


def _cell(value: object, digits: int = 4) -> str:
    if value is None:
        return "\u2014"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def main(argv: Sequence[str] | None = None) -> int:
    parser = cli_parser.documented_parser(__doc__)
    parser.parse_args(argv)
    from lme.score import selftest_scoring  # after parsing: --help needs none of the scoring it checks
    checks = selftest_scoring.run_selftest()
    print("| scenario | figure | expected | got | result |")
    print("|---|---|---:|---:|---|")
    for c in checks:
        digits = c.get("digits", 4)
        print(f"| {c['scenario']} | {c['figure']} | {_cell(c['expected'], digits)} | {_cell(c['got'], digits)} | "
              f"{'pass' if c['ok'] else 'FAIL'} |")
    failures = [c for c in checks if not c["ok"]]
    print(f"{len(checks) - len(failures)}/{len(checks)} checks passed", file=sys.stderr)
    return 1 if failures else 0
