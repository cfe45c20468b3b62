"""Generate the small synthetic LongMemEval-format dataset shipped with the plugin. Its code is
``lme/cli/sample_data.py``."""

from lme.cli.sample_data import main
from lme.core.errors import run_main

if __name__ == "__main__":
    raise SystemExit(run_main(main))
