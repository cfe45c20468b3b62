"""The core stage, under every other: what the whole way through the data shares.

dataset -> target (Hypothesis) -> judge (Verdict) -> result row -> scorecard: the typed records at those boundaries
(``Question``, ``Hypothesis``, ``CallRecord``, ``Verdict``, ``ResultRow``, ``RunMeta`` and its blocks), the facts,
one-line user errors, time, crash-safe files and the one argument parser. Mostly stdlib only: setup and the hooks
import it on a bare system python."""
