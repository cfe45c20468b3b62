"""Where a run stands, in one line: state, done/total, judged, errors, accuracy so far, dollars, rate, ETA. Its code
is ``lme/cli/run_status.py``."""

from lme.core import entry_guard  # first: the venv check and a clean Ctrl-C (see its docstring)

entry_guard.start(__name__)

from lme.cli.run_status import main
from lme.core.errors import exit_now, run_main

if __name__ == "__main__":
    exit_now(run_main(main))
