"""Print the iteration loop's configuration, or check a planned loop run against its hard rules (``lme/loop/rules.py``).

The command; its code is ``lme/cli/loop_guard.py``. This file keeps the path that commands,
skills, hooks and users call."""

import sys

from lme.cli.loop_guard import main
from lme.core.errors import run_main

if __name__ == "__main__":
    sys.exit(run_main(main))
