"""Give the iteration loop a target whose code lives in the project's git: a copy of memory-ref in ./memory_system.
Its code is ``lme/cli/loop_target.py``."""

from lme.core import entry_guard  # first: the venv check and a clean Ctrl-C (see its docstring)

entry_guard.start(__name__)

from lme.cli.loop_target import main
from lme.core.errors import run_main

if __name__ == "__main__":
    raise SystemExit(run_main(main))
