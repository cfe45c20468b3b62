"""Which Claude Code session drives the iteration loop, and whether that loop is over. Standard library only. Its
code is ``lme/cli/loop_session.py``."""

from lme.cli.loop_session import main
from lme.core.errors import run_main

if __name__ == "__main__":
    raise SystemExit(run_main(main))
