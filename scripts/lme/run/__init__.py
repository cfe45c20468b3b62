"""The run stage: each ``Question`` through the target and the judge into one ``ResultRow``, for a whole run.

The effective settings (``RunSettings``), one item (``run_item``: ``Hypothesis``, then ``Verdict``, then the row),
the run session (open, drive, finish: ``execute`` with ``RunOptions``, whose ``loop_check`` a ``--loop`` command
hands in), how a run ended -> its exit code (``outcome``; every code once: ``exit_codes``), resume and shard rules, the background worker, money,
``--dry-run``'s ``Estimate``, checks before a run and the batch phase. The store keeps what it writes."""
