"""Git for the iteration loop: commit, push and revert, only on the loop branch, never forced. Its code is
``lme/cli/loop_git.py``."""

from lme.cli.loop_git import main
from lme.core.errors import run_main

if __name__ == "__main__":
    raise SystemExit(run_main(main))
