"""Round bookkeeping for the iteration loop: the round counter, pre-fix snapshots, the loop's history log.

The command; its code is ``lme/cli/rounds.py``. This file keeps the path that commands,
skills, hooks and users call."""

import sys

from lme.cli.rounds import main
from lme.core.errors import run_main

if __name__ == "__main__":
    sys.exit(run_main(main))
