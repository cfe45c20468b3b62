"""Self-test of the scoring path: synthetic runs with known truth, through the real judge label rule and metrics.
Its code is ``lme/cli/selftest_scoring.py``."""

from lme.core import entry_guard  # first: the venv check and a clean Ctrl-C (see its docstring)

entry_guard.start(__name__)

from lme.cli.selftest_scoring import main
from lme.core.errors import run_main

if __name__ == "__main__":
    raise SystemExit(run_main(main))
