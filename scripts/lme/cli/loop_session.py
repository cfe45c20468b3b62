"""Which Claude Code session drives the iteration loop, and whether that loop is over. Standard library only.

The plugin's Stop hook (``hooks/hooks.json`` -> ``loop_stop_hook.py``) keeps a Claude Code session working while
the loop it started is not over. This module is what the hook asks. The state is one file,
``.longmemeval-benchmarks/loop-session.json``: the session id that ran ``start`` (Claude Code gives its Bash
commands ``CLAUDE_CODE_SESSION_ID``), when, how many rows ``history_max_effort.md`` had then, and whether the
user cancelled.

The loop is over only on facts our scripts wrote, never on what the model says:
- CONFIRMED: ``confirmation.json`` says ``confirmed`` (``confirm.py finish`` judged the clean rerun at target);
- BLOCKED: a ``| BLOCKED |`` row was added to ``history_max_effort.md`` after ``start`` (``rounds.py blocked``);
- cancelled: the user ran ``loop_session.py cancel`` (the plugin's cancel command, ``command_names.CANCEL``).

One guard against a session that spins without doing anything (a step refused again and again, a permission
prompt nobody answers in a headless run): when the loop's files have not changed across ``STALL_LIMIT`` stops in
a row, the hook lets the session end and says why (``note_stop``). Progress is measured on the loop's files (git
HEAD and status, the round counter, history, decisions, confirmation, trigger set, proposal, the runs' result
files), never on what the model says.

Usage (from the project root):
    python scripts/loop_session.py start [--session ID]   # this Claude Code session drives the loop
    python scripts/loop_session.py cancel                 # the user's explicit stop: sessions may end again
    python scripts/loop_session.py status [--session ID]  # would the Stop hook keep this session going, and why
"""

from __future__ import annotations

import os
from typing import Sequence

from lme.core import cli_parser
from lme.loop import session


def main(argv: Sequence[str] | None = None) -> int:
    parser, sub = cli_parser.loop_command_parser(__doc__.split("\n\n")[0], raw_description=False)
    for name, text in (("start", "this Claude Code session drives the loop"),
                       ("status", "would the Stop hook keep this session going")):
        p = sub.add_parser(name, help=text)
        p.add_argument("--session", help=f"the Claude Code session id (default: ${session.SESSION_ENV})")
    sub.add_parser("cancel", help="the user's explicit stop: the Stop hook lets the session end")
    args = parser.parse_args(argv)
    if args.command == "cancel":
        print(session.cancel(args.project))
        return 0
    if args.command == "start":
        if not (args.session or os.environ.get(session.SESSION_ENV)):
            print(f"not in a Claude Code session ({session.SESSION_ENV} not set): no Stop hook to arm; the loop goes on as "
                  "long as you run its steps")
            return 0
        print(session.start(args.project, session.current_session(args.session)))
        return 0
    found = session.verdict(args.project, args.session or os.environ.get(session.SESSION_ENV))
    print(f"{'keeps going' if found.keep_going else 'may stop'}: {found.why}")
    return 0
