"""Round bookkeeping for the iteration loop: the round counter, pre-fix snapshots, the loop's history log. Its code
is ``lme/cli/rounds.py``."""

from lme.cli.rounds import main
from lme.core.errors import run_main

if __name__ == "__main__":
    raise SystemExit(run_main(main))
