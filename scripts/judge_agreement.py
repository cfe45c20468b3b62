"""Measure a candidate judge against the official verdicts: agreement, Cohen's kappa, confusion matrix, flips.

The command; its code is ``lme/cli/judge_agreement.py``. This file keeps the path that commands,
skills, hooks and users call."""

from lme.core import entry_guard  # first: the venv check and a clean Ctrl-C (see its docstring)

entry_guard.start(__name__)

import sys

from lme.cli.judge_agreement import main
from lme.core.errors import run_main

if __name__ == "__main__":
    sys.exit(run_main(main))
