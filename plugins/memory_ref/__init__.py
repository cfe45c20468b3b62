"""memory-ref: the reference memory system (writer -> fused index -> optional rerank -> symbolic layers -> reader).

Entry point: ``generate(item: PublicItem, ctx: TargetContext) -> Hypothesis``. Options (``ctx.options``, from
config ``targetOptions`` or ``--target-option k=v``; see ``references/model-config.md``):

- ``stack``: ``{"writer", "reader", "embed", "rerank"}`` each ``"provider:model"`` or null. writer/reader fall back
  to the target's own provider:model; embed/rerank are off unless set.
- ``symbolic_temporal``, ``symbolic_resolver``, ``symbolic_bypass``: booleans, default true.
- ``bypass_counts``: let the bypass answer "how many X" from deduplicated facts (default false).
- ``use_writer`` (alias ``writer``): extract facts per session (default true).
- ``retriever`` (``best``): a preset of ``index.PRESETS`` (``best``, ``fused-v1``, ``plain``);
- ``top_k`` (10): at most this many sessions shown to the reader; ``adaptive_k`` (true): fewer when the retrieval
  score drops (not for questions that count, order or compare), never fewer than ``min_k`` (3) and never every
  session; ``granularity`` (``session`` | ``turn``);
  ``rerank_candidates`` (20); ``writer_parallel`` (4); ``max_evidence_chars`` (60000);
  ``facts_cache``: directory of the writer's SQLite cache (default ``ctx.cache_dir``; none = no cache).

The generation driver loads this file by path; the package's modules are imported relatively when it was loaded
as a package, and otherwise by loading this directory as the package ``memory_ref``.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent


def submodule(module: str) -> Any:
    """This package's module ``module`` (``pipeline``, ``index`` ...), however this file was loaded."""
    own = sys.modules.get(__name__)
    if __spec__ is not None and __spec__.submodule_search_locations and own is not None:
        return importlib.import_module(f"{__name__}.{module}")
    name = "memory_ref"
    package = sys.modules.get(name)
    if package is None or not getattr(package, "__path__", None):
        from lme.targets import load_module

        load_module(_HERE / "__init__.py", name)
    return importlib.import_module(f"{name}.{module}")


def _pipeline() -> Any:
    return submodule("pipeline")


def generate(item: Any, ctx: Any) -> Any:
    """Answer ``item`` (PublicItem) with the memory-ref pipeline under ``ctx`` (TargetContext) -> Hypothesis."""
    return _pipeline().generate(item, ctx)


BATCHABLE_ROLES = ("writer",)
"""Roles ``run_benchmark.py --batch all`` may send through the providers' Batch APIs before the items run: the
writer's calls are one per session, independent of each other and of the question, and ``preview`` builds them
exactly; the items then read the batches' replies (at batch prices) instead of calling."""
CACHED_ROLES = ("writer",)
"""Roles whose identical requests this target serves from its own cache (the facts cache): a dry run counts each
distinct request of these roles once per run."""
DRY_RUN_ASSUMPTIONS = ("reader prompt assumes a facts block of about 1,300 characters per shown session and is counted "
                       "on every item (the bypass may skip it); embedding calls are not counted (see preview.py)")


def prepare_requests_by_role(item: Any, ctx: Any) -> dict[str, list[Any]]:
    """The requests ``generate`` would send for ``item``, by role (writer, rerank, reader); see ``preview.py``."""
    return importlib.import_module(_pipeline().__name__.rsplit(".", 1)[0] + ".preview").requests_by_role(item, ctx)


def prepare_requests(item: Any, ctx: Any) -> list[Any]:
    return [request for requests in prepare_requests_by_role(item, ctx).values() for request in requests]


def describe(options: Any) -> dict[str, Any]:
    """The effective options (defaults filled in); raises UserError on a bad option, before any item runs."""
    stack = importlib.import_module(_pipeline().__name__.rsplit(".", 1)[0] + ".stack")
    settings = stack.load_settings(dict(options), "provider", "model", None)
    def plain(value: Any) -> Any:
        return value if value is None or isinstance(value, (bool, int, float, str)) else str(value)

    return {"name": "memory-ref", **{k: plain(v) for k, v in vars(settings).items() if not k.startswith("_")}}
