"""report.html: one self-contained page per run (no network; inline CSS, JS and SVG; data as embedded JSON). Its
code is ``lme/cli/report_html.py``."""

from lme.core import entry_guard  # first: the venv check and a clean Ctrl-C (see its docstring)

entry_guard.start(__name__)

from lme.cli.report_html import main
from lme.core.errors import run_main

if __name__ == "__main__":
    raise SystemExit(run_main(main))
