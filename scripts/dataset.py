"""Stream and validate a LongMemEval file (plain, ``.xz`` or ``.gz``), hashing it in the same pass. Its code is
``lme/cli/dataset.py``."""

from lme.core import entry_guard  # first: the venv check and a clean Ctrl-C (see its docstring)

entry_guard.start(__name__)

from lme.cli.dataset import main
from lme.core.errors import run_main

if __name__ == "__main__":
    raise SystemExit(run_main(main))
