"""The targets stage: ``Question`` -> ``Hypothesis`` (the memory system under test; gold never reaches it).

The target API a plugin imports (``from lme.targets import ChatRequest, Hypothesis, PublicItem, TargetContext``),
loading a target by path, and the generation driver that hands it a gold-free ``PublicItem``. The judge stage
receives the ``Hypothesis``. A plugin imports only the public names ``lme.targets.api.PUBLIC`` lists (versioned:
``TARGET_API``), never the driver (``run_target``, ``load_target``) nor a submodule."""

from lme import lazy_face

_EXPORTS = {
    "ChatRequest": "lme.targets.targets", "Completion": "lme.targets.targets", "Hypothesis": "lme.targets.targets",
    "LLM": "lme.targets.targets", "PublicItem": "lme.targets.targets", "PublicSession": "lme.targets.targets",
    "PublicTurn": "lme.targets.targets", "TargetContext": "lme.targets.targets", "TargetError": "lme.targets.targets",
    "UserError": "lme.targets.targets", "load_module": "lme.targets.targets", "target_path": "lme.targets.targets",
    "parse_option": "lme.targets.targets",
    "did_you_mean": "lme.targets.targets", "imports_the_toolkit": "lme.targets.targets", "hypothesis_from_response": "lme.targets.targets",
    "run_target": "lme.targets.generation_driver", "load_target": "lme.targets.generation_driver",
    "describe_target": "lme.targets.generation_driver", "prepare_requests_by_role": "lme.targets.generation_driver",
    "find_item": "lme.targets.generation_driver", "generate_hypothesis": "lme.targets.generation_driver",
    "same_target": "lme.targets.identity", "TARGET_API": "lme.targets.api",
}
"""Name -> the module that holds it (full dotted path, so a rename is found by grep)."""

__all__ = tuple(_EXPORTS)
__getattr__, __dir__ = lazy_face(__name__, _EXPORTS)
