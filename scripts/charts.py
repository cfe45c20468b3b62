"""PNG charts for a scorecard: per-type accuracy with Wilson intervals, and accuracy over loop rounds.

The command; its code is ``lme/cli/charts.py``. This file keeps the path that commands,
skills, hooks and users call."""

from lme.core import entry_guard  # first: the venv check and a clean Ctrl-C (see its docstring)

entry_guard.start(__name__)

import sys

from lme.cli.charts import main
from lme.core.errors import run_main

if __name__ == "__main__":
    sys.exit(run_main(main))
