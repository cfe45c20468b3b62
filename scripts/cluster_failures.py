"""Group a run's failures by question type and failure mode: step A of the loop's cluster -> diagnose -> propose.
Its code is ``lme/cli/cluster_failures.py``."""

from lme.core import entry_guard  # first: the venv check and a clean Ctrl-C (see its docstring)

entry_guard.start(__name__)

from lme.cli.cluster_failures import main
from lme.core.errors import run_main

if __name__ == "__main__":
    raise SystemExit(run_main(main))
