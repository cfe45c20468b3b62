"""The plugin's Stop hook: keep the Claude Code session that started the LongMemEval loop working until it is over.

Claude Code (2.1.332) runs it whenever a session is about to end its turn, in every project where the plugin is
enabled, with a JSON object on stdin (``session_id``, ``cwd``, ``hook_event_name: "Stop"``, ``stop_hook_active``,
``last_assistant_message``, ``transcript_path``, ...). To send the model on it prints
``{"hookSpecificOutput": {"hookEventName": "Stop", "additionalContext": ...}}`` and exits 0: 2.1.332's own schema
calls that "non-error feedback delivered to the model; the conversation continues", and it reaches the model as a
system reminder. (``{"decision": "block", "reason": ...}`` continues the session too, but the CLI reports every
such stop as a hook error: a ``stop-hook-error`` notification, "stop hook problem" on the screen.) Printing
nothing lets the session stop; ``{"systemMessage": ...}`` lets it stop and tells the user why (a BLOCKED loop: the
halt's reason in our words, e.g. "BLOCKED: official judge retired").

It sends the session on only when ``loop_session.verdict`` says so: a loop that THIS session started
(``loop_session.py start``) in this project, not cancelled, not CONFIRMED, not BLOCKED. Anything else - another
project, another session, no loop, a broken state file, a bug here, ``HOOK_TIME_LIMIT_S`` passed - lets the session
stop: this hook must never trap a user. ``stop_hook_active`` is not a reason to stop: it stays true for the rest of a
turn once the hook sent it on, and a loop round takes many stops. Claude Code itself ends a turn after 8
continuations in a row with no tool call between them (``CLAUDE_CODE_STOP_HOOK_BLOCK_CAP``); and this hook lets go
after ``loop_session.STALL_LIMIT`` stops in a row that changed none of the loop's files.

What it relays is ours: fixed sentences, and from the loop's files only what was checked to be a number, a commit
id or one of the known states. Any other text from a file is shown short, quoted and marked as file content
(``state_reader.quoted``), never as something to do. The files are read with ``state_reader`` (regular files only,
no symlink, never blocking, bounded).

Standard library only: it runs with ``python3`` before any venv is found, and exits 0 in every case.
"""

from __future__ import annotations

import io
import json
import signal
import sys
from contextlib import redirect_stdout

from lme.loop import stop_hook


def main() -> int:
    stop_hook.arm_time_limit()
    try:
        try:
            hook_input = json.loads(sys.stdin.read(stop_hook.STDIN_LIMIT) or "{}")
        except (ValueError, RecursionError):  # not a hook event of ours to judge
            return 0
        if not isinstance(hook_input, dict):
            return 0
        with redirect_stdout(io.StringIO()):  # nothing but our one JSON object may reach stdout
            output = stop_hook.decide(hook_input)
    except (Exception, stop_hook.HookTimeout) as err:  # noqa: BLE001 - a bug or a timeout lets the session stop
        message = f"longmemeval loop stop hook: {type(err).__name__}: {err}"
        output = {"systemMessage": stop_hook.one_line_message(message)}
    finally:
        if hasattr(signal, "setitimer"):
            signal.setitimer(signal.ITIMER_REAL, 0)
    if output is not None:
        print(json.dumps(output))
    return 0
