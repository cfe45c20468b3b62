"""Judge with the official LongMemEval judge from the command line: one case, a hypotheses file, the verdict archive.

The command; its code is ``lme/cli/judge_shim.py``. This file keeps the path that commands,
skills, hooks and users call."""

from lme.core import entry_guard  # first: the venv check and a clean Ctrl-C (see its docstring)

entry_guard.start(__name__)

import sys

from lme.cli.judge_shim import main
from lme.core.errors import run_main

if __name__ == "__main__":
    sys.exit(run_main(main))
