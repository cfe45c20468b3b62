"""The store stage: the run directory, where each ``ResultRow`` lands and ``RunData`` is read back.

Rows and completed marks (append-only, fsynced), run-meta and the manifest, the lock, run ids and finding runs,
rewriting a run for the loop, the files scoring leaves, the prompts a target sent. ``run_store`` re-exports its
sections' names for the callers that import it; this face names each from the module that defines it."""

from lme import lazy_face

_EXPORTS = {
    "RunData": "lme.store.run_store", "load_run": "lme.store.run_store",
    "append_row": "lme.store.run_rows", "append_rows": "lme.store.run_rows", "mark_completed": "lme.store.run_rows",
    "iter_rows": "lme.store.run_rows", "load_results": "lme.store.run_rows", "load_completed": "lme.store.run_rows",
    "write_meta": "lme.store.run_meta", "read_meta": "lme.store.run_meta", "peek_meta": "lme.store.run_meta",
    "read_manifest": "lme.store.run_meta", "write_manifest": "lme.store.run_meta",
    "RunLock": "lme.store.run_discovery", "runs_dir": "lme.store.run_discovery",
    "run_dir_for": "lme.store.run_discovery", "existing_run_dir": "lme.store.run_discovery",
    "latest_run": "lme.store.run_discovery", "runs_by_start": "lme.store.run_discovery",
    "validate_run_id": "lme.store.run_discovery",
    "rewrite_run": "lme.store.run_rewrite", "copy_run": "lme.store.run_rewrite",
    "read_metrics": "lme.store.run_outputs", "write_scorecard_files": "lme.store.run_outputs",
    "HISTORY_CHART": "lme.store.run_layout", "PER_TYPE_CHART": "lme.store.run_layout",
    "PromptStore": "lme.store.prompt_store", "StoredPrompts": "lme.store.prompt_store",
}
"""Name -> the module that holds it (full dotted path, so a rename is found by grep)."""

__all__ = tuple(_EXPORTS)
__getattr__, __dir__ = lazy_face(__name__, _EXPORTS)
