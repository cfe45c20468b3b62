"""What run-meta records so two runs can be checked for comparability: versions, commits, prompt hashes."""

from __future__ import annotations

import json
import subprocess
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

from lme.core import fileio
from lme.core.facts import JUDGE_TEMPLATE_RELPATH
from lme.core.run_records import CodeVersion

PLUGIN_ROOT = Path(__file__).resolve().parents[3]
PACKAGES = ("anthropic", "openai", "backoff", "jsonschema", "ijson", "tqdm", "matplotlib", "tiktoken")


def plugin_version() -> str:
    try:
        return str(json.loads((PLUGIN_ROOT / ".claude-plugin" / "plugin.json").read_text())["version"])
    except (OSError, ValueError, KeyError):
        return "unknown"


def package_versions() -> dict[str, str | None]:
    """The installed versions of ``PACKAGES`` (None: not installed). Read once per process: a run's start asks for
    them twice (its refusals, then again under its lock), and each read scans the environment's packages."""
    return dict(_package_versions())


@lru_cache(maxsize=1)
def _package_versions() -> tuple[tuple[str, str | None], ...]:
    versions: list[tuple[str, str | None]] = []
    for name in PACKAGES:
        try:
            versions.append((name, metadata.version(name)))
        except metadata.PackageNotFoundError:
            versions.append((name, None))
    return tuple(versions)


def git_commit(directory: Path) -> str | None:
    """HEAD of the git repo holding ``directory`` (the user's project, or this plugin), or None."""
    try:
        out = subprocess.run(
            ["git", "-C", str(directory), "rev-parse", "HEAD"],
            capture_output=True, text=True, timeout=10, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


@lru_cache(maxsize=1)
def _plugin_git_commit() -> str | None:
    """This plugin's commit, read once per process: the code running is the code this process imported."""
    return git_commit(PLUGIN_ROOT)


def file_sha256(path: Path) -> str | None:
    try:
        return fileio.sha256_file(path, follow_symlinks=True)
    except OSError:
        return None


def judge_template_path(longmemeval_root: str | None) -> Path | None:
    return Path(longmemeval_root) / JUDGE_TEMPLATE_RELPATH if longmemeval_root else None


def judge_template_sha256(longmemeval_root: str | None) -> str | None:
    """sha256 of the upstream file the judge prompt is loaded from (None without a checkout)."""
    path = judge_template_path(longmemeval_root)
    return file_sha256(path) if path else None


def describe(project: Path, code: CodeVersion | None, longmemeval_root: str | None) -> dict[str, Any]:
    """``code``: the run's code fingerprint (``code_version``); its whole digest is ``target_source_sha256``."""
    return {
        "plugin_version": plugin_version(),
        "plugin_git_commit": _plugin_git_commit(),
        "project_git_commit": git_commit(project),
        "package_versions": package_versions(),
        "prompt_hashes": {
            "judge_template_sha256": judge_template_sha256(longmemeval_root),
            "reader_template_sha256": file_sha256(PLUGIN_ROOT / "scripts" / "lme" / "target_kit" / "reader.py"),
            "target_source_sha256": None if code is None else code.sha256,
        },
    }
