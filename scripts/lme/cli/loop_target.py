"""Give the iteration loop a target whose code lives in the project's git: a copy of memory-ref in ./memory_system.

The loop's fixes are commits on the loop branch and its reverts undo them, so the memory system it improves must
be in the project. The default target, ``memory-ref``, lives in the plugin. ``use-copy`` does, once, what a user
would otherwise do by hand (and what Claude Code cannot run unattended: it always asks before ``cp -r``):

1. copy the plugin's ``plugins/memory_ref`` to ``memory_system/`` (skipped when that folder exists: it is the
   user's code now, never overwritten);
2. set ``target`` and ``loop.target`` to ``memory_system`` in ``.longmemeval-benchmarks/config.json``;
3. commit the copy alone on the loop branch, so the first fix commit holds only the fix.

Run again, it has nothing to do and says so.

Usage (from the project root, on the loop branch):
    python scripts/loop_target.py use-copy [--dest memory_system]
"""

from __future__ import annotations

from typing import Sequence

from lme.core import cli_parser
from lme.loop import target as loop_target


def main(argv: Sequence[str] | None = None) -> int:
    parser, sub = cli_parser.loop_command_parser(__doc__.split("\n\n")[0], raw_description=False)
    p_copy = sub.add_parser("use-copy", help="copy memory-ref into the project and make it the loop's target")
    p_copy.add_argument("--dest", default=loop_target.DEFAULT_DEST,
                        help=f"folder for the copy (default: {loop_target.DEFAULT_DEST})")
    args = parser.parse_args(argv)
    print("\n".join(loop_target.use_copy(args.project, args.dest)))
    return 0
