"""Exchange files with upstream LongMemEval's evaluation scripts. Its code is ``lme/cli/interop.py``."""

from lme.core import entry_guard  # first: the venv check and a clean Ctrl-C (see its docstring)

entry_guard.start(__name__)

from lme.cli.interop import main
from lme.core.errors import run_main

if __name__ == "__main__":
    raise SystemExit(run_main(main))
