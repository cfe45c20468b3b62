"""What a target spelling names, so two spellings of one target compare equal, and whether it is the reference
system. Standard library only (the loop's rules and the hooks read it)."""

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


REFERENCE_TARGET = "memory-ref"
REFERENCE_MARK = b"memory-ref: the reference memory system"
"""How memory-ref's ``__init__.py`` begins (its docstring): a package folder whose ``__init__.py`` begins so is a
copy of it (``loop_target.py use-copy``'s, or one made by hand), which keeps memory-ref's settings."""


def is_reference(target: str | None, project: Path) -> bool:
    """Whether ``target`` is memory-ref or a copy of it in the project: the one system whose settings (the writer
    model, the three symbolic layers) the loop sets and checks. Any other target (a user's file, executable or
    package) gets none of them."""
    if not target:
        return False
    if target == REFERENCE_TARGET:
        return True
    if target in BUILTIN_TARGETS:
        return False
    package = Path(target_key(target, project))
    if package.name != "__init__.py" or package.is_symlink():
        return False
    try:
        with package.open("rb") as handle:
            head = handle.read(512)
    except OSError:
        return False
    return head.lstrip(b"\"'\n\r\t ").startswith(REFERENCE_MARK)
