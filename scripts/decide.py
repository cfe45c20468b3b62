"""Keep or revert a fix: compare the pre-fix snapshot with the post-fix run and apply the loop's decision table.

The command; its code is ``lme/cli/decide.py``. This file keeps the path that commands,
skills, hooks and users call."""

from lme.core import entry_guard  # first: the venv check and a clean Ctrl-C (see its docstring)

entry_guard.start(__name__)

import sys

from lme.cli.decide import main
from lme.core.errors import run_main

if __name__ == "__main__":
    sys.exit(run_main(main))
