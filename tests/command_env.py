"""The environment of a command a test starts with a hand-built environment (``env={...}``).

A hand-built environment drops what the suite set for every command (tests/conftest.py): PYTHONPYCACHEPREFIX, so
a python started in it wrote ``__pycache__`` into scripts/ (the plugin install copies that folder). ``clean_env``
keeps that one setting and nothing else of the test process's environment."""

from __future__ import annotations

import os
from pathlib import Path

BYTECODE_SETTINGS = ("PYTHONPYCACHEPREFIX",)


def clean_env(**variables: str) -> dict[str, str]:
    """Only ``variables``, plus the suite's bytecode setting (bytecode outside the checkout)."""
    kept = {name: os.environ[name] for name in BYTECODE_SETTINGS if name in os.environ}
    return {**kept, **variables}


def bytecode_flags() -> list[str]:
    """The suite's bytecode setting as a python option, for a python started with ``-E`` or ``-I`` (which ignore
    every PYTHON* variable): ``[python, *bytecode_flags(), "-E", ...]``."""
    prefix = os.environ.get("PYTHONPYCACHEPREFIX")
    return ["-X", f"pycache_prefix={prefix}"] if prefix else []


def bytecode_folders(roots: tuple[Path, ...]) -> set[Path]:
    """Every ``__pycache__`` under ``roots`` (conftest.py: the run fails when it leaves a new one in the shipped
    folders)."""
    return {path for root in roots for path in root.rglob("__pycache__")}
