"""The loop's model stack, set before the first spend: a cheap writer (not the reader model), then the cost of a round.
The writer is memory-ref's (and its copies'): a user's own system gets only its model (``--target-model``).

The command (its parser, ``main()`` and help text) is ``lme/cli/loop_stack.py``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lme.core import fileio
from lme.core.errors import UserError
from lme.core.config_file import config_path
from lme.loop import rules
from lme.targets.identity import is_reference

CHEAP_WRITER = "openai:gpt-4o-mini"


def reader_of(cfg: dict[str, Any]) -> str:
    loop = cfg.get("loop") or {}
    model = loop.get("target_model") or f"{cfg.get('targetProvider')}:{cfg.get('targetModel')}"
    return model if ":" in model else f"{cfg.get('targetProvider')}:{model}"


def stack_of(cfg: dict[str, Any]) -> dict[str, Any]:
    options = (cfg.get("loop") or {}).get("targetOptions") or {}
    return dict(options.get("stack") or (cfg.get("targetOptions") or {}).get("stack") or {})


def loop_target(project: Path) -> tuple[str, bool]:
    """The loop's target and whether it is memory-ref (or a copy of it), whose model stack has a writer."""
    target = str(rules.loop_config(project).get("target") or "")
    return target, is_reference(target, Path(project))


def set_stack(project: Path, writer: str | None = None) -> list[str]:
    """Give the loop a writer (kept when configured, unless ``writer`` is given); returns lines to print. For a
    user's own system: its model only (``set_target_model``)."""
    if writer is not None and ":" not in writer:
        raise UserError(f"--writer {writer!r} is not provider:model", fix=f"e.g. --writer {CHEAP_WRITER}")
    target, reference = loop_target(project)
    if not reference:
        if writer is not None:
            raise UserError(f"--writer is memory-ref's writer model: the loop's target {target} is your own system, "
                            "which gets no writer", fix="leave --writer out (your system's model is "
                            "loop.target_model, or the config's targetProvider:targetModel)")
        return set_target_model(project, target)
    cfg = rules.read_project_config(project, required=True)
    stack = stack_of(cfg)
    reader = reader_of(cfg)
    chosen = writer or stack.get("writer") or CHEAP_WRITER
    lines = []
    if stack.get("writer") != chosen:
        stack["writer"] = chosen
        loop = cfg.setdefault("loop", {})
        options = loop.setdefault("targetOptions", {})
        options["stack"] = stack
        fileio.write_atomic_text(config_path(project), json.dumps(cfg, indent=2) + "\n")
        lines.append(f"set loop.targetOptions.stack.writer = {chosen} in {config_path(project)}")
    lines.append(f"stack: writer {chosen}, reader {stack.get('reader') or reader}")
    if chosen == (stack.get("reader") or reader) and chosen != CHEAP_WRITER:
        lines.append(f"warning: the writer is the reader model ({chosen}): writer calls are most of a first "
                     f"round's cost; a cheap writer ({CHEAP_WRITER}) is advised (references/model-config.md)")
    return lines


def set_target_model(project: Path, target: str) -> list[str]:
    """A user's own system: write its model as ``loop.target_model`` when unset (the loop's runs pass it as
    ``--target-model``; the system reads it as ``ctx["model"]`` / ``LONGMEMEVAL_TARGET_MODEL``) and say what is
    left out (memory-ref's writer and symbolic layers)."""
    cfg = rules.read_project_config(project, required=True)
    model = reader_of(cfg)
    lines = []
    loop = cfg.setdefault("loop", {})
    if not loop.get("target_model"):
        loop["target_model"] = model
        fileio.write_atomic_text(config_path(project), json.dumps(cfg, indent=2) + "\n")
        lines.append(f"set loop.target_model = {model} in {config_path(project)}")
    lines.append(f"stack: target model {model} ({target}, your own system: its ctx model and "
                 "LONGMEMEVAL_TARGET_MODEL)")
    lines.append("left out: the writer model and the symbolic layers (memory-ref's settings; your system gets none)")
    return lines
