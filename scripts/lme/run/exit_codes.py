"""Every exit status a run can end with, defined once. ``run_benchmark.py`` ends with one; ``run_status.py``
reports the same one for the same ending (4 only while the run runs). The plugin's Markdown names them
(``skills/run-benchmark/SKILL.md``, "What the exit status means"; ``tests/docs/test_markdown_names.py`` holds the two
together)."""

from __future__ import annotations

from lme.core.errors import EXIT_INTERRUPTED, EXIT_USER_ERROR

EXIT_COMPLETED = 0
EXIT_FAILED = 1
"""Item errors after retries, a failed batch, a crash; also ``run_status.py``'s ``dead`` and ``broken``."""
EXIT_JUDGE_GONE = EXIT_USER_ERROR
"""The official judge answered not_found / gone (retired), or a judge response named another model than the pinned
one: one line naming the ways on, as for a user mistake; the items not judged stay pending."""
EXIT_BILLING = 3
EXIT_RUNNING = 4
"""Only ``run_status.py``: the run is still running."""
EXIT_NEEDS_CONFIRMATION = 5
"""The estimate is above ``confirmCostUsd``: nothing started; ``--yes`` once the user approved."""
EXIT_COST_CAP = 6
"""Paused at the ``--max-cost`` cap: resume with a higher cap."""
EXIT_BATCH_STOPPED = 7
"""Paused at a cancelled batch: what ran is recorded, the rest stays pending (a resume submits it fresh)."""
EXIT_CODE_CHANGED = 8
"""Paused: the target's code changed during the run; the items in flight finished under the code they started
with, the rest stay pending (the resume runs them with the new code, and the scorecard counts the rows per version)."""
PAUSED_EXITS = (EXIT_COST_CAP, EXIT_BATCH_STOPPED, EXIT_CODE_CHANGED)
"""The endings run-meta records as ``paused``: its ``exit_status`` says which."""

