"""Score a run: metrics.json, scorecard.md and charts in the run directory; the Markdown table on stdout. Its code
is ``lme/cli/scorecard.py``."""

from lme.core import entry_guard  # first: the venv check and a clean Ctrl-C (see its docstring)

entry_guard.start(__name__)

from lme.cli.scorecard import main
from lme.core.errors import exit_now, run_main

if __name__ == "__main__":
    exit_now(run_main(main))
