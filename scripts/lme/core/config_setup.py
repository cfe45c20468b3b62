"""The config setup writes: a fresh one from the defaults plus this run's choices; an existing one only completed
(its missing keys filled, the user's values kept and named), or, with ``--force-config``, rewritten from the
defaults with the old file kept as ``config.json.bak``. Standard library only (setup runs before the venv)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lme.core import config_file, fileio
from lme.core.config_defaults import default_config
from lme.core.errors import UserError
from lme.core.facts import CONFIG_FILE, STATE_DIR
from lme.core.project_folder import write_json
from lme.core.setup_steps import Report


@dataclass(frozen=True)
class ConfigPlan:
    config: dict[str, Any]
    added: tuple[str, ...]
    """Keys that were missing and got a value."""
    kept: tuple[tuple[str, Any, Any], ...]
    """(key, kept value, value this run wanted) for each user value left alone."""
    changed: bool


def plan_config(existing: dict[str, Any] | None, defaults: dict[str, Any], wanted: dict[str, Any],
                *, force: bool) -> ConfigPlan:
    if existing is None or force:
        fresh = {**defaults, **wanted}
        return ConfigPlan(fresh, tuple(fresh), (), existing != fresh)
    merged = dict(existing)
    added = []
    for key, value in {**defaults, **wanted}.items():
        if key not in merged:
            merged[key] = value
            added.append(key)
    kept = tuple((k, existing[k], v) for k, v in wanted.items() if k in existing and existing[k] != v)
    return ConfigPlan(merged, tuple(added), kept, bool(added))


def load_existing_config(path: Path) -> dict[str, Any] | None:
    return config_file.read_object(path, fix="fix it by hand, or re-run with --force-config to rewrite it from the defaults",
                                   not_object="{path} must hold a JSON object",
                                   not_object_fix="re-run with --force-config to rewrite it")


def apply_config(project: Path, wanted: dict[str, Any], report: Report, *, force: bool) -> dict[str, Any]:
    path = project / STATE_DIR / CONFIG_FILE
    existing = None
    try:
        existing = load_existing_config(path)
    except UserError:
        if not force:
            raise
    plan = plan_config(existing, default_config(), wanted, force=force)
    if existing is None and not path.exists():
        write_json(path, plan.config)
        report.add("config", f"wrote {path}")
    elif force:
        if plan.changed:
            fileio.copy_file(path, path.with_name("config.json.bak"))
            write_json(path, plan.config)
            report.add("config", f"rewrote {path} (--force-config; previous copy in config.json.bak)")
        else:
            report.add("config", f"{path} already holds these values; nothing to do")
    elif plan.changed:
        write_json(path, plan.config)
        report.add("config", f"added missing keys to {path}: {', '.join(plan.added)}")
    else:
        report.add("config", f"{path} exists and is complete; left untouched")
    for key, kept, want in plan.kept:
        report.add("config", f"kept your {key}={json.dumps(kept)} (this run would set {json.dumps(want)}; "
                             "re-run with --force-config to apply)")
    return plan.config
