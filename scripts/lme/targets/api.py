"""The public target API: the one declared, versioned list of names a memory system (memory-ref, the user's copy
of it, a system of the user's own) may import from the toolkit. Everything else under ``lme`` is internal and
may move in any release; these names move only with a new major version.

``TARGET_API`` is its version: ``(major, minor)``. A minor adds names; a major removes or renames one (a copy
made against another major is refused at a run's start and updated by ``loop_target.py update-copy``).
``tests/targets/test_api.py`` holds the list of names of each major frozen."""

from __future__ import annotations

TARGET_API = (1, 0)
"""The target API's version: bump the minor when a name is added, the major when one is removed or renamed."""

PUBLIC = {
    "lme.targets": ("ChatRequest", "Completion", "Hypothesis", "LLM", "PublicItem", "PublicSession", "PublicTurn",
                    "TargetContext", "TargetError", "UserError", "load_module", "TARGET_API"),
    "lme.target_kit": ("answer_with_reader", "complete_reader", "build_fitted_request", "reader_settings",
                       "render_history", "sort_by_date", "BM25Index", "tokenize", "query_weights",
                       "connect_cache_db", "cached_keys"),
}
"""Module -> the names a memory system may import from it (``from lme.targets import Hypothesis``). Nothing else
of ``lme`` is public: not the driver (``run_target``, ``load_target``), not a submodule (``lme.models...``)."""

RECORD_FILE = "target_api.json"
"""The record ``loop_target.py use-copy`` writes in the copy (``memory_system/target_api.json``): the target API
and plugin version it was copied against (``references/SPEC.md``, "The copy's record")."""


def version_text(version: tuple[int, int] | list[int]) -> str:
    """``(1, 0)`` -> ``"1.0"``."""
    return ".".join(str(part) for part in version)


def is_public(module: str, name: str | None) -> bool:
    """Whether ``from module import name`` (``name`` None: ``import module``) uses the public API only."""
    if name is None:
        return module in PUBLIC
    return name in PUBLIC.get(module, ())
