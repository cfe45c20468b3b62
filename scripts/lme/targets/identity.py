"""What a target spelling names, so two spellings of one target compare equal: a built-in name as it is; a path
(a ``.py`` file or a package directory, relative to the project) as its resolved file. Standard library only (the
loop's rules and the hooks read it)."""

from __future__ import annotations

from pathlib import Path

from lme.core.facts import BUILTIN_TARGETS


def target_key(target: str, project: Path) -> str:
    """What a target names: a built-in name as it is; a path (a ``.py`` file or a package directory, relative to
    the project) as its resolved file, a package as its ``__init__.py``."""
    if target in BUILTIN_TARGETS:
        return target
    path = Path(target).expanduser()
    if not path.is_absolute():
        path = Path(project) / path
    path = path.resolve()
    if path.is_dir():
        path = path / "__init__.py"
    return str(path)


def same_target(a: str, b: str, project: Path) -> bool:
    """Whether two target spellings name the same target (see ``target_key``)."""
    return a == b or target_key(a, project) == target_key(b, project)
