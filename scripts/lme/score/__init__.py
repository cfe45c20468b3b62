"""The score stage: ``RunData`` -> ``Scorecard`` (micro, task-averaged and abstention accuracy, every time).

The official figures and retrieval figures, where verdicts came from, the frozen ``Scorecard`` (``Figures`` per
block; ``to_dict`` is metrics.json), run comparison (``Comparison``, McNemar), the scoring self-test, failure
clusters, upstream's formats, un-completing items and a round's re-test set. The report stage renders its records."""

from lme import lazy_face

_EXPORTS = {
    "build_scorecard": "lme.score.scoring",
    "Scorecard": "lme.score.scorecard_record", "Figures": "lme.score.scorecard_record",
    "compare": "lme.score.run_comparison",
    "Comparison": "lme.score.comparison_record",
    "TriggerSet": "lme.score.trigger_set",
    "run_selftest": "lme.score.selftest_scoring",
    "export_eval_results": "lme.score.interop", "export_hypotheses": "lme.score.interop",
    "export_reference": "lme.score.interop", "import_eval_results": "lme.score.interop",
}
"""Name -> the module that holds it (full dotted path, so a rename is found by grep)."""

__all__ = tuple(_EXPORTS)
__getattr__, __dir__ = lazy_face(__name__, _EXPORTS)
