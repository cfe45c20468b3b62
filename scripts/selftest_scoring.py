"""Self-test of the scoring path: synthetic runs with known truth, through the real judge label rule and metrics.

The command; its code is ``lme/cli/selftest_scoring.py``. This file keeps the path that commands,
skills, hooks and users call."""

from lme.core import entry_guard  # first: the venv check and a clean Ctrl-C (see its docstring)

entry_guard.start(__name__)

import sys

from lme.cli.selftest_scoring import main
from lme.core.errors import run_main

if __name__ == "__main__":
    sys.exit(run_main(main))
