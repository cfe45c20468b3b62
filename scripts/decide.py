"""Keep or revert a fix: compare the pre-fix snapshot with the post-fix run and apply the loop's decision table. Its
code is ``lme/cli/decide.py``."""

from lme.core import entry_guard  # first: the venv check and a clean Ctrl-C (see its docstring)

entry_guard.start(__name__)

from lme.cli.decide import main
from lme.core.errors import run_main

if __name__ == "__main__":
    raise SystemExit(run_main(main))
