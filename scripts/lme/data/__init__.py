"""The data stage, the start of the way through: dataset -> ``Question``.

Streams and validates LongMemEval files (sha256 and item fingerprints in one pass), recognises a release, names a
dataset in reports, reads a hypotheses file and upstream's file formats. The target stage receives what it yields."""

from lme import lazy_face

_EXPORTS = {
    "iter_items": "lme.data.dataset", "load_questions": "lme.data.dataset", "scan": "lme.data.dataset",
    "guess_variant": "lme.data.dataset",
    "display_name": "lme.data.dataset_label", "recognition_line": "lme.data.dataset_label",
    "recognize_file": "lme.data.fingerprints", "reference_sets": "lme.data.fingerprints",
    "item_sha256": "lme.data.item_hash",
    "HypothesesFile": "lme.data.hypotheses_file", "MISSING_HYPOTHESIS": "lme.data.hypotheses_file",
    "check_run_inputs": "lme.data.hypotheses_file",
    "load_hypotheses": "lme.data.upstream_files", "load_references": "lme.data.upstream_files",
    "upstream_bytes": "lme.data.upstream_files", "upstream_lines": "lme.data.upstream_files",
}
"""Name -> the module that holds it (full dotted path, so a rename is found by grep)."""

__all__ = tuple(_EXPORTS)
__getattr__, __dir__ = lazy_face(__name__, _EXPORTS)
