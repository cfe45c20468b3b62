"""Give the iteration loop a target whose code lives in the project's git: a copy of memory-ref in ./memory_system.

The command; its code is ``lme/cli/loop_target.py``. This file keeps the path that commands,
skills, hooks and users call."""

from lme.core import entry_guard  # first: the venv check and a clean Ctrl-C (see its docstring)

entry_guard.start(__name__)

import sys

from lme.cli.loop_target import main
from lme.core.errors import run_main

if __name__ == "__main__":
    sys.exit(run_main(main))
