"""The loop's termination rule: a run at the target must be confirmed by a clean rerun before the loop ends. Its
code is ``lme/cli/confirm.py``."""

from lme.core import entry_guard  # first: the venv check and a clean Ctrl-C (see its docstring)

entry_guard.start(__name__)

from lme.cli.confirm import main
from lme.core.errors import run_main

if __name__ == "__main__":
    raise SystemExit(run_main(main))
