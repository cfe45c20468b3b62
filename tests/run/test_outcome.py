"""The run's ending -> exit status, run-meta status and error line: one pure function, every branch in a table."""

from __future__ import annotations

import pytest

from lme.judge.official import CONTINUITY_HINT
from lme.run import exit_codes
from lme.run.outcome import (
    EXIT_BATCH_STOPPED,
    EXIT_BILLING,
    EXIT_CODE_CHANGED,
    EXIT_COMPLETED,
    EXIT_COST_CAP,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_JUDGE_GONE,
    STATUS_BY_EXIT,
    Ending,
    Outcome,
    outcome_of,
)

CODE_LINE = ("stopped taking items: the code changed during the run (memsys.py changed); the items in flight finished "
             "under the code they started with, the rest stay pending: resume to run them with the new code")
OVER = {"errors": 3, "error_threshold": 2, "errors_by_kind": {"timeout": 2, "server": 1}}
ERRORS_LINE = "3 item error(s) after retries (server: 1, timeout: 2); resume to retry them"

TABLE = [
    ("the items ran out", Ending(), Outcome(EXIT_COMPLETED, "completed", None)),
    ("errors at the threshold still complete", Ending(errors=2, error_threshold=2), Outcome(EXIT_COMPLETED, "completed", None)),
    ("a judge naming another model", Ending(stop_reason="judge_mismatch", judge_message="gpt-4o-mini answered"),
     Outcome(EXIT_JUDGE_GONE, "failed", "stopped at the first judge response naming another model: gpt-4o-mini "
                                        "answered; the items not judged stay pending")),
    ("the official judge gone", Ending(stop_reason="judge_gone"), Outcome(EXIT_JUDGE_GONE, "failed", CONTINUITY_HINT)),
    ("items left pending by a gone judge, the intake going on", Ending(judge_gone=4),
     Outcome(EXIT_JUDGE_GONE, "failed", CONTINUITY_HINT)),
    ("a gone judge wins over billing", Ending(stop_reason="billing", judge_gone=1, billing_message="no credit"),
     Outcome(EXIT_JUDGE_GONE, "failed", CONTINUITY_HINT)),
    ("a failed batch", Ending(batch_stop="batch_failed", batch_message="batch b1 failed"),
     Outcome(EXIT_FAILED, "failed", "batch b1 failed")),
    ("a batch blocked on billing", Ending(batch_stop="billing", batch_message="no credit"),
     Outcome(EXIT_BILLING, "failed", "no credit")),
    ("a cancelled batch", Ending(batch_stop="cancelled", batch_message="batch b1 cancelled"),
     Outcome(EXIT_BATCH_STOPPED, "paused", "batch b1 cancelled")),
    ("a cancelled batch and a signal: the signal", Ending(batch_stop="cancelled", stop_reason="interrupted"),
     Outcome(EXIT_INTERRUPTED, "interrupted", None)),
    ("billing", Ending(stop_reason="billing", billing_message="credit balance too low"),
     Outcome(EXIT_BILLING, "failed", "blocked on API billing: credit balance too low")),
    ("billing wins over a code change", Ending(stop_reason="billing", billing_message="no credit",
                                               code_changed="memsys.py changed"),
     Outcome(EXIT_BILLING, "failed", "blocked on API billing: no credit")),
    ("the code changed", Ending(stop_reason="code_changed", code_changed="memsys.py changed"),
     Outcome(EXIT_CODE_CHANGED, "paused", CODE_LINE)),
    ("a code change wins over the error count", Ending(stop_reason="code_changed", code_changed="memsys.py changed",
                                                       **OVER),
     Outcome(EXIT_CODE_CHANGED, "paused", CODE_LINE)),
    ("a signal", Ending(stop_reason="interrupted"), Outcome(EXIT_INTERRUPTED, "interrupted", None)),
    ("a signal wins over the error count", Ending(stop_reason="interrupted", **OVER),
     Outcome(EXIT_INTERRUPTED, "interrupted", None)),
    ("too many item errors", Ending(stop_reason="errors", **OVER), Outcome(EXIT_FAILED, "failed", ERRORS_LINE)),
    ("too many errors wins over the cost cap", Ending(stop_reason="cost_cap", cap_message="cap", **OVER),
     Outcome(EXIT_FAILED, "failed", ERRORS_LINE)),
    ("the cost cap", Ending(stop_reason="cost_cap", cap_message="cost cap reached: $1.0000 spent"),
     Outcome(EXIT_COST_CAP, "paused", "cost cap reached: $1.0000 spent")),
]


@pytest.mark.parametrize("ending, expected", [row[1:] for row in TABLE], ids=[row[0] for row in TABLE])
def test_each_ending_has_one_exit_status_status_and_line(ending, expected):
    assert outcome_of(ending) == expected


def test_every_exit_status_but_the_judges_has_a_word_and_the_driver_exit_codes_name_the_same_numbers():
    assert {o.exit_code for _, _, o in TABLE} - {EXIT_JUDGE_GONE} <= set(STATUS_BY_EXIT)
    assert (exit_codes.EXIT_COMPLETED, exit_codes.EXIT_FAILED, exit_codes.EXIT_BILLING, exit_codes.EXIT_JUDGE_GONE,
            exit_codes.EXIT_COST_CAP, exit_codes.EXIT_BATCH_STOPPED, exit_codes.EXIT_CODE_CHANGED,
            exit_codes.EXIT_INTERRUPTED) == (0, 1, 3, 2, 6, 7, 8, 130)
