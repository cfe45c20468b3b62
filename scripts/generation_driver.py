"""Turn one LongMemEval item into a hypothesis with a target (the memory system under test). Its code is
``lme/cli/generation_driver.py``. The target API has one public path, ``from targets import ...``
(``scripts/targets.py``), not this file."""

from lme.core import entry_guard  # first: the venv check and a clean Ctrl-C (see its docstring)

entry_guard.start(__name__)

from lme.cli.generation_driver import main
from lme.core.errors import run_main

if __name__ == "__main__":
    raise SystemExit(run_main(main))
