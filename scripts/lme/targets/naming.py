"""How a run names its target: the spelling resolved against the project and stored so (the run's resume line
then works from any folder), and the hints for the usual slips.

One way to name your own system: ``--target PATH`` (or ``"target": "PATH"`` in the config), a ``.py`` file
(the ``python`` adapter: dicts in, dicts out) or an executable (the ``command`` adapter, one process per item);
``--target python --target-option path=...`` and ``--target command --target-option command=...`` say the same
with options. A built-in name keeps the built-in contract; so do a package folder (the loop's copy of memory-ref)
and a ``.py`` file that imports the toolkit's records (``targets.user_adapter``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from lme.core.config import resolve_path
from lme.core.errors import UserError
from lme.core.facts import BUILTIN_TARGETS
from lme.targets.targets import COMMAND_ADAPTER, PYTHON_ADAPTER


def resolve_target(target: str, project: Path) -> str:
    """A target file as its absolute path, relative spellings taken from the project; a built-in name, a package
    folder (kept as spelled: the loop compares it by ``identity.same_target``) and a bare word that names nothing
    are kept (the target check refuses the last with its hint). A bare word whose ``.py`` file exists is refused
    here, naming it."""
    if target in BUILTIN_TARGETS:
        return target
    path = resolve_path(project, target)
    if path.is_dir():
        return target
    if path.is_file() or path.suffix == ".py" or "/" in target:
        return str(path)
    if path.with_name(path.name + ".py").is_file():
        raise UserError(f"unknown target {target!r}",
                        fix=f"your system's file is {target}.py: --target {target}.py (or \"target\": "
                            f"\"{target}.py\" in the config)")
    return target


def resolve_options(target: str, options: Mapping[str, Any], project: Path, *, defaults: bool = True
                    ) -> dict[str, Any]:
    """``options`` with the paths in them taken from the project: the ``python`` adapter's ``path``; the
    ``command`` adapter's ``cwd`` (with ``defaults``: the project when not given, so the command's own relative
    paths mean the same from any folder). A command target named by its path runs in the project too."""
    resolved = dict(options)
    if target == PYTHON_ADAPTER and isinstance(resolved.get("path"), str) and resolved["path"]:
        resolved["path"] = str(resolve_path(project, resolved["path"]))
    runs_a_command = target == COMMAND_ADAPTER or (target not in BUILTIN_TARGETS and _executable(target))
    if runs_a_command:
        if isinstance(resolved.get("cwd"), str) and resolved["cwd"]:
            resolved["cwd"] = str(resolve_path(project, resolved["cwd"]))
        elif defaults:
            resolved["cwd"] = str(Path(project).resolve())
    return resolved


def _executable(target: str) -> bool:
    path = Path(target)
    return path.is_absolute() and path.suffix != ".py" and path.is_file()
