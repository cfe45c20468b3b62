"""Measure a candidate judge against the official verdicts: agreement, Cohen's kappa, confusion matrix, flips. Its
code is ``lme/cli/judge_agreement.py``."""

from lme.core import entry_guard  # first: the venv check and a clean Ctrl-C (see its docstring)

entry_guard.start(__name__)

from lme.cli.judge_agreement import main
from lme.core.errors import run_main

if __name__ == "__main__":
    raise SystemExit(run_main(main))
