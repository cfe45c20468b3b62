"""The score stage: ``RunData`` -> ``Scorecard`` (micro, task-averaged and abstention accuracy, every time).

The official figures and retrieval figures, where verdicts came from, the frozen ``Scorecard`` (``Figures`` per
block; ``to_dict`` is metrics.json), run comparison (``Comparison``, McNemar), the scoring self-test, failure
clusters, upstream's formats, un-completing items and a round's re-test set. The report stage renders its records."""
