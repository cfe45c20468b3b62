"""Target ``python``: benchmark your own memory system written as a Python file. See plugins/README.md.

Option ``path``: a ``.py`` file defining ``generate(item: dict, ctx: dict) -> dict`` with the same contract as
the ``command`` adapter, using plain dicts so the file needs nothing from this toolkit:

- ``item``: ``{"question", "question_date", "sessions": [{"session_id", "date", "turns": [{"role",
  "content"}]}]}`` (no gold, aliased session ids, no question id or type);
- ``ctx``: ``{"provider", "model", "options", "cache_dir"}`` (``options`` are the other target options);
- returns ``{"hypothesis": str, "tokensIn"?, "tokensOut"?, "retrieved_session_ids"?, "debug"?}``.

The file is imported once per (path, modification time). An exception inside it is this item's TargetError.
"""

from __future__ import annotations

import json
import threading
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any, Mapping

from lme.targets import (
    ChatRequest,
    Hypothesis,
    PublicItem,
    TargetContext,
    TargetError,
    hypothesis_from_response,
    load_module,
)

NAME = "python"
ADAPTER_OPTIONS = ("path",)


def user_file(options: Mapping[str, Any]) -> Path:
    raw = options.get("path")
    if not raw:
        raise ValueError("the python target needs option path, e.g. --target-option path=my_memory.py")
    path = Path(str(raw)).expanduser().resolve()
    if not path.is_file():
        raise ValueError(f"python target: {raw} is not a file")
    return path


def describe(options: Mapping[str, Any]) -> dict[str, Any]:
    return {"name": NAME, "path": str(options.get("path"))}


def prepare_requests(item: PublicItem, ctx: TargetContext) -> list[ChatRequest]:
    return []  # the user's code makes its own calls: unknown to a dry run


_LOAD_LOCK = threading.Lock()


@lru_cache(maxsize=16)
def _load(path: str, mtime_ns: int) -> ModuleType:
    name = f"lme_user_target_{Path(path).stem}_{mtime_ns}"
    try:
        module = load_module(path, name, error=TargetError)
    except TargetError:
        raise TargetError(f"python target: cannot import {path}") from None
    if not callable(getattr(module, "generate", None)):
        raise TargetError(f"python target: {path} defines no generate(item, ctx)")
    return module


def generate(item: PublicItem, ctx: TargetContext) -> Hypothesis:
    path = user_file(ctx.options)
    with _LOAD_LOCK:
        module = _load(str(path), path.stat().st_mtime_ns)
    user_ctx = {
        "provider": ctx.provider,
        "model": ctx.model,
        "options": {k: v for k, v in ctx.options.items() if k not in ADAPTER_OPTIONS},
        "cache_dir": ctx.cache_dir,
    }
    plain_item = json.loads(json.dumps(item.to_dict()))  # lists and dicts only, a copy the user may mutate
    reply = module.generate(plain_item, user_ctx)
    return hypothesis_from_response(reply, f"python target {path.name}")
