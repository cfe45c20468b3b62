"""Give the iteration loop a target whose code lives in the project's git: a copy of memory-ref in ./memory_system,
or your own memory system.

The loop's fixes are commits on the loop branch and its reverts undo them, so the memory system it improves must
be in the project. Two ways, each done once (run again, it has nothing to do and says so):

``use-copy``: the reference system. The default target, ``memory-ref``, lives in the plugin; this does what a user
would otherwise do by hand (and what Claude Code cannot run unattended: it always asks before ``cp -r``):

1. copy the plugin's ``plugins/memory_ref`` to ``memory_system/`` with ``memory_system/target_api.json``, the
   target API and plugin version it was copied against (skipped when that folder exists: it is the user's code
   now, never overwritten);
2. set ``target`` and ``loop.target`` to ``memory_system`` in ``.longmemeval-benchmarks/config.json``;
3. commit the copy alone on the loop branch, so the first fix commit holds only the fix.

``use PATH``: your own system, a ``.py`` file (``generate(item, ctx)``), an executable or a package folder in the
project (``plugins/README.md``). It sets ``target`` and ``loop.target`` to PATH and ``loop.fix_paths`` to the file
(or the folder), takes memory-ref's settings (the symbolic layers, the model stack) out of the target options,
commits PATH on the loop branch, and, when setup's ``--allow-unattended`` wrote the loop's permission rules, adds
the rule that lets the loop edit PATH. A path outside the project, reached through a symbolic link, or missing is
refused with one line.

``update-copy``: after the plugin is updated, merge today's memory-ref into the copy, keeping your changes (git's
three-way merge: base = the copy as first made, ours = the loop branch's copy, theirs = today's memory-ref). A run
refuses, in one line naming this command, a copy made for another major of the target API or one that imports what
the plugin no longer has. Exit 0: merged (committed, the copy's record now names today's target API) or up to
date; 3: conflicts, the merge is left in progress (fix the marked lines, ``git add`` them and ``git commit``, or
``git merge --abort``); 4: no commit holds the copy as first made, today's memory-ref is on the branch
``memory-ref-<version>`` to diff, nothing merged; 2: refused (no copy, not on the loop branch, uncommitted
changes in the copy, a merge in progress), nothing changed.

Usage (from the project root, on the loop branch):
    python scripts/loop_target.py use-copy [--dest memory_system]
    python scripts/loop_target.py use memsys.py
    python scripts/loop_target.py update-copy [--dest memory_system]
"""

from __future__ import annotations

from typing import Sequence

from lme.cli import claude_settings
from lme.core import cli_parser
from lme.core import fileio
from lme.loop import copy_update
from lme.loop import target


def main(argv: Sequence[str] | None = None) -> int:
    parser, sub = cli_parser.loop_command_parser(__doc__.split("\n\n")[0], raw_description=False)
    p_copy = sub.add_parser("use-copy", help="copy memory-ref into the project and make it the loop's target")
    p_copy.add_argument("--dest", default=target.DEFAULT_DEST,
                        help=f"folder for the copy (default: {target.DEFAULT_DEST})")
    p_update = sub.add_parser("update-copy", help="merge today's memory-ref into your copy, keeping your changes "
                                                  "(exit 3: conflicts to resolve; 4: put on a branch to diff)")
    p_update.add_argument("--dest", default=target.DEFAULT_DEST,
                          help=f"your copy's folder (default: {target.DEFAULT_DEST})")
    p_use = sub.add_parser("use", help="make your own memory system (a file or folder in the project) the loop's "
                                       "target")
    p_use.add_argument("path", help="your system's .py file, executable or package folder, relative to the project")
    args = parser.parse_args(argv)
    if args.command == "update-copy":
        outcome = copy_update.update_copy(args.project, args.dest)
        print(outcome.line)
        return outcome.status
    if args.command == "use-copy":
        done = target.use_copy(args.project, args.dest)
    else:
        done = target.use_path(args.project, args.path)
    added = claude_settings.refresh_edit_rules(args.project, fileio.write_atomic_json)
    if added:
        done.append(f"added {', '.join(added)} to {claude_settings.SETTINGS_FILE.as_posix()} (the loop may edit "
                    "your system unattended)")
    print("\n".join(done))
    return 0
