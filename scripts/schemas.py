"""Validate the run-state records against ``references/schemas/<name>.schema.json`` (JSON Schema 2020-12). Its code
is ``lme/cli/schemas.py``."""

from lme.core import entry_guard  # first: the venv check and a clean Ctrl-C (see its docstring)

entry_guard.start(__name__)

from lme.cli.schemas import main
from lme.core.errors import run_main

if __name__ == "__main__":
    raise SystemExit(run_main(main))
