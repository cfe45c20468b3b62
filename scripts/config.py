"""The project's ``.longmemeval-benchmarks/config.json``: defaults, validated load, atomic write.

The command; its code is ``lme/cli/config.py``. This file keeps the path that commands,
skills, hooks and users call."""

from lme.core import entry_guard  # first: the venv check and a clean Ctrl-C (see its docstring)

entry_guard.start(__name__)

import sys

from lme.cli.config import main
from lme.core.errors import run_main

if __name__ == "__main__":
    sys.exit(run_main(main))
