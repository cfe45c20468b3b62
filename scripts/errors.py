"""User-facing errors and the one way a script's ``main`` turns them into an exit status.

A user mistake (bad config, bad path, bad argument) raises ``UserError`` with one line that says what failed,
where, and how to fix it. ``run_main`` prints that line to stderr and returns 2: never a traceback.
"""

from __future__ import annotations

import sys
from typing import Callable, Sequence

EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130


class UserError(Exception):
    """A mistake the user can fix. ``str(err)`` is the whole message: one line, names the fix."""

    def __init__(self, message: str, *, fix: str | None = None) -> None:
        text = " ".join(message.split())
        if fix:
            text = f"{text} ({' '.join(fix.split())})"
        super().__init__(text)


def run_main(main: Callable[[Sequence[str] | None], int | None], argv: Sequence[str] | None = None) -> int:
    """Call ``main(argv)``; map UserError to one stderr line + exit 2 and Ctrl-C to 130."""
    try:
        return int(main(argv) or 0)
    except UserError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
