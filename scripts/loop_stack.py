"""The loop's model stack, set before the first spend: a cheap writer (not the reader model), then the cost of a
round. Its code is ``lme/cli/loop_stack.py``."""

from lme.core import entry_guard  # first: the venv check and a clean Ctrl-C (see its docstring)

entry_guard.start(__name__)

from lme.cli.loop_stack import main
from lme.core.errors import run_main

if __name__ == "__main__":
    raise SystemExit(run_main(main))
