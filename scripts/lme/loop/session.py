"""Which Claude Code session drives the iteration loop, and whether that loop is over. Standard library only.

The command (its parser, ``main()`` and help text) is ``lme/cli/loop_session.py``."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping


if str(Path(__file__).resolve().parents[2]) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from lme.core.clock import utc_now_iso
from lme.core import command_names  # noqa: E402  (stdlib-only siblings)
from lme.core import fileio  # noqa: E402
from lme.core.errors import UserError
from lme.core import state_reader  # noqa: E402
from lme.core.facts import (  # noqa: E402
    CONFIRMATION_FILE,
    DECISIONS_FILE,
    HISTORY_FILE,
    JUDGE_DAY_FILE,
    LOOP_SESSION_FILE,
    PROPOSAL_FILE,
    ROUND_FILE,
    RUNS_DIR,
    SCHEMA_VERSIONS,
    TRIGGER_SET_FILE,
)
from lme.loop.state import BLOCK_REASONS, history_rows
from lme.store.run_layout import WATCHED_FILES

SESSION_ENV = "CLAUDE_CODE_SESSION_ID"
"""Set by Claude Code (2.1.332) in the environment of every Bash command and hook it runs."""
STALL_LIMIT = 3
"""Stops in a row with no change to the loop's files after which the hook lets the session end."""
GIT_TIMEOUT_S = 5.0
"""Seconds a git call of ``fingerprint`` may take (the Stop hook's whole budget is ``HOOK_TIME_LIMIT_S``)."""
MAX_RUNS_WATCHED = 1000
"""Run folders whose result files ``fingerprint`` looks at, at most."""
HISTORY_ROWS_MAX = 1_000_000
"""Upper bound of the history row count the session file records (a larger value is clamped)."""
_WATCHED = (HISTORY_FILE, ROUND_FILE, DECISIONS_FILE, CONFIRMATION_FILE, TRIGGER_SET_FILE, PROPOSAL_FILE,
            JUDGE_DAY_FILE)


@dataclass(frozen=True)
class Verdict:
    keep_going: bool
    why: str
    """One line: what the hook decided on (``no loop``, ``CONFIRMED``, ``BLOCKED``, ...)."""


def session_path(project: Path) -> Path:
    return Path(project) / LOOP_SESSION_FILE


def read_state(project: Path) -> dict[str, Any] | None:
    """The session file's content; None when there is none. A broken file is a user error naming the fix."""
    path = session_path(project)
    try:
        data = state_reader.read_json(path)
    except state_reader.StateFileError as err:
        raise UserError(f"{path} is unreadable: {err.problem}",
                        fix="run loop_session.py start again (or delete the file)") from None
    if data is None:
        return None
    if not isinstance(data, dict):
        raise UserError(f"{path} is not a JSON object", fix="run loop_session.py start again (or delete the file)")
    return data


def counter(state: Mapping[str, Any], key: str, high: int) -> int:
    """A count kept in the session file, as a whole number in [0, high]: the file is data, and a value such as
    ``"stalls": -1000000000`` must not switch a guard off (anything that is not a number counts as 0)."""
    value = state.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return 0
    return int(max(0, min(high, value)))


def _write_state(project: Path, state: dict[str, Any]) -> None:
    path = session_path(project)
    fileio.make_dirs(path.parent)
    fileio.write_atomic_json(path, {"schemaVersion": SCHEMA_VERSIONS["loop-session"], **state})


def confirmed(project: Path) -> bool:
    try:
        data = state_reader.read_json(Path(project) / CONFIRMATION_FILE)
    except state_reader.StateFileError:
        return False
    return isinstance(data, dict) and data.get("status") == "confirmed"


def blocked_since(project: Path, rows_at_start: int) -> str | None:
    """The last BLOCKED row among the rows added to the history after the loop's start (None: none)."""
    rows = [row for row in history_rows(project)[rows_at_start:] if row.startswith("| BLOCKED |")]
    return rows[-1] if rows else None


def rows_since_start(project: Path) -> list[str]:
    """The history rows added since this project's loop session started (every row when none was started)."""
    try:
        state = read_state(project) or {}
    except UserError:
        state = {}
    return history_rows(project)[counter(state, "history_rows", HISTORY_ROWS_MAX):]


def block_reason(row: str) -> str:
    """What a BLOCKED row says, in our words: one of the known reasons (``loop_state.BLOCK_REASONS``) it holds, else
    a pointer to the history (its text is the file's, never relayed)."""
    found = [text for key, text in BLOCK_REASONS.items() if text in row]
    return found[0] if found else "a reason logged in history_max_effort.md"


def start(project: Path, session_id: str) -> str:
    """Record ``session_id`` as the loop's driver; returns the line to print. Another session's record is replaced."""
    if confirmed(project):
        return "the loop is over (CONFIRMED): nothing to keep going; report both run ids and both counts"
    try:
        previous = read_state(project) or {}
    except UserError:  # a broken record is replaced: that is the fix it names
        previous = {}
    state = {"session_id": session_id, "started_at": utc_now_iso("seconds"), "status": "active",
             "history_rows": len(history_rows(project)), "project": str(Path(project).resolve())}
    _write_state(project, state)
    if previous.get("session_id") not in (None, session_id) and previous.get("status") == "active":
        return (f"loop session {session_id}: taken over from session {previous['session_id']}; "
                "the Stop hook keeps this session going until CONFIRMED, BLOCKED or cancel")
    return (f"loop session {session_id}: the Stop hook keeps this session going until CONFIRMED, BLOCKED or "
            f"cancel ({command_names.CANCEL})")


def cancel(project: Path) -> str:
    state = read_state(project)
    if state is None or state.get("status") != "active":
        return "no active loop session: nothing to cancel"
    state.update(status="cancelled", ended_at=utc_now_iso("seconds"))
    _write_state(project, state)
    return f"loop session {state.get('session_id')} cancelled: Claude Code may end the session; the loop's state is kept"


def verdict(project: Path, session_id: str | None) -> Verdict:
    """Should the Stop hook keep ``session_id`` working in ``project``?"""
    state = read_state(project)
    if state is None:
        return Verdict(False, "no loop session in this project")
    if not session_id or state.get("session_id") != session_id:
        return Verdict(False, f"the loop belongs to another session ({state.get('session_id')})")
    if state.get("status") != "active":
        return Verdict(False, f"the loop session was {state.get('status')}")
    if confirmed(project):
        return Verdict(False, "CONFIRMED: the loop is over")
    row = blocked_since(project, counter(state, "history_rows", HISTORY_ROWS_MAX))
    if row is not None:
        return Verdict(False, f"BLOCKED: {block_reason(row)} (the loop is halted until a human acts)")
    return Verdict(True, "no CONFIRMED, no BLOCKED, not cancelled")


def fingerprint(project: Path) -> str:
    """A digest of the loop's files: it changes whenever a step of the loop did something."""
    import hashlib
    import itertools
    import subprocess

    project = Path(project)
    parts: list[str] = []
    for args in (["rev-parse", "HEAD"], ["status", "--porcelain"]):
        try:
            done = subprocess.run(["git", *args], cwd=project, capture_output=True, text=True, timeout=GIT_TIMEOUT_S)
            parts.append(done.stdout)
        except (OSError, subprocess.SubprocessError):
            parts.append("")
    files = [project / name for name in _WATCHED]
    runs = sorted(itertools.islice((project / RUNS_DIR).glob("*"), MAX_RUNS_WATCHED))
    files += [run / name for run in runs for name in WATCHED_FILES]
    for path in files:
        try:
            stat = path.stat()
            parts.append(f"{path}:{stat.st_size}:{stat.st_mtime_ns}")
        except OSError:
            parts.append(f"{path}:-")
    return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()


def note_stop(project: Path) -> int:
    """Record a stop the hook is about to block; returns how many stops in a row saw no progress (0: progress)."""
    state = read_state(project) or {}
    now = fingerprint(project)
    stalls = counter(state, "stalls", STALL_LIMIT) + 1 if state.get("fingerprint") == now else 0
    state.update(fingerprint=now, stalls=stalls)
    _write_state(project, state)
    return stalls


def current_session(explicit: str | None) -> str:
    session = explicit or os.environ.get(SESSION_ENV, "")
    if not session:
        raise UserError(f"no Claude Code session: {SESSION_ENV} is not set",
                        fix="run this from Claude Code (its Bash tool sets it), or pass --session ID")
    return session
