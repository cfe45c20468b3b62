"""Git for the iteration loop: commit, push and revert, only on the loop branch, never forced.

The command; its code is ``lme/cli/loop_git.py``. This file keeps the path that commands,
skills, hooks and users call."""

import sys

from lme.cli.loop_git import main
from lme.core.errors import run_main

if __name__ == "__main__":
    sys.exit(run_main(main))
