"""Generate the small synthetic LongMemEval-format dataset shipped with the plugin.

The command; its code is ``lme/cli/sample_data.py``. This file keeps the path that commands,
skills, hooks and users call."""

import sys

from lme.cli.sample_data import main
from lme.core.errors import run_main

if __name__ == "__main__":
    sys.exit(run_main(main))
