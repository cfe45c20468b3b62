"""The records a target receives and returns (``from records import ...`` in users' targets). Its code is
``lme/core/records.py``; this file re-exports it under its old name."""

from lme.core.records import *  # noqa: F401,F403
