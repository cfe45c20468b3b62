"""Which Claude Code session drives the iteration loop, and whether that loop is over. Standard library only.

The command; its code is ``lme/cli/loop_session.py``. This file keeps the path that commands,
skills, hooks and users call."""

import sys

from lme.cli.loop_session import main
from lme.core.errors import run_main

if __name__ == "__main__":
    sys.exit(run_main(main))
