"""Compare two runs question by question: fixes, regressions, net change and an exact McNemar p-value. Its code is
``lme/cli/compare_runs.py``."""

from lme.core import entry_guard  # first: the venv check and a clean Ctrl-C (see its docstring)

entry_guard.start(__name__)

from lme.cli.compare_runs import main
from lme.core.errors import run_main

if __name__ == "__main__":
    raise SystemExit(run_main(main))
