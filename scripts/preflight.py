"""Check that a run can start: config, dataset, upstream judge checkout, API keys, runs dir. Calls no model. Its
code is ``lme/cli/preflight.py``."""

from lme.core import entry_guard  # first: the venv check and a clean Ctrl-C (see its docstring)

entry_guard.start(__name__)

from lme.cli.preflight import main
from lme.core.errors import run_main

if __name__ == "__main__":
    raise SystemExit(run_main(main))
