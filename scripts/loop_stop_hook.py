"""The plugin's Stop hook: keep the Claude Code session that started the LongMemEval loop working until it is over.
Its code is ``lme/cli/loop_stop_hook.py``."""

from lme.cli.loop_stop_hook import main

if __name__ == "__main__":
    raise SystemExit(main())
