"""The target API: users' own targets import it as ``from targets import ...``. Its code is
``lme/targets/targets.py``; this file re-exports it under its old name."""

from lme.targets.targets import *  # noqa: F401,F403
