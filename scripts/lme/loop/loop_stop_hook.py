"""The plugin's Stop hook: keep the Claude Code session that started the LongMemEval loop working until it is over.

Claude Code (2.1.332) runs it whenever a session is about to end its turn, in every project where the plugin is
enabled, with a JSON object on stdin (``session_id``, ``cwd``, ``hook_event_name: "Stop"``, ``stop_hook_active``,
``last_assistant_message``, ``transcript_path``, ...). Printing ``{"decision": "block", "reason": ...}`` makes
the model go on with ``reason`` as its next instruction; printing nothing lets the session stop.

It blocks only when ``loop_session.verdict`` says so: a loop that THIS session started (``loop_session.py
start``) in this project, not cancelled, not CONFIRMED, not BLOCKED. Anything else - another project, another
session, no loop, a broken state file, a bug here - lets the session stop: this hook must never trap a user.
``stop_hook_active`` is not a reason to stop: it stays true for the rest of a turn once the hook blocked, and a
loop round takes many stops. Claude Code itself ends a turn after 8 blocks in a row with no tool call between
them (``CLAUDE_CODE_STOP_HOOK_BLOCK_CAP``); and this hook lets go after ``loop_session.STALL_LIMIT`` stops in a
row that changed none of the loop's files (a step refused again and again cannot spin for ever either).

Standard library only: it runs with ``python3`` before any venv is found, and exits 0 in every case.
"""

from __future__ import annotations

import io
import json
import os
import sys
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any, Mapping

SCRIPTS = Path(__file__).resolve().parents[2]
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))

from lme.core.facts import LOOP_SESSION_FILE  # noqa: E402  (stdlib only)

# The other siblings are imported inside the functions that need them, on purpose: the hook runs on every stop in
# every project with the plugin, so a project without a loop imports nothing more, and a sibling that fails to
# import (a broken checkout, an edit in progress) is caught by main's guard and lets the session stop.

STATE_FILE = Path(LOOP_SESSION_FILE)


def projects(hook_input: Mapping[str, Any]) -> list[Path]:
    """Where to look for a loop: Claude Code's project dir, then the hook's cwd (deduplicated, existing only)."""
    found: list[Path] = []
    for candidate in (os.environ.get("CLAUDE_PROJECT_DIR"), hook_input.get("cwd")):
        if candidate and Path(candidate).is_dir() and Path(candidate) not in found:
            found.append(Path(candidate))
    return found


def loop_status_lines(project: Path) -> list[str]:
    """What ``rounds.py status`` says (its last line names the step to continue at)."""
    from lme.loop import loop_state

    try:
        return loop_state.status(project)
    except Exception as err:  # noqa: BLE001 - a status we cannot read is reported, the loop still goes on
        return [f"(rounds.py status failed: {err})"]


def reason(project: Path, why: str) -> str:
    from lme.core import command_names

    plugin = SCRIPTS.parent
    venv_run = f'bash "{plugin / "scripts" / "venv_run.sh"}"'
    lines = [f"The LongMemEval loop this session started in {project} is not over ({why}). Do not stop: "
             "continue it now.",
             "Where it stands (rounds.py status):", *[f"  {line}" for line in loop_status_lines(project)],
             f"Continue at the step that `next:` names, following the {command_names.LOOP_SKILL} skill, running "
             "its blocks as written from the project root.",
             f"If a run is going on in the background, wait for it: {venv_run} run_status.py --latest --wait 100",
             "It ends only on CONFIRMED (the clean confirmation rerun at the target), on BLOCKED (billing: "
             f"{venv_run} rounds.py blocked --reason billing), or when the user cancels with "
             f"{command_names.CANCEL}."]
    return "\n".join(lines)


def decide(hook_input: Mapping[str, Any]) -> dict[str, Any] | None:
    """The hook's output object, or None to let the session stop."""
    if hook_input.get("hook_event_name", "Stop") != "Stop":
        return None
    for project in projects(hook_input):
        if not (project / STATE_FILE).is_file():
            continue
        from lme.loop import loop_session

        found = loop_session.verdict(project, str(hook_input.get("session_id") or ""))
        if not found.keep_going:
            return None
        stalls = loop_session.note_stop(project)
        if stalls >= loop_session.STALL_LIMIT:
            from lme.core import command_names

            return {"systemMessage": f"LongMemEval loop: no change to the loop's files across {stalls + 1} stops in a "
                                     "row; letting the session end so a human can look (resume with "
                                     f"{command_names.ITERATE})"}
        return {"decision": "block", "reason": reason(project, found.why)}
    return None


def main() -> int:
    try:
        hook_input = json.loads(sys.stdin.read() or "{}")
    except ValueError:  # not a hook event of ours to judge
        return 0
    if not isinstance(hook_input, dict):
        return 0
    try:
        with redirect_stdout(io.StringIO()):  # nothing but our one JSON object may reach stdout
            output = decide(hook_input)
    except Exception as err:  # noqa: BLE001 - never trap a session on a bug: say it and let it stop
        print(json.dumps({"systemMessage": f"longmemeval loop stop hook: {type(err).__name__}: {err}"}))
        return 0
    if output is not None:
        print(json.dumps(output))
    return 0


if __name__ == "__main__":
    sys.exit(main())
