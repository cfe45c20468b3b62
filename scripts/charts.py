"""PNG charts for a scorecard: per-type accuracy with Wilson intervals, and accuracy over loop rounds. Its code is
``lme/cli/charts.py``."""

from lme.core import entry_guard  # first: the venv check and a clean Ctrl-C (see its docstring)

entry_guard.start(__name__)

from lme.cli.charts import main
from lme.core.errors import run_main

if __name__ == "__main__":
    raise SystemExit(run_main(main))
