"""Recognise a LongMemEval file by its content, not its bytes: one sha256 per item, compared with the releases we
can vouch for (``references/dataset-fingerprints.json``). Its code is ``lme/cli/fingerprints.py``."""

from lme.core import entry_guard  # first: the venv check and a clean Ctrl-C (see its docstring)

entry_guard.start(__name__)

from lme.cli.fingerprints import main
from lme.core.errors import run_main

if __name__ == "__main__":
    raise SystemExit(run_main(main))
