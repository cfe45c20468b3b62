"""memory-ref's options: the model stack (one ``provider:model`` per role) and the switches, parsed once.

``ctx.options`` keys are listed in the package docstring and ``references/model-config.md``; unknown keys are
ignored (the run may pass options meant for other targets), wrong types raise ``UserError`` naming the key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from lme.targets import UserError

from .index import PRESETS

ROLES = ("writer", "reader", "embed", "rerank")
FALLBACK_ROLES = ("writer", "reader")
"""Roles that fall back to the target's own ``provider:model``; the others are off unless set."""


@dataclass(frozen=True)
class Role:
    provider: str
    model: str

    @property
    def spec(self) -> str:
        return f"{self.provider}:{self.model}"


def parse_role(name: str, value: Any) -> Role | None:
    """``"provider:model"`` -> Role; None/""/"off" -> None."""
    if value is None or (isinstance(value, str) and value.strip().lower() in {"", "off", "none", "null"}):
        return None
    if isinstance(value, Mapping) and "provider" in value and "model" in value:
        return Role(str(value["provider"]), str(value["model"]))
    if not isinstance(value, str) or ":" not in value:
        raise UserError(
            f"targetOptions.stack.{name} must be 'provider:model' (e.g. 'openai:gpt-4o-mini'), got {value!r}"
        )
    provider, model = value.split(":", 1)
    if not provider.strip() or not model.strip():
        raise UserError(f"targetOptions.stack.{name} must be 'provider:model', got {value!r}")
    return Role(provider.strip(), model.strip())


def _flag(options: Mapping[str, Any], key: str, default: bool) -> bool:
    value = options.get(key, default)
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in {"true", "1", "yes", "on", "false", "0", "no", "off"}:
        return value.strip().lower() in {"true", "1", "yes", "on"}
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise UserError(f"target option {key} must be true or false, got {value!r}")


def _int(options: Mapping[str, Any], key: str, default: int, minimum: int = 1) -> int:
    value = options.get(key, default)
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = minimum - 1
    if isinstance(value, bool) or number < minimum or str(number) != str(value).strip():
        raise UserError(f"target option {key} must be an integer >= {minimum}, got {value!r}")
    return number


@dataclass(frozen=True)
class Settings:
    writer: Role | None
    reader: Role
    embed: Role | None
    rerank: Role | None
    symbolic_temporal: bool = True
    symbolic_resolver: bool = True
    symbolic_bypass: bool = True
    bypass_counts: bool = False
    use_writer: bool = True
    top_k: int = 10
    """At most this many sessions reach the reader (never every session of an item)."""
    adaptive_k: bool = True
    """Show fewer than ``top_k`` when the retrieval score drops, except to questions that count, order or compare
    (``index.adaptive_k``)."""
    min_k: int = 3
    granularity: str = "session"
    """``session`` (session documents, assistant turns, facts; the best-turn list at the preset's weight) or
    ``turn`` (user-turn documents and facts only)."""
    retriever: str = "best"
    """A preset of ``index.PRESETS`` (``best``, ``fused-v1``, ``plain``)."""
    rerank_candidates: int = 20
    writer_parallel: int = 4
    max_evidence_chars: int = 60_000
    facts_cache: str | None = None

    def roles(self) -> dict[str, str | None]:
        return {name: (getattr(self, name).spec if getattr(self, name) else None) for name in ROLES}


def load_settings(options: Mapping[str, Any], provider: str, model: str, cache_dir: str | None) -> Settings:
    """Settings from ``ctx.options`` with the documented defaults."""
    stack = options.get("stack") or {}
    if not isinstance(stack, Mapping):
        raise UserError(f"targetOptions.stack must be an object of role -> 'provider:model', got {stack!r}")
    unknown = sorted(set(stack) - set(ROLES) - {"judge"})
    if unknown:
        raise UserError(f"targetOptions.stack has unknown role(s) {unknown}; roles are {list(ROLES)}")
    own = Role(provider, model)
    roles = {name: parse_role(name, stack.get(name)) for name in ROLES}
    for name in FALLBACK_ROLES:
        if name not in stack or stack.get(name) is None:
            roles[name] = own
    granularity = str(options.get("granularity", "session"))
    if granularity not in {"session", "turn"}:
        raise UserError(f"target option granularity must be 'session' or 'turn', got {granularity!r}")
    retriever = str(options.get("retriever", "best"))
    if retriever not in PRESETS:
        raise UserError(f"target option retriever must be one of {sorted(PRESETS)}, got {retriever!r}")
    use_writer = _flag(options, "use_writer", _flag(options, "writer", True) if "writer" in options else True)
    reader = roles["reader"] or own
    return Settings(
        writer=roles["writer"] if use_writer else None,
        reader=reader,
        embed=roles["embed"],
        rerank=roles["rerank"],
        symbolic_temporal=_flag(options, "symbolic_temporal", True),
        symbolic_resolver=_flag(options, "symbolic_resolver", True),
        symbolic_bypass=_flag(options, "symbolic_bypass", True),
        bypass_counts=_flag(options, "bypass_counts", False),
        use_writer=use_writer and roles["writer"] is not None,
        top_k=_int(options, "top_k", 10),
        adaptive_k=_flag(options, "adaptive_k", True),
        min_k=_int(options, "min_k", 3),
        granularity=granularity,
        retriever=retriever,
        rerank_candidates=_int(options, "rerank_candidates", 20),
        writer_parallel=_int(options, "writer_parallel", 4),
        max_evidence_chars=_int(options, "max_evidence_chars", 60_000, minimum=1000),
        facts_cache=str(options.get("facts_cache") or cache_dir or "") or None,
    )
