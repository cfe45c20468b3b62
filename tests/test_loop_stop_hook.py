"""The loop's Stop hook and its session record: whom it keeps going, when it lets go, and that it never traps.

The hook runs as Claude Code runs it: ``python3 scripts/loop_stop_hook.py`` with the hook's JSON on stdin (the
fields 2.1.332 sends), in a project made by loop_testing. tests/test_claude_code.py drives it with the real CLI.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lme.core import command_names
from lme.loop import loop_session
from lme.loop import loop_state
from lme.core.errors import run_main
from loop_testing import make_loop_project

HOOK = Path(__file__).resolve().parent.parent / "scripts" / "loop_stop_hook.py"
SESSION = "0d4c6a1e-3f0b-4b7e-9a55-2d1f6a8c9e01"


def hook(project: Path, session: str = SESSION, *, stdin: str | None = None, **extra) -> tuple[int, dict | None, str]:
    """(exit status, the JSON object printed or None, stderr) for one Stop event."""
    payload = {"session_id": session, "transcript_path": str(project / "t.jsonl"), "cwd": str(project),
               "permission_mode": "default", "hook_event_name": "Stop", "stop_hook_active": False,
               "last_assistant_message": "I am done.", "background_tasks": [], **extra}
    env = {k: v for k, v in os.environ.items() if k != "CLAUDE_PROJECT_DIR"}
    done = subprocess.run(["python3", str(HOOK)], input=json.dumps(payload) if stdin is None else stdin,
                          capture_output=True, text=True, env=env, cwd=project, timeout=60)
    out = done.stdout.strip()
    return done.returncode, json.loads(out) if out else None, done.stderr


@pytest.fixture
def project(tmp_path):
    project = make_loop_project(tmp_path)
    loop_state.init(project)
    return project


def start(project: Path, session: str = SESSION) -> str:
    return loop_session.start(project, session)


def test_no_loop_in_the_project_lets_every_session_stop(project, tmp_path):
    assert hook(project) == (0, None, "")
    plain = tmp_path / "elsewhere"
    plain.mkdir()
    assert hook(plain) == (0, None, "")


def test_the_session_that_started_the_loop_is_sent_on_with_the_next_step(project):
    assert "the Stop hook keeps this session going" in start(project)
    code, out, _ = hook(project, stop_hook_active=True)  # true after a first block: still no reason to stop
    assert code == 0 and out["decision"] == "block"
    reason = out["reason"]
    assert "is not over" in reason and "next: step 1 (the full run resumes)" in reason
    assert "run_status.py --latest --wait 100" in reason and command_names.CANCEL in reason


def test_another_session_or_project_is_never_held(project, tmp_path):
    start(project)
    assert hook(project, "another-session") == (0, None, "")
    other = make_loop_project(tmp_path / "other")
    assert hook(other) == (0, None, "")


def test_confirmed_lets_go(project):
    start(project)
    (project / ".longmemeval-benchmarks" / "confirmation.json").write_text(json.dumps({"status": "confirmed"}))
    assert hook(project) == (0, None, "")
    assert "the loop is over (CONFIRMED)" in start(project)  # and a new start does not arm it again


def test_a_pending_or_failed_confirmation_does_not(project):
    start(project)
    (project / ".longmemeval-benchmarks" / "confirmation.json").write_text(json.dumps({"status": "pending"}))
    assert hook(project)[1]["decision"] == "block"


def test_blocked_after_the_start_lets_go_but_an_older_blocked_row_does_not(project):
    loop_state.blocked(project, "billing")  # a halt of an earlier session, fixed since
    start(project)
    assert hook(project)[1]["decision"] == "block"
    loop_state.blocked(project, "cost")
    assert hook(project) == (0, None, "")
    assert "waiting for the user's approval" in (project / "history_max_effort.md").read_text()


def test_the_users_cancel_lets_go_and_a_new_start_arms_it_again(project, capsys):
    start(project)
    assert run_main(loop_session.main, ["--project", str(project), "cancel"]) == 0
    assert "cancelled" in capsys.readouterr().out
    assert hook(project) == (0, None, "")
    assert run_main(loop_session.main, ["--project", str(project), "cancel"]) == 0
    assert "nothing to cancel" in capsys.readouterr().out
    start(project)
    assert hook(project)[1]["decision"] == "block"


def test_three_stops_in_a_row_without_progress_let_go_and_progress_resets_the_count(project):
    start(project)
    assert [hook(project)[1].get("decision") for _ in range(3)] == ["block"] * 3
    (project / "memory_system.py").write_text("FIX = 1\n")  # the work tree changed: progress
    assert [hook(project)[1].get("decision") for _ in range(3)] == ["block"] * 3
    code, out, _ = hook(project)
    assert code == 0 and "decision" not in out and "across 4 stops in a row" in out["systemMessage"]
    assert command_names.ITERATE in out["systemMessage"]


def test_a_broken_state_file_or_input_never_traps(project):
    state = project / loop_session.SESSION_FILE
    state.parent.mkdir(parents=True, exist_ok=True)
    state.write_text("{not json")
    code, out, _ = hook(project)
    assert code == 0 and "decision" not in out and "loop_session.py start again" in out["systemMessage"]
    assert hook(project, stdin="not json") == (0, None, "")
    assert hook(project, stdin="[1, 2]") == (0, None, "")
    start(project)
    assert hook(project, hook_event_name="SubagentStop") == (0, None, "")


def test_the_hook_finds_the_project_from_claude_project_dir_when_its_cwd_is_a_subfolder(project):
    start(project)
    sub = project / "memory_system"
    sub.mkdir()
    env = {**os.environ, "CLAUDE_PROJECT_DIR": str(project)}
    done = subprocess.run(["python3", str(HOOK)], input=json.dumps({"session_id": SESSION, "cwd": str(sub),
                                                                    "hook_event_name": "Stop"}),
                          capture_output=True, text=True, env=env, cwd=sub, timeout=60)
    assert json.loads(done.stdout)["decision"] == "block"


def test_the_hook_is_standard_library_only_and_fast_without_a_loop(tmp_path):
    done = subprocess.run([sys.executable, "-S", "-X", "importtime", str(HOOK)], input="{}", capture_output=True,
                          text=True, cwd=tmp_path, timeout=60)
    assert done.returncode == 0 and done.stdout == ""
    assert "loop_session" not in done.stderr  # nothing of ours is imported when there is no loop


def test_start_outside_claude_code_arms_nothing(project, capsys, monkeypatch):
    monkeypatch.delenv("CLAUDE_CODE_SESSION_ID", raising=False)
    assert run_main(loop_session.main, ["--project", str(project), "start"]) == 0
    assert "not in a Claude Code session" in capsys.readouterr().out
    assert not (project / loop_session.SESSION_FILE).exists()
    monkeypatch.setenv("CLAUDE_CODE_SESSION_ID", SESSION)
    assert run_main(loop_session.main, ["--project", str(project), "start"]) == 0
    assert json.loads((project / loop_session.SESSION_FILE).read_text())["session_id"] == SESSION
    assert run_main(loop_session.main, ["--project", str(project), "status"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "keeps going: no CONFIRMED, no BLOCKED, not cancelled"


def test_a_new_session_takes_the_loop_over(project):
    start(project, "first")
    assert "taken over from session first" in start(project, "second")
    assert hook(project, "first") == (0, None, "")
    assert hook(project, "second")[1]["decision"] == "block"


def test_the_session_record_is_never_committed_by_the_loop(project):
    start(project)
    from lme.loop import loop_git

    assert loop_session.SESSION_FILE not in loop_git.changed_paths(project)
