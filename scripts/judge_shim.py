"""Judge with the official LongMemEval judge from the command line: one case, a hypotheses file, the verdict
archive. Its code is ``lme/cli/judge_shim.py``."""

from lme.core import entry_guard  # first: the venv check and a clean Ctrl-C (see its docstring)

entry_guard.start(__name__)

from lme.cli.judge_shim import main
from lme.core.errors import run_main

if __name__ == "__main__":
    raise SystemExit(run_main(main))
