"""The plugin's slash commands and their shell equivalents, as every script message prints them: the one place
their names live.

The command (its parser, ``main()`` and help text) is ``lme/cli/command_names.py``."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Mapping

PLUGIN = "longmemeval-benchmarker"
PLUGIN_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__)))))
"""The plugin's root folder, as a string: ``command_names.py`` loads this module and nothing else, and ``pathlib``
would add ~5 ms to its start-up."""

SETUP = "/longmemeval-setup"
RUN = "/longmemeval-run"
REPORT = "/longmemeval-report"
ITERATE = "/longmemeval-iterate"
CANCEL = "/longmemeval-cancel"

ALL = {"SETUP": SETUP, "RUN": RUN, "REPORT": REPORT, "ITERATE": ITERATE, "CANCEL": CANCEL}
COMMANDS = (SETUP, RUN, REPORT, CANCEL)
"""The names that are command files (``commands/<name>.md``, each declaring ``name: <name>``)."""
LOOP_SKILL = ITERATE[1:]
"""The loop's skill (``skills/longmemeval-iterate``): what ``/longmemeval-iterate`` runs and chat loads."""
SKILL_TOOL_NAME = f"{PLUGIN}:{LOOP_SKILL}"
"""How the Skill tool and permission rules name the loop's skill: ``Skill(longmemeval-benchmarker:...)``."""

VENV_PYTHON = ".longmemeval-venv/bin/python"
"""The project's venv python, relative to the project root (where every command runs)."""
SHELL_SCRIPTS = {SETUP: ("python3", "setup_project.py"), RUN: (VENV_PYTHON, "run_benchmark.py"),
                 REPORT: (VENV_PYTHON, "scorecard.py --latest"), CANCEL: ("python3", "loop_session.py cancel")}
"""What each command runs from a shell (the loop has none: it needs an agent)."""


def qualified(name: str) -> str:
    """The full form ``/longmemeval-benchmarker:longmemeval-run`` of a plain name (one of the constants)."""
    _check(name)
    return f"/{PLUGIN}:{name[1:]}"


def slash(name: str, args: str = "") -> str:
    """``name`` (one of the constants) followed by ``args``: ``slash(RUN, "--run-id x")``."""
    _check(name)
    return f"{name} {args}".rstrip() if args else name


def in_claude_code(env: Mapping[str, str] | None = None) -> bool:
    """Whether this process runs under Claude Code (its Bash tool and hooks set ``CLAUDECODE=1``)."""
    return (os.environ if env is None else env).get("CLAUDECODE") == "1"


def shell(name: str, args: str = "", plugin_root: str | os.PathLike[str] = PLUGIN_ROOT) -> str | None:
    """The shell command that does what ``name`` does, run from the project root; None for the loop."""
    import shlex  # here: most importers only read the names

    _check(name)
    if name not in SHELL_SCRIPTS:
        return None
    python, script = SHELL_SCRIPTS[name]
    path, _, rest = script.partition(" ")
    words = [python, shlex.quote(os.path.join(plugin_root, "scripts", path)), rest, args]
    return " ".join(w for w in words if w)


def step(name: str, args: str = "", *, env: Mapping[str, str] | None = None,
         plugin_root: str | os.PathLike[str] = PLUGIN_ROOT) -> str:
    """What to run next, for the reader of this message: the slash command in Claude Code; from a shell the
    shell command, then ``(in Claude Code: /name args)``."""
    command = slash(name, args)
    if in_claude_code(env):
        return command
    line = shell(name, args, plugin_root)
    return command if line is None else f"{line}   (in Claude Code: {command})"


def _check(name: str) -> None:
    if name not in ALL.values():
        raise ValueError(f"{name!r} is not one of the plugin's commands {sorted(ALL.values())}")
