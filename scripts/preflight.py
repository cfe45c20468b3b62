"""Check that a run can start: config, dataset, upstream judge checkout, API keys, runs dir. Calls no model.

The command; its code is ``lme/cli/preflight.py``. This file keeps the path that commands,
skills, hooks and users call."""

from lme.core import entry_guard  # first: the venv check and a clean Ctrl-C (see its docstring)

entry_guard.start(__name__)

import sys

from lme.cli.preflight import main
from lme.core.errors import run_main

if __name__ == "__main__":
    sys.exit(run_main(main))
