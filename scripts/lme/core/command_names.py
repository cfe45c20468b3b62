"""The plugin's slash commands, as every script message prints them: the one place their names live.

Claude Code expands a plugin command only in its fully qualified form ``/<plugin>:<command>`` (observed with the
pinned CLI: a plain ``/longmemeval-run`` reaches the model as text). Standard library only: ``setup_project.py``
imports it before the venv exists. Shell scripts cannot import it; ``tests/test_command_names.py`` checks that
every slash command they print is one of these values.

    python scripts/command_names.py            # prints NAME=value lines
"""

from __future__ import annotations

import sys
from typing import Sequence

PLUGIN = "longmemeval-benchmarker"

SETUP = f"/{PLUGIN}:longmemeval-setup"
RUN = f"/{PLUGIN}:longmemeval-run"
REPORT = f"/{PLUGIN}:longmemeval-report"
ITERATE = f"/{PLUGIN}:longmemeval-iterate"
CANCEL = f"/{PLUGIN}:longmemeval-cancel"

ALL = {"SETUP": SETUP, "RUN": RUN, "REPORT": REPORT, "ITERATE": ITERATE, "CANCEL": CANCEL}


def slash(name: str, args: str = "") -> str:
    """``name`` (one of the constants) followed by ``args``: ``slash(RUN, "--run-id x")``."""
    if name not in ALL.values():
        raise ValueError(f"{name!r} is not one of the plugin's commands {sorted(ALL.values())}")
    return f"{name} {args}".rstrip() if args else name


def main(argv: Sequence[str] | None = None) -> int:
    """Print ``NAME=value`` for each command (shell scripts read them; nothing else is printed)."""
    for key, value in ALL.items():
        print(f"{key}={value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
