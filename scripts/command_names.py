"""The plugin's slash commands, as every script message prints them: the one place their names live.

The command; its code is ``lme/cli/command_names.py``. This file keeps the path that commands,
skills, hooks and users call."""

import sys

from lme.cli.command_names import main

if __name__ == "__main__":
    sys.exit(main())
