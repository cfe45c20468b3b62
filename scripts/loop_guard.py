"""Print the iteration loop's configuration, or check a planned loop run against its hard rules
(``lme/loop/rules.py``). Its code is ``lme/cli/loop_guard.py``."""

from lme.cli.loop_guard import main
from lme.core.errors import run_main

if __name__ == "__main__":
    raise SystemExit(run_main(main))
