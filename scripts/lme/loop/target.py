"""Give the iteration loop a target whose code lives in the project's git: a copy of memory-ref in ./memory_system.

The command (its parser, ``main()`` and help text) is ``lme/cli/loop_target.py``."""

from __future__ import annotations

import os
from pathlib import Path

from lme.core import command_names
from lme.core import config
from lme.core import config_file
from lme.core import fileio
from lme.loop import branch as loop_git
from lme.core.errors import UserError

SOURCE = Path(__file__).resolve().parents[3] / "plugins" / "memory_ref"
DEFAULT_DEST = "memory_system"
COMMIT_MESSAGE = "loop target: {dest}, a copy of memory-ref"


def use_copy(project: Path, dest: str = DEFAULT_DEST) -> list[str]:
    """Copy, configure, commit (each only when needed); returns what was done, one line each."""
    project = Path(project)
    if Path(dest).is_absolute() or ".." in Path(dest).parts or not dest.strip("./"):
        raise UserError(f"--dest {dest!r} is not a folder inside the project", fix="pass a relative name such as memory_system")
    dest = Path(dest).as_posix().strip("/")
    path = config.config_path(project)
    if not path.is_file():
        raise UserError(f"no config at {path}", fix=f"run {command_names.SETUP} first")
    loop_git.assert_on_loop_branch(project=project)
    done: list[str] = []
    target = project / dest
    if os.path.lexists(target):
        fileio.check_no_symlinks(target, include_self=True)  # the loop edits and commits it: never a link out
        done.append(f"{dest}/ exists: kept as it is (your code)")
    else:
        fileio.copy_tree(SOURCE, target, skip=("__pycache__",))
        done.append(f"copied memory-ref ({SOURCE}) to {dest}/")
    cfg = config_file.read_object(path, fix="fix or delete the file", not_object="{path} is not a JSON object",
                                  not_object_fix=f"re-run {command_names.SETUP}")
    if cfg is None:  # removed since the check above
        raise UserError(f"no config at {path}", fix=f"run {command_names.SETUP} first")
    loop = cfg.get("loop") if isinstance(cfg.get("loop"), dict) else {}
    if cfg.get("target") == dest and loop.get("target") == dest:
        done.append(f"config: target and loop.target are {dest} already")
    else:
        cfg["target"] = dest
        cfg["loop"] = {**loop, "target": dest}
        config.write_config(project, cfg, force=True)
        done.append(f"config: target and loop.target set to {dest}")
    sha = loop_git.commit(COMMIT_MESSAGE.format(dest=dest), [dest], project=project)
    done.append(f"committed {dest}/ ({sha[:12]})" if sha else f"{dest}/ is committed already")
    return done
