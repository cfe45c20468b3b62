"""Maintainers' tools, on no run path: the generator of the shipped synthetic sample (``sample_data``).

Above every run-time stage and below the commands; nothing on the way dataset -> scorecard imports it."""

from lme import lazy_face

_EXPORTS = {
    "write_sample": "lme.devtools.sample_data", "build_items": "lme.devtools.sample_data",
}
"""Name -> the module that holds it (full dotted path, so a rename is found by grep)."""

__all__ = tuple(_EXPORTS)
__getattr__, __dir__ = lazy_face(__name__, _EXPORTS)
