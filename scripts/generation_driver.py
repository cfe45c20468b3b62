"""Turn one LongMemEval item into a hypothesis with a target (the memory system under test).

The command; its code is ``lme/cli/generation_driver.py``. This file keeps the path that commands,
skills, hooks and users call. The target API has one public path, ``from targets import ...``
(``scripts/targets.py``), not this file."""

from lme.core import entry_guard  # first: the venv check and a clean Ctrl-C (see its docstring)

entry_guard.start(__name__)

import sys

from lme.cli.generation_driver import main
from lme.core.errors import run_main

if __name__ == "__main__":
    sys.exit(run_main(main))
