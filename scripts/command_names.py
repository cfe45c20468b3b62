"""The plugin's slash commands, as every script message prints them: the one place their names live. Its code is
``lme/cli/command_names.py``."""

from lme.cli.command_names import main

if __name__ == "__main__":
    raise SystemExit(main())
