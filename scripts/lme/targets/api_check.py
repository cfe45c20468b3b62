"""The check a run makes before it writes anything: does the target's code import only what the toolkit offers?

A memory system loaded in the run's process (a package folder such as the loop's copy of memory-ref, or a ``.py``
file that imports ``lme``) is read with ``ast``, without running it. A copy of memory-ref (``use-copy``'s, or one
made by hand) whose record names another major of the target API, or that imports a module or name this toolkit no
longer has, is refused in one line naming ``update-copy``. The user's own system that imports a toolkit name that is
gone is refused in one line pointing to ``plugins/README.md``; one that imports a name outside the public API
(``api.PUBLIC``) that still exists runs, with a warning (their working code is not broken by this check). Never an
error row per item, never "bad target options"."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import os
from dataclasses import dataclass
from pathlib import Path

from lme.core import command_names
from lme.core.errors import UserError
from lme.core.facts import BUILTIN_TARGETS
from lme.targets import api
from lme.targets.identity import is_reference
from lme.targets.targets import imports_the_toolkit, target_path

DEFAULT_COPY = "memory_system"
_OLD_TOP_LEVEL = ("sqlite_store", "bm25_index", "reader", "errors", "records", "targets")
"""Modules older memory-refs imported by their top-level name (``scripts/`` was on ``sys.path`` and held them):
``records`` and ``targets`` are still there, the others are gone."""


@dataclass(frozen=True)
class Import:
    """One absolute import in a target's code: ``from module import name`` (``name`` None: ``import module``)."""

    file: Path
    line: int
    module: str
    name: str | None

    @property
    def spelled(self) -> str:
        return self.module if self.name is None else f"{self.module}.{self.name}"


def update_copy_command(folder: str) -> str:
    """The command that merges today's memory-ref into the copy ``folder``, as a message prints it."""
    dest = "" if folder.rstrip("/") == DEFAULT_COPY else f" --dest {folder.rstrip('/')}"
    venv_run = os.path.join(command_names.PLUGIN_ROOT, "scripts", "venv_run.sh")
    return f'bash "{venv_run}" loop_target.py update-copy{dest}'


def check_target(target: str, project: Path) -> list[str]:
    """UserError (one line) when ``target``'s code cannot run against today's target API; otherwise the warnings
    (one line each) for the user's own system importing names outside the public API. Built-in names, adapters and
    programs run outside the toolkit's API and are not read."""
    if target in BUILTIN_TARGETS or target in ("python", "command"):
        return []
    where = Path(target).expanduser()
    try:
        file = Path(target_path(str(where if where.is_absolute() else Path(project) / where)))
    except UserError:
        return []  # the target's own loading names a missing path
    package = file.name == "__init__.py"
    if not package and not (file.suffix == ".py" and imports_the_toolkit(file)):
        return []
    folder = _shown(file.parent if package else file, project)
    if package and is_reference(str(file.parent), project):
        _check_copy(file.parent, folder)
        return []
    return _check_own(file.parent if package else file, folder)


def _check_copy(root: Path, folder: str) -> None:
    fix = f"run {update_copy_command(folder)}: it merges today's memory-ref into your copy and keeps your changes"
    recorded = read_record(root)
    if recorded is not None and recorded[0] != api.TARGET_API[0]:
        raise UserError(f"{folder}/ is a copy of memory-ref made for target API {api.version_text(recorded)}; "
                        f"this plugin offers {api.version_text(api.TARGET_API)}", fix=fix)
    gone = [name for name in (_gone(i) for i in imports(root)) if name]
    if gone:
        raise UserError(f"{folder}/ (a copy of an older memory-ref) imports {_listed(gone)}, which this plugin no "
                        "longer has", fix=fix)


def _check_own(where: Path, shown: str) -> list[str]:
    outside = [i for i in imports(where) if _from_toolkit(i) and not _public(i)]
    fix = "import only the names plugins/README.md lists under \"The public target API\""
    gone = [name for name in (_gone(i) for i in outside) if name]
    if gone:
        raise UserError(f"{shown} imports {_listed(gone)}, which this toolkit does not have (its public target API "
                        f"is version {api.version_text(api.TARGET_API)})", fix=fix)
    if not outside:
        return []
    return [f"warning: {shown} imports {_listed([i.spelled for i in outside])}, outside the toolkit's public target "
            f"API (version {api.version_text(api.TARGET_API)}): an update may move it; {fix}"]


def read_record(root: Path) -> tuple[int, int] | None:
    """The target API version the copy in ``root`` records (``api.RECORD_FILE``), or None (no record, unreadable)."""
    try:
        data = json.loads((root / api.RECORD_FILE).read_text(encoding="utf-8"))
        major, minor = (int(part) for part in str(data["targetApi"]).split("."))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return major, minor


def imports(where: Path) -> list[Import]:
    """Every absolute import in the ``.py`` file ``where`` or in the ``.py`` files under the folder ``where``."""
    files = sorted(where.rglob("*.py")) if where.is_dir() else [where]
    found: list[Import] = []
    for file in files:
        if "__pycache__" in file.parts or file.is_symlink():
            continue
        try:
            tree = ast.parse(file.read_bytes())
        except (SyntaxError, ValueError, OSError):
            continue  # loading it reports the error
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found += [Import(file, node.lineno, node.module, a.name) for a in node.names if a.name != "*"]
            elif isinstance(node, ast.Import):
                found += [Import(file, node.lineno, a.name, None) for a in node.names]
    return found


def _from_toolkit(found: Import) -> bool:
    return found.module.split(".")[0] == "lme"


def _public(found: Import) -> bool:
    return api.is_public(found.module, found.name) or (found.name is not None
                                                       and api.is_public(found.spelled, None))


def _gone(found: Import) -> str | None:
    """What of ``found`` the toolkit no longer has (the module, or ``module.name``), or None: it is there, or it
    is not the toolkit's (another package's import is not checked here)."""
    top = found.module.split(".")[0]
    if top != "lme" and top not in _OLD_TOP_LEVEL:
        return None
    try:
        if importlib.util.find_spec(top) is None:
            return found.module  # an old copy's ``import sqlite_store``: scripts/ on sys.path held it once
        module = importlib.import_module(found.module)
    except ImportError:
        return found.module
    if found.name is None or hasattr(module, found.name) or importlib.util.find_spec(found.spelled) is not None:
        return None
    return found.spelled


def _listed(names: list[str]) -> str:
    """The first five distinct names, and how many more."""
    distinct = list(dict.fromkeys(names))
    return ", ".join(distinct[:5]) + (f" and {len(distinct) - 5} more" if len(distinct) > 5 else "")


def _shown(path: Path, project: Path) -> str:
    try:
        return path.resolve().relative_to(Path(project).resolve()).as_posix()
    except ValueError:
        return str(path)
