"""The plugin's Stop hook: keep the Claude Code session that started the LongMemEval loop working until it is over.

The command (its parser, ``main()`` and help text) is ``lme/cli/loop_stop_hook.py``."""

from __future__ import annotations

import json
import os
import re
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, Mapping

SCRIPTS = Path(__file__).resolve().parents[2]
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))

from lme.core.facts import LOOP_SESSION_FILE  # noqa: E402  (stdlib only)

# The other siblings are imported inside the functions that need them, on purpose: the hook runs on every stop in
# every project with the plugin, so a project without a loop imports nothing more, and a sibling that fails to
# import (a broken checkout, an edit in progress) is caught by main's guard and lets the session stop.

STATE_FILE = Path(LOOP_SESSION_FILE)
HOOK_TIME_LIMIT_S = 10.0
"""The hook's whole budget (Claude Code's timeout for it is 30 s, hooks/hooks.json): past it the session may stop."""
STDIN_LIMIT = 8 * 1024 * 1024
"""Bytes of the hook's input read at most (the event JSON: a few KB, plus the last assistant message)."""
MESSAGE_CHARS = 300
"""Characters of an error shown at most in the message that lets the session stop."""
_SHA = re.compile(r"^[0-9a-f]{7,64}$")
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
_SUCCESSOR = re.compile(r"^[a-z][a-z0-9_-]{0,30}:[A-Za-z0-9][A-Za-z0-9._:/-]{0,99}$")
_CELL_FIGURES = (re.compile(r"^(v\d{1,9}|BLOCKED|JUDGE)$"), re.compile(r"^\d{4}-\d{2}-\d{2}$"),
                 re.compile(r"^(\d{1,9}/\d{1,9}|n/a)$"), re.compile(r"^(\d\.\d{4}|n/a)$"))


class HookTimeout(BaseException):
    """``HOOK_TIME_LIMIT_S`` passed (a BaseException: no ``except Exception`` on the way may swallow it)."""


def projects(hook_input: Mapping[str, Any]) -> list[Path]:
    """Where to look for a loop: Claude Code's project dir, then the hook's cwd (deduplicated, existing only)."""
    found: list[Path] = []
    for candidate in (os.environ.get("CLAUDE_PROJECT_DIR"), hook_input.get("cwd")):
        if isinstance(candidate, str) and candidate and Path(candidate).is_dir() and Path(candidate) not in found:
            found.append(Path(candidate))
    return found


def _checked(value: Any, allowed: Any) -> str:
    """``value`` as it is when it is one of ``allowed`` (a tuple) or matches it (a pattern), else quoted as data."""
    text = value if isinstance(value, str) else json.dumps(value)
    ok = text in allowed if isinstance(allowed, tuple) else bool(allowed.match(text))
    if ok:
        return text
    from lme.core import state_reader

    return f"({state_reader.quoted(text)})"


def history_figures(row: str) -> str:
    """A history row's round, date, correct/n and overall, each checked; its note (free text) is left out."""
    cells = [cell.strip() for cell in row.strip().strip("|").split("|")]
    shown = [_checked(cell, pattern) for cell, pattern in zip(cells[:4], _CELL_FIGURES)]
    return " ".join(shown)


def where_it_stands(project: Path) -> list[str]:
    """The loop's position for the model: checked facts and the next step, never a state file's text as such."""
    from lme.loop import state
    from lme.core import state_reader

    try:
        where = state.position(project)
    except state_reader.StateFileError as err:
        name = err.path.name
        content = f" ({state_reader.quoted(err.content)})" if err.content is not None else ""
        return [f"the loop's state could not be read: {name} {err.problem}{content}; run rounds.py status "
                "(the skill's Setup) and fix what it names"]
    except Exception as err:  # noqa: BLE001 - a status we cannot read is reported by kind; the loop still goes on
        return [f"the loop's state could not be read ({type(err).__name__}); run rounds.py status (the skill's "
                "Setup) and fix what it names"]
    facts = [f"round v{where.round_no}", judge_fact(where.judge)]
    if where.round_no:
        facts.append(f"snapshot {'present' if where.has_snapshot else 'missing'}")
        facts.append(f"fix commit {_checked(where.fix_sha[:12], _SHA) if where.fix_sha else 'none'}")
        facts.append(f"decision {_checked(where.decision, state.DECISIONS) if where.decision else 'none'}")
    if where.confirmation:
        facts.append(f"confirmation {_checked(where.confirmation.get('status'), state.CONFIRMATION_STATES)}")
        run = where.confirmation.get("confirm_run_id")
        if run:
            facts.append(f"(rerun {_checked(run, _RUN_ID)})")
    lines = ["; ".join(facts)]
    lines += [f"history: {history_figures(row)}" for row in where.history]
    lines.append(f"next: {where.step}")
    return lines


def judge_fact(judge: Any) -> str:
    """Who judges the loop (``rules.LoopJudge``), the successor's name checked."""
    if judge is None or judge.kind == "official":
        return "judge: the official one"
    if judge.kind == "successor":
        return f"judge: the successor {_checked(judge.successor, _SUCCESSOR)} (the official judge retired)"
    return "judge: the official one retired, no successor baseline yet"


def reason(project: Path, why: str) -> str:
    """What the model is told to do next (the continuation's text): short, our words, checked facts."""
    from lme.core import command_names

    venv_run = f'bash "{SCRIPTS / "venv_run.sh"}"'
    lines = [f"The LongMemEval loop this session started in {json.dumps(str(project))} is not over ({why}): "
             "continue it now, do not stop.",
             "Where it stands (checked figures from the loop's files):",
             *[f"  {line}" for line in where_it_stands(project)],
             f"Continue at the step `next:` names, as the loop's skill ({command_names.ITERATE}) says, its blocks as "
             f"written from the project root; wait for a background run with {venv_run} run_status.py --latest "
             "--wait 100.",
             f"It ends only on CONFIRMED, on BLOCKED ({venv_run} rounds.py blocked --reason billing on a billing "
             "error; a loop run that finds the official judge retired logs its own) or when the user cancels "
             f"({command_names.CANCEL})."]
    return "\n".join(lines)


def continuation(text: str) -> dict[str, Any]:
    """The output that sends the model on with ``text``, as Claude Code 2.1.332 takes it without calling it an
    error: Stop's ``hookSpecificOutput.additionalContext``."""
    return {"hookSpecificOutput": {"hookEventName": "Stop", "additionalContext": text}}


def decide(hook_input: Mapping[str, Any]) -> dict[str, Any] | None:
    """The hook's output object, or None to let the session stop."""
    if hook_input.get("hook_event_name", "Stop") != "Stop":
        return None
    for project in projects(hook_input):
        if not (project / STATE_FILE).is_file():
            continue
        from lme.loop import session

        found = session.verdict(project, str(hook_input.get("session_id") or ""))
        if not found.keep_going:
            return halted(found.why)
        stalls = session.note_stop(project)
        if stalls >= session.STALL_LIMIT:
            from lme.core import command_names

            return {"systemMessage": f"LongMemEval loop: no change to the loop's files across {stalls + 1} stops in a "
                                     "row; letting the session end so a human can look (resume with "
                                     f"{command_names.ITERATE})"}
        return continuation(reason(project, found.why))
    return None


def halted(why: str) -> dict[str, Any] | None:
    """The session may stop: None, or for a BLOCKED loop the message that tells the user why (``why`` is the
    verdict's: our words only)."""
    if not why.startswith("BLOCKED"):
        return None
    from lme.core import command_names

    return {"systemMessage": f"LongMemEval loop: {why}; letting the session end so the user can decide (the loop's "
                             f"last lines name the choices; resume with {command_names.ITERATE})"}


def one_line_message(text: str) -> str:
    flat = " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())
    return flat if len(flat) <= MESSAGE_CHARS else flat[: MESSAGE_CHARS - 1] + "\u2026"


def _on_alarm(signum: int, frame: object) -> None:
    raise HookTimeout(f"the hook took longer than {HOOK_TIME_LIMIT_S:g} s")


def arm_time_limit() -> None:
    """Raise ``HookTimeout`` once the hook has run ``HOOK_TIME_LIMIT_S`` seconds."""
    if hasattr(signal, "setitimer"):  # POSIX; elsewhere the CLI's own timeout is the limit
        signal.signal(signal.SIGALRM, _on_alarm)
        signal.setitimer(signal.ITIMER_REAL, HOOK_TIME_LIMIT_S)
