"""The plugin's slash commands and their shell equivalents, as every script message prints them: the one place
their names live.

Claude Code 2.1.332 expands a plugin command by its plain name (``/longmemeval-run``) when its frontmatter
declares ``name:`` and no other command has that name; the full form ``/longmemeval-benchmarker:longmemeval-run``
always works (the fallback when another plugin claims the same name). A skill is a slash command too, by its
``name:``: ``/longmemeval-iterate`` is the loop's skill, which "iterate LongMemEval" in chat also loads.

A message says what to run next in the form its reader can use: in Claude Code (its Bash tool sets
``CLAUDECODE=1`` for every command it runs) the slash command; from a shell the shell command first and the
slash command second. Standard library only: ``setup_project.py`` imports it before the venv exists. Shell
scripts cannot import it; ``tests/core/test_command_names.py`` checks that every slash command they print is one of
these values.

    python scripts/command_names.py                      # prints NAME=value lines
    python scripts/command_names.py --step SETUP --sample  # what to run next, for this reader (see ``step``)
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Sequence

from lme.core import command_names


def main(argv: Sequence[str] | None = None) -> int:
    """Print ``NAME=value`` for each command, or with ``--step NAME [ARGS...]`` that command's ``step`` line
    (shell scripts read them; nothing else is printed)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--step"] and len(args) >= 2 and args[1] in command_names.ALL:
        print(command_names.step(command_names.ALL[args[1]], " ".join(args[2:])))
        return 0
    if args:
        print(f"usage: command_names.py [--step {{{','.join(command_names.ALL)}}} [ARGS...]]", file=sys.stderr)
        return 2
    for key, value in command_names.ALL.items():
        print(f"{key}={value}")
    return 0
