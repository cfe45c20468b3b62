"""Git for the iteration loop: commit, push and revert, only on the loop branch, never forced.

Every git call of the loop goes through ``run_git``, which refuses force pushes and branch switches outright,
so an agent following the skill cannot do either by accident. A failed push stops the loop with the fix
(inspect the remote, ``git pull --rebase``, retry); it is never swallowed.

Usage:
    python scripts/loop_git.py commit -m "round v3: baseline" history_max_effort.md .max_effort_round
    python scripts/loop_git.py commit -m "round v3: baseline" --state     # the loop's own state files
    python scripts/loop_git.py commit -m "fix(v3): ..." --changed         # every changed file outside them
    python scripts/loop_git.py push
"""

from __future__ import annotations

import sys
from typing import Sequence

from lme.core import cli_parser
from lme.core.errors import UserError


def main(argv: Sequence[str] | None = None) -> int:
    parser, sub = cli_parser.loop_command_parser(__doc__, project_help="project root, a git work tree (default: cwd)")
    p_commit = sub.add_parser("commit", help="commit the named paths on the loop branch")
    p_commit.add_argument("-m", "--message", required=True, help="commit message")
    p_commit.add_argument("--state", action="store_true", help="also commit the loop's state files that exist")
    p_commit.add_argument("--changed", action="store_true",
                          help="also commit every changed or new (not ignored) file outside the loop's state and "
                               ".longmemeval-benchmarks/ (the fix); refused when there is none")
    p_commit.add_argument("paths", nargs="*", help="files or directories to commit")
    sub.add_parser("push", help="push the loop branch to the configured remote (never forced)")
    p_revert = sub.add_parser("revert", help="git revert --no-edit a commit on the loop branch")
    p_revert.add_argument("sha", help="the commit to revert")
    args = parser.parse_args(argv)
    from lme.loop import branch  # after parsing: --help and usage errors need none of the loop

    if args.command == "commit":
        paths = list(args.paths) + (branch.state_paths(args.project) if args.state else [])
        if args.changed:
            changed = branch.changed_paths(args.project)
            if not changed:
                raise UserError("no changed files outside the loop's state: there is no fix to commit",
                                fix="make the fix first (git status shows it), or name its files")
            print(f"committing: {', '.join(changed)}", file=sys.stderr)
            paths += changed
        sha = branch.commit(args.message, paths, project=args.project)
        print(sha or "nothing to commit")
    elif args.command == "push":
        print(f"pushed {branch.push(project=args.project)}")
    else:
        print(branch.revert(args.sha, project=args.project))
    return 0
