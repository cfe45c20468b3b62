"""The loop's noise floor: how often the UNCHANGED system's labels flip when its items are simply run again. Its
code is ``lme/cli/noise_floor.py``."""

from lme.core import entry_guard  # first: the venv check and a clean Ctrl-C (see its docstring)

entry_guard.start(__name__)

from lme.cli.noise_floor import main
from lme.core.errors import run_main

if __name__ == "__main__":
    raise SystemExit(run_main(main))
