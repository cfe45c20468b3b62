"""report.html: one self-contained page per run (no network; inline CSS, JS and SVG; data as embedded JSON).

The command; its code is ``lme/cli/report_html.py``. This file keeps the path that commands,
skills, hooks and users call."""

from lme.core import entry_guard  # first: the venv check and a clean Ctrl-C (see its docstring)

entry_guard.start(__name__)

import sys

from lme.cli.report_html import main
from lme.core.errors import run_main

if __name__ == "__main__":
    sys.exit(run_main(main))
