"""The loop's noise floor: how often the UNCHANGED system's labels flip when its items are simply run again.

The command; its code is ``lme/cli/noise_floor.py``. This file keeps the path that commands,
skills, hooks and users call."""

from lme.core import entry_guard  # first: the venv check and a clean Ctrl-C (see its docstring)

entry_guard.start(__name__)

import sys

from lme.cli.noise_floor import main
from lme.core.errors import run_main

if __name__ == "__main__":
    sys.exit(run_main(main))
