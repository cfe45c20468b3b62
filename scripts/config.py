"""The project's ``.longmemeval-benchmarks/config.json``: defaults, validated load, atomic write. Its code is
``lme/cli/config.py``."""

from lme.core import entry_guard  # first: the venv check and a clean Ctrl-C (see its docstring)

entry_guard.start(__name__)

from lme.cli.config import main
from lme.core.errors import run_main

if __name__ == "__main__":
    raise SystemExit(run_main(main))
