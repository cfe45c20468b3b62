"""Un-complete chosen questions of a run so that a resume re-runs exactly those. Its code is
``lme/cli/drop_qids.py``."""

from lme.core import entry_guard  # first: the venv check and a clean Ctrl-C (see its docstring)

entry_guard.start(__name__)

from lme.cli.drop_qids import main
from lme.core.errors import run_main

if __name__ == "__main__":
    raise SystemExit(run_main(main))
