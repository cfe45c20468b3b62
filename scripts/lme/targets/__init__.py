"""The targets stage: ``Question`` -> ``Hypothesis`` (the memory system under test; gold never reaches it).

The target API a plugin imports (``from lme.targets import ChatRequest, Hypothesis, PublicItem, TargetContext``),
loading a target by path, and the generation driver that hands it a gold-free ``PublicItem``. The judge stage
receives the ``Hypothesis``. A plugin imports only the public names ``lme.targets.api.PUBLIC`` lists (versioned:
``TARGET_API``), never the driver (``run_target``, ``load_target``) nor a submodule."""

from lme.targets.api import TARGET_API
from lme.targets.targets import (
    LLM,
    ChatRequest,
    Completion,
    Hypothesis,
    PublicItem,
    PublicSession,
    PublicTurn,
    TargetContext,
    TargetError,
    UserError,
    did_you_mean,
    hypothesis_from_response,
    imports_the_toolkit,
    load_module,
    parse_option,
    target_path,
)

__all__ = ("ChatRequest", "Completion", "Hypothesis", "LLM", "PublicItem", "PublicSession", "PublicTurn",
           "TargetContext", "TargetError", "UserError", "load_module", "TARGET_API",
           "did_you_mean", "hypothesis_from_response", "imports_the_toolkit", "parse_option", "target_path")
"""The public names (``lme.targets.api.PUBLIC["lme.targets"]``), then what the built-in targets and the generation
command import through this face (``RUN_NAMES`` in ``tests/structure/test_stage_faces.py``)."""
