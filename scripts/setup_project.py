"""Set up a project for LongMemEval runs: venv, config, dataset, upstream checkout. Standard library only. Its code
is ``lme/cli/setup_project.py``."""

from lme.cli.setup_project import main
from lme.core.errors import run_main

if __name__ == "__main__":
    raise SystemExit(run_main(main))
