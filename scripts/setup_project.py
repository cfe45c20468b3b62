"""Set up a project for LongMemEval runs: venv, config, dataset, upstream checkout. Standard library only.

The command; its code is ``lme/cli/setup_project.py``. This file keeps the path that commands,
skills, hooks and users call."""

import sys

from lme.cli.setup_project import main
from lme.core.errors import run_main

if __name__ == "__main__":
    sys.exit(run_main(main))
