"""Run LongMemEval: generate -> judge -> append -> mark completed, concurrently, resumably, with a call cache. Its
code is ``lme/cli/run_benchmark.py``."""

from lme.core import entry_guard  # first: the venv check and a clean Ctrl-C (see its docstring)

entry_guard.start(__name__)

from lme.cli.run_benchmark import main
from lme.core.errors import exit_now, run_main

if __name__ == "__main__":
    exit_now(run_main(main))
