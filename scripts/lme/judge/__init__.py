"""The judge stage: ``Hypothesis`` -> ``Verdict`` (upstream's official judge, or the offline one).

The official label rule and call settings with the prompt from the user's upstream checkout, the request shape per
model family, the offline containment judge (never official), repeated verdicts, upstream's file flow, agreement
figures, the archive of official verdicts and the successor judge. The run stage puts the ``Verdict`` in a row."""

from lme import lazy_face

_EXPORTS = {
    "judge_verdict": "lme.judge.official", "Judged": "lme.judge.official", "JudgeRoute": "lme.judge.official",
    "JudgeInputError": "lme.judge.official", "JudgeModelMismatch": "lme.judge.official",
    "label_from_reply": "lme.judge.official", "build_prompt": "lme.judge.official",
    "judge_request": "lme.judge.official", "load_prompt_builder": "lme.judge.official",
    "checkout_commit": "lme.judge.official", "official_judge_gone": "lme.judge.official",
    "model_mismatch": "lme.judge.official", "CONTINUITY_HINT": "lme.judge.official",
    "offline_verdict": "lme.judge.offline_judge",
    "shape_for": "lme.judge.request_shapes", "REASONING_EFFORTS": "lme.judge.request_shapes",
    "StabilityRegistry": "lme.judge.stability",
    "cohens_kappa": "lme.judge.agreement_figures",
    "successor_spec": "lme.judge.successor_judge", "reasoning_effort": "lme.judge.successor_judge",
    "judge_file": "lme.judge.file_mode",
}
"""Name -> the module that holds it (full dotted path, so a rename is found by grep)."""

__all__ = tuple(_EXPORTS)
__getattr__, __dir__ = lazy_face(__name__, _EXPORTS)
