"""Give the iteration loop a target whose code lives in the project's git: a copy of memory-ref in ./memory_system
(``use_copy``), or the user's own memory system, a file or folder of the project (``use_path``).

The command (its parser, ``main()`` and help text) is ``lme/cli/loop_target.py``."""

from __future__ import annotations

import json
import os
from pathlib import Path

from lme.core import config
from lme.core import fileio
from lme.loop import branch
from lme.loop import rules
from lme.core.errors import UserError
from lme.core.facts import BUILTIN_TARGETS, STATE_DIR, VENV_DIR, schema_version
from lme.core import unattended
from lme.run import provenance
from lme.targets import api
from lme.targets.identity import is_reference, same_target

SOURCE = Path(__file__).resolve().parents[3] / "plugins" / "memory_ref"
DEFAULT_DEST = "memory_system"
COMMIT_MESSAGE = "loop target: {dest}, a copy of memory-ref"
OWN_COMMIT_MESSAGE = "loop target: {path}, your own memory system"


def use_copy(project: Path, dest: str = DEFAULT_DEST) -> list[str]:
    """Copy, configure, commit (each only when needed); returns what was done, one line each."""
    project = Path(project)
    dest = dest_name(dest)
    rules.read_project_config(project, required=True)
    branch.assert_on_loop_branch(project=project)
    current = str(rules.loop_config(project).get("target") or "")
    if current not in ("", *BUILTIN_TARGETS) and not is_reference(current, project) and current.strip("./") != dest:
        raise UserError(f"the loop's target is {current}, your own memory system: use-copy would replace it with a "
                        "copy of memory-ref", fix=f"run loop_target.py use {current} (to switch to memory-ref, "
                        "set loop.target to memory-ref in the config first)")
    done: list[str] = []
    target = project / dest
    if os.path.lexists(target):
        fileio.check_no_symlinks(target, include_self=True)  # the loop edits and commits it: never a link out
        done.append(f"{dest}/ exists: kept as it is (your code)")
    else:
        fileio.copy_tree(SOURCE, target, skip=("__pycache__",))
        fileio.write_atomic_text(target / api.RECORD_FILE, copy_record(dest))
        done.append(f"copied memory-ref ({SOURCE}) to {dest}/ (target API {api.version_text(api.TARGET_API)}, "
                    f"recorded in {dest}/{api.RECORD_FILE})")
    done += _configure(project, dest, None)
    sha = branch.commit(COMMIT_MESSAGE.format(dest=dest), [dest], project=project)
    done.append(f"committed {dest}/ ({sha[:12]})" if sha else f"{dest}/ is committed already")
    return done


def dest_name(dest: str) -> str:
    """``--dest`` as a project-relative folder name; UserError for an absolute path or one leading out."""
    if Path(dest).is_absolute() or ".." in Path(dest).parts or not dest.strip("./"):
        raise UserError(f"--dest {dest!r} is not a folder inside the project", fix="pass a relative name such as memory_system")
    return Path(dest).as_posix().strip("/")


def copy_record(dest: str) -> str:
    """The copy's record (``api.RECORD_FILE``, SPEC "The copy's record"): the target API and plugin version it
    was copied against, and how ``update-copy`` finds the commit that holds the copy as first made (its merge
    base): the loop branch's commit with ``COMMIT_MESSAGE`` (or update-copy's side commit, ``SIDE_MESSAGE``)."""
    record = {"schemaVersion": schema_version("target-api-record"), "targetApi": api.version_text(api.TARGET_API), "pluginVersion": provenance.plugin_version(),
              "copiedFrom": "memory-ref (plugins/memory_ref)", "baseCommitMessage": COMMIT_MESSAGE.format(dest=dest)}
    return json.dumps(record, indent=2) + "\n"


def use_path(project: Path, given: str) -> list[str]:
    """Make the user's own memory system (``given``: a ``.py`` file, an executable or a package folder of the
    project) the run's and the loop's target, its fix paths that file or folder, and commit it on the loop branch
    (each only when needed); returns what was done, one line each. memory-ref's settings (the symbolic layers, the
    model stack) are taken out of the target options: another system never gets them."""
    project = Path(project).resolve()
    rules.read_project_config(project, required=True)
    branch.assert_on_loop_branch(project=project)
    relative, folder = own_system_path(project, given)
    _refuse_unnamed_in_a_loop_session(project, relative)
    done = [f"{relative}{'/' if folder else ''}: your memory system (the loop's fixes edit it)"]
    done += _configure(project, relative, [f"{relative}/" if folder else relative])
    sha = branch.commit(OWN_COMMIT_MESSAGE.format(path=relative), [relative], project=project)
    done.append(f"committed {relative} ({sha[:12]})" if sha else f"{relative} is committed already")
    return done


def own_system_path(project: Path, given: str) -> tuple[str, bool]:
    """``given`` as a project-relative path and whether it is a folder; UserError (one line) for a path outside
    the project, one reached through a symbolic link, a missing path, or one that is no memory system."""
    where = Path(given).expanduser()
    where = where if where.is_absolute() else project / where
    lexical = Path(os.path.normpath(where))
    if lexical != project and project not in lexical.parents:
        raise UserError(f"{given} is outside the project {project}",
                        fix="the loop commits and reverts fixes in the project: name a file or folder inside it")
    if not os.path.lexists(lexical):
        raise UserError(f"{given} does not exist in the project {project}",
                        fix="name your memory system's .py file, executable or package folder (plugins/README.md)")
    _refuse_links(project, lexical, given)
    relative = lexical.relative_to(project).as_posix()
    if lexical == project or relative.split("/")[0] in (".git", STATE_DIR, VENV_DIR, ".claude"):
        raise UserError(f"{given} is not a memory system's file or folder",
                        fix="name your system's .py file, executable or package folder inside the project")
    if lexical.is_dir():
        if not (lexical / "__init__.py").is_file():
            raise UserError(f"{given} is a folder without __init__.py",
                            fix="name your system's .py file or executable inside it, or make the folder a package")
        return relative, True
    if lexical.suffix != ".py" and not os.access(lexical, os.X_OK):
        raise UserError(f"{given} is neither a .py file nor an executable",
                        fix="name your system's .py file (generate(item, ctx)) or make the program executable")
    return relative, False


def _refuse_unnamed_in_a_loop_session(project: Path, relative: str) -> None:
    """In a loop session (Claude Code holding standing rules) the code the loop runs is the user's choice: ``use``
    takes only the system the config's ``target`` (or ``loop.target``) names already, never one the agent picks."""
    why = unattended.loop_session(project, loop_command=True)
    if why is None:
        return
    cfg = rules.read_project_config(project)
    loop = cfg.get("loop") if isinstance(cfg.get("loop"), dict) else {}
    named = [str(t) for t in (cfg.get("target"), loop.get("target")) if t]
    if not any(same_target(relative, t, project) for t in named):
        raise UserError(f"{relative} is not the target the config names ({' / '.join(named) or 'none'}): in a loop "
                        f"session ({why}) the loop runs only the code the user named",
                        fix=f'set "target": "{relative}" in .longmemeval-benchmarks/config.json yourself, or run '
                            "loop_target.py use in a terminal")


def _refuse_links(project: Path, path: Path, given: str) -> None:
    """No symbolic link on the way from the project to ``path`` (nor ``path``), nor one inside a folder that leads
    out of the project: the loop edits and commits what it names."""
    current = project
    for part in path.relative_to(project).parts:
        current = current / part
        if current.is_symlink():
            raise UserError(f"{given} is reached through the symbolic link {current}",
                            fix="name the real file or folder inside the project (the loop edits and commits it)")
    if path.is_dir():
        for root, dirs, files in os.walk(path):
            for name in (*dirs, *files):
                entry = Path(root) / name
                if entry.is_symlink() and project not in entry.resolve().parents:
                    raise UserError(f"{entry} is a symbolic link out of the project",
                                    fix="replace it with the real file: the loop's fixes must stay in the project")


def _configure(project: Path, target: str, fix_paths: list[str] | None) -> list[str]:
    """Set ``target`` and ``loop.target`` (and ``loop.fix_paths`` when given); for a target that is not
    memory-ref, take memory-ref's settings out of the target options. Returns what was done."""
    cfg = rules.read_project_config(project, required=True)
    loop = dict(cfg["loop"]) if isinstance(cfg.get("loop"), dict) else {}
    wanted = {"target": target, **({"fix_paths": fix_paths} if fix_paths is not None else {})}
    dropped: list[str] = []
    if not is_reference(target, project):
        for where, holder in (("targetOptions", cfg), ("loop.targetOptions", loop)):
            options = holder.get("targetOptions")
            if isinstance(options, dict) and any(k in options for k in rules.REFERENCE_ONLY_OPTIONS):
                dropped += [f"{where}.{k}" for k in rules.REFERENCE_ONLY_OPTIONS if k in options]
                holder["targetOptions"] = {k: v for k, v in options.items()
                                           if k not in rules.REFERENCE_ONLY_OPTIONS}
    if cfg.get("target") == target and all(loop.get(k) == v for k, v in wanted.items()) and not dropped:
        return [f"config: target and loop.target are {target} already"]
    cfg["target"] = target
    cfg["loop"] = {**loop, **wanted}
    config.write_config(project, cfg, force=True)
    done = [f"config: target and loop.target set to {target}"
            + (f", loop.fix_paths to {fix_paths}" if fix_paths is not None else "")]
    if dropped:
        done.append(f"config: took out memory-ref's settings, which {target} never gets: {', '.join(dropped)}")
    return done
