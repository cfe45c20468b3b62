"""The plugin's Stop hook: keep the Claude Code session that started the LongMemEval loop working until it is over.

The command; its code is ``lme/cli/loop_stop_hook.py``. This file keeps the path that commands,
skills, hooks and users call."""

import sys

from lme.cli.loop_stop_hook import main

if __name__ == "__main__":
    sys.exit(main())
