"""The judge stage: ``Hypothesis`` -> ``Verdict`` (upstream's official judge, or the offline one).

The official label rule and call settings with the prompt from the user's upstream checkout, the request shape per
model family, the offline containment judge (never official), repeated verdicts, upstream's file flow, agreement
figures, the archive of official verdicts and the successor judge. The run stage puts the ``Verdict`` in a row."""
