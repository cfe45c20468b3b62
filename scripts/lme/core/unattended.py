"""Loop sessions: when a script runs for an agent holding standing permissions, and what it then refuses.

The iteration loop runs under Claude Code with rules that let its lines run without a prompt: the loop skill's
``allowed-tools``, and in the chat path the rules ``setup --allow-unattended`` writes into the project's
``.claude/settings.local.json``. Those rules match a script by its first words (``Bash(<script>:*)``), so its
options are the model's to choose, and the model reads other people's data (datasets, model outputs, projects).
The scripts themselves therefore refuse, in a loop session, what the loop never needs: code named on the command
line, a project outside the working folder, a cost the user did not approve. (Which of those a script checks is its
own business; this module says when it is in a loop session and checks the folders.)

A loop session is a process Claude Code started (its Bash tool sets ``CLAUDE_CODE_SESSION_ID``; an environment
prefix such as ``CLAUDE_CODE_SESSION_ID= cmd`` needs the user's approval, so the model cannot drop it) and

- a run with ``--loop`` (the loop's runner, ``parallel_longmemeval.sh``, always passes it), or one of the loop's
  own commands (``loop_command``: rounds.py, loop_session.py, cluster_failures.py, ...), or
- the working folder (or a folder above it) holds ``loop-session.json`` naming this session (it ran
  ``loop_session.py start``; cancelled or not), or setup's standing rules (``.claude/settings.local.json`` with a
  ``Skill(longmemeval-benchmarker:...)`` rule: every session there runs the plugin unattended).

The working folder is the process's current directory: Claude Code runs Bash commands in the project and refuses a
``cd`` outside its working directories. Standard library only (setup_project.py and the Stop hook's siblings run on
the system python).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from lme.core import command_names
from lme.core import state_reader
from lme.core.errors import UserError
from lme.core.facts import LOOP_SESSION_FILE

SESSION_ENV = "CLAUDE_CODE_SESSION_ID"
"""Set by Claude Code (2.1.332) in the environment of every Bash command and hook it runs."""
SETTINGS_FILE = Path(".claude") / "settings.local.json"
RULE_MARK = f"Skill({command_names.PLUGIN}:"
"""How setup's standing rules are recognised in ``settings.local.json`` (every set of them has a Skill rule)."""
_MAX_DEPTH = 64


def claude_code_session() -> str | None:
    """The id of the Claude Code session this process runs under, None outside Claude Code."""
    return os.environ.get(SESSION_ENV) or None


def _names_session(folder: Path, session: str) -> bool:
    try:
        state = state_reader.read_json(folder / LOOP_SESSION_FILE)
    except state_reader.StateFileError:
        return False
    return isinstance(state, dict) and state.get("session_id") == session


def _has_standing_rules(folder: Path) -> bool:
    try:
        settings = state_reader.read_json(folder / SETTINGS_FILE)
    except state_reader.StateFileError:
        return False
    return standing_rules_in(settings)


def standing_rules_in(settings: Any) -> bool:
    """``settings`` (``settings.local.json``'s object) holds the rules ``setup --allow-unattended`` wrote."""
    permissions = settings.get("permissions") if isinstance(settings, dict) else None
    allow = permissions.get("allow") if isinstance(permissions, dict) else None
    return isinstance(allow, list) and any(isinstance(r, str) and r.startswith(RULE_MARK) for r in allow)


def loop_session(cwd: Path | None = None, *, loop_command: bool = False, loop_flag: bool = False) -> str | None:
    """Why this process runs in a loop session (a few words for a refusal line), None when it does not."""
    session = claude_code_session()
    if session is None:
        return None
    if loop_flag:
        return "a loop run (--loop) under Claude Code"
    if loop_command:
        return "a loop command under Claude Code"
    here = Path(cwd or Path.cwd()).resolve()
    for folder in [here, *here.parents][:_MAX_DEPTH]:
        if _names_session(folder, session):
            return "this Claude Code session runs the loop here"
        if _has_standing_rules(folder):
            return "setup --allow-unattended gave this project standing permission rules"
    return None


def inside(path: Path | str, root: Path | str) -> bool:
    """Whether ``path`` is ``root`` or below it, symlinks resolved."""
    real, base = os.path.realpath(os.path.expanduser(str(path))), os.path.realpath(str(root))
    try:
        return os.path.commonpath([real, base]) == base
    except ValueError:  # different drives
        return False


def refuse_outside(path: Any, flag: str, why: str, cwd: Path | None = None, *, where: str = "the working folder",
                   fix: str = "run it from that project's own folder, or yourself in a terminal") -> None:
    """UserError unless ``path`` is inside ``cwd`` (default: the working folder); ``why``: the loop session's reason."""
    here = Path(cwd or Path.cwd())
    if path is not None and str(path) != "" and not inside(path, here):
        raise UserError(f"{flag} {path} is outside {where} {here.resolve()}: in a loop session ({why}) the plugin's "
                        "scripts read code and write only inside the project they run in", fix=fix)


def refuse_project_elsewhere(args: Any, *, loop_command: bool = False) -> None:
    """The check every entry script's parser runs (``cli_parser``): ``--project`` outside the working folder is
    refused in a loop session."""
    project = getattr(args, "project", None)
    if project is None or inside(project, Path.cwd()):
        return
    why = loop_session(loop_command=loop_command, loop_flag=bool(getattr(args, "loop", False)))
    if why is not None:
        refuse_outside(project, "--project", why)
