"""The unattended loop under the real Claude Code CLI (pinned 2.1.332): its standing rules allow the loop and
nothing more, and the Stop hook's continuations are not reported as hook errors.

One headless session in a project where ``setup --allow-unattended`` wrote its rules ("iterate LongMemEval" in
chat, the path those rules exist for): the scripted model first tries what issue 25 found the rules let through
(code named on the command line, a project outside the working folder, ``--yes`` past the cost gate, a write
outside the memory system), then runs the loop's two rounds and its confirmation as the skill says. Each attempt
is refused, by the CLI (no rule matches) or by the script (one ``error:`` line, exit 2), nothing it names ran or
was written, and the loop itself meets no permission prompt. A second test drives the CLI interactively in tmux and
reads the screen: the hook's continuations show as hook output, never as "stop hook problem".

Without the CLI the tests skip locally and fail under CI (tests/run_tests.sh installs it); without tmux the
interactive test skips.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

import claude_code_harness as harness
import markdown_harness
from fake_claude_api import Exchange, ScriptedClaude, bash, once, play_blocks, say, skill_body, tool
from fake_llm_server import FakeLLMServer
from test_claude_code import LOOP_SKILL, FixAwareReader, _round, calls_of, llm_env, make_project

REPO = harness.REPO
MARKER = "pwned.txt"
EVIL_PY = ("import pathlib\n"
           f"pathlib.Path(__file__).with_name({MARKER!r}).write_text('ran')\n"
           "def generate(item, ctx):\n    raise RuntimeError('never called')\n")
"""A target file that leaves a marker beside itself the moment it is imported."""


@pytest.fixture
def cc(claude_code_installed, tmp_path) -> harness.ClaudeCode:
    return claude_code_installed.clone(tmp_path / "home")


def tree(root: Path) -> dict[str, Any]:
    """Every path below ``root`` with its size and bytes' hash (what "nothing was written" compares)."""
    import hashlib

    return {p.relative_to(root).as_posix(): (p.stat().st_size, hashlib.sha256(p.read_bytes()).hexdigest())
            if p.is_file() else "dir" for p in sorted(root.rglob("*")) if not p.is_symlink()}


def attacks(plugin: Path, outside: Path, other: Path) -> dict[str, str]:
    """What issue 25 ran through the standing rules, each as one Bash line (name -> command)."""
    venv_run = f'bash "{plugin}/scripts/venv_run.sh"'
    loop_run = f'bash "{plugin}/scripts/parallel_longmemeval.sh" 8 133 500'
    command = shlex.quote(json.dumps(["sh", "-c", f"id > {outside / 'id.txt'}"]))
    return {
        "run: --target command": f"{venv_run} run_benchmark.py --target command --target-option command={command}",
        "loop run: --target command": f"{loop_run} --background --target command --target-option command={command}",
        "loop run: --target file": f"{loop_run} --background --target {outside / 'evil.py'}",
        "setup: --project outside": f'python3 "{plugin}/scripts/setup_project.py" --project {other} --skip-venv '
                                    "--sample",
        "run: --project outside": f"{venv_run} run_benchmark.py --project {other} --offline --max 1",
        "loop run: --project outside": f"{loop_run} --background --project {other}",
        "loop command: --project outside": f"{venv_run} rounds.py --project {other} status",
        "loop run: --yes above the budget": f"{loop_run} --background --yes",
    }


CLI_REFUSES = ("run: --target command", "setup: --project outside", "run: --project outside")
"""No standing rule matches these lines (the rules are the loop skill's): the CLI denies them."""


def test_the_standing_rules_allow_the_loop_and_refuse_the_rest(
        claude_code_installed, long_claude_code_sessions, tmp_path, request):
    StandingRules.joined(long_claude_code_sessions.get(request.node.name), claude_code_installed, tmp_path)


def _standing_rules(cc: harness.ClaudeCode, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    project, env = make_project(tmp_path, upstream=True)
    markdown_harness.SETUPS["loop"](project, env, fake_llm)
    fake_llm.answer_fn = markdown_harness.writer_aware(FixAwareReader(fake_llm))
    env |= llm_env(fake_llm)
    subprocess.run([sys.executable, str(cc.plugin_dir / "scripts" / "setup_project.py"), "--skip-venv",
                    "--allow-unattended"], cwd=project, check=True, capture_output=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "evil.py").write_text(EVIL_PY)
    other = tmp_path / "other-project"
    shutil.copytree(project, other, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    (other / ".max_effort_round").write_text("0\n")
    before = {"outside": tree(outside), "other": tree(other)}

    lines = attacks(cc.plugin_dir, outside, other)
    config = project / ".longmemeval-benchmarks" / "config.json"
    saved: dict[str, str] = {}

    def yes_past_the_gate(exchange: Exchange) -> Any:  # a run above confirmCostUsd: --yes is the agent's own
        saved["config"] = config.read_text(encoding="utf-8")
        cfg = json.loads(saved["config"])
        config.write_text(json.dumps({**cfg, "confirmCostUsd": 0.000001}, indent=2) + "\n", encoding="utf-8")
        return bash(lines["loop run: --yes above the budget"])

    def gate_back(exchange: Exchange) -> None:
        config.write_text(saved["config"], encoding="utf-8")
        return None

    skill = skill_body(LOOP_SKILL)
    hook_reasons: list[str] = []
    script = [
        tool("Skill", {"skill": LOOP_SKILL}),  # "iterate LongMemEval": the Skill rule setup wrote allows it
        play_blocks(skill, "loop_target.py use-copy", "check_setup.sh", "loop_session.py\" start",
                    "loop_guard.py config"),
        *[bash(line) for name, line in lines.items() if name != "loop run: --yes above the budget"],
        once(yes_past_the_gate), gate_back,
        tool("Write", {"file_path": str(outside / "note.txt"), "content": "written outside\n"}),
        tool("Write", {"file_path": str(config), "content": "{}\n"}),  # the config is the user's, not the agent's
        *_round(project, 1, hook_reasons),
        *_round(project, 2, hook_reasons),
        play_blocks(skill, "--background", "run_status.py --run-id longmemeval-iter", "--confirm"),
        say("CONFIRMED: the loop is over."),
    ]
    with ScriptedClaude(script) as fake:
        session = cc.session("iterate LongMemEval", cwd=project, base_url=fake.base_url, env=env, timeout=480)
    transcript = session.describe()
    assert session.returncode == 0 and fake.errors == [] and fake.overruns == 0 and fake.finished, transcript

    # Refused by the CLI: exactly the lines no standing rule matches, and the two writes outside the loop's files.
    denied = [(d["tool_name"], d["tool_input"].get("command") or d["tool_input"].get("file_path"))
              for d in session.permission_denials]
    assert denied == [*(("Bash", lines[name]) for name in CLI_REFUSES),
                      ("Write", str(outside / "note.txt")), ("Write", str(config))], transcript
    results = {command: (output, failed) for command, output, failed in session.bash_calls()}
    if os.environ.get("LONGMEMEVAL_CC_TRANSCRIPTS"):  # a folder: what each attempt got back lands there
        folder = Path(os.environ["LONGMEMEVAL_CC_TRANSCRIPTS"])
        folder.mkdir(parents=True, exist_ok=True)
        denials = [f"{d['tool_name']} {json.dumps(d['tool_input'])[:200]}" for d in session.permission_denials]
        writes = {str(r.get("tool_use_id")): harness.result_text(r) for r in session.tool_results().values()}
        (folder / "unattended-attempts.txt").write_text("\n".join(
            [*(f"{name}: {results[line][0]}" for name, line in lines.items()), "denials:", *denials,
             "write results:", *(f"{u['input']['file_path']}: {writes.get(u['id'])}" for u in session.tool_uses("Write"))
             ]) + "\n", encoding="utf-8")
    for name in CLI_REFUSES:
        assert results[lines[name]] == ("This command requires approval", True), (name, results[lines[name]])
    # Refused by the script: one error line, exit 2, before anything ran.
    for name, line in lines.items():
        if name in CLI_REFUSES:
            continue
        output, failed = results[line]
        errors = [out for out in output.splitlines() if out.startswith("error: ")]
        assert failed and output.startswith("Exit code 2\n") and len(errors) == 1, (name, output)
        assert "in a loop session" in errors[0], (name, output)
    # Nothing they name ran or was written: no id output, no marker, the other project and the outside untouched.
    assert tree(outside) == before["outside"] and tree(other) == before["other"]
    assert not list(tmp_path.rglob("id.txt")) and not list(tmp_path.rglob(MARKER))
    assert json.loads(config.read_text())["target"] == "memory_system"

    # The loop itself: its lines all ran unprompted (no denial past the attempts), two kept rounds, confirmed.
    assert "CONFIRMED" in calls_of(session, "--confirm")[-1][1]
    state = project / ".longmemeval-benchmarks"
    decisions = [json.loads(line) for line in (state / "decisions.jsonl").read_text().splitlines()]
    assert [(d["round"], d["decision"]) for d in decisions] == [(1, "keep"), (2, "keep")], decisions
    # The Stop hook sent the session on twice, as a continuation the CLI does not call an error.
    assert len(hook_reasons) == 2 and all("Stop hook additional context" in r and "next: step 1" in r
                                          for r in hook_reasons), hook_reasons
    problems = [e for e in session.events if e.get("type") == "system" and (
        e.get("key") == "stop-hook-error" or "hook problem" in str(e.get("text", "")))]
    assert problems == [], problems


StandingRules = harness.played(_standing_rules)
"""Its session, in a thread while the suite runs (conftest.py)."""


# --------------------------------------------------------------------------- interactive: what the screen shows


def _screen(name: str) -> str:
    return subprocess.run(["tmux", "capture-pane", "-p", "-t", name, "-S", "-300"], capture_output=True,
                          text=True).stdout


def test_an_interactive_session_shows_the_hooks_continuations_as_no_problem(cc, tmp_path):
    if shutil.which("tmux") is None:
        if harness.cli_required():
            pytest.fail("tmux is not installed (tests/run_tests.sh installs it as root; apt-get install tmux)")
        pytest.skip("tmux is not installed (apt-get install tmux)")
    project, env = make_project(tmp_path)
    session_id = str(uuid.uuid4())
    (project / ".max_effort_round").write_text("0\n")
    (project / ".longmemeval-benchmarks" / "loop-session.json").write_text(json.dumps(
        {"session_id": session_id, "status": "active", "history_rows": 0}))
    key = harness.base_env(cc.home)["ANTHROPIC_API_KEY"]
    settings = cc.home / ".claude.json"  # no first-run screens: onboarding done, the key and the folder accepted
    data = json.loads(settings.read_text()) if settings.exists() else {}
    data.update(hasCompletedOnboarding=True, theme="dark",
                customApiKeyResponses={"approved": [key[-20:]], "rejected": []})
    data.setdefault("projects", {})[str(project)] = {"hasTrustDialogAccepted": True, "allowedTools": []}
    settings.write_text(json.dumps(data))
    name = f"lme-cc-{uuid.uuid4().hex[:8]}"
    with ScriptedClaude([say("Done?")] * 4) as fake:
        variables = {**cc.env(fake.base_url, env), "TERM": "xterm-256color"}
        command = (f"cd {shlex.quote(str(project))} && env -i "
                   + " ".join(f"{k}={shlex.quote(v)}" for k, v in variables.items())
                   + f" {shlex.quote(cc.binary)} --session-id {session_id}")
        subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", "160", "-y", "50", command], check=True)
        try:
            deadline = time.monotonic() + 90
            while "\u276f" not in _screen(name) and time.monotonic() < deadline:  # the prompt's marker
                time.sleep(0.5)
            subprocess.run(["tmux", "send-keys", "-t", name, "hello"], check=True)
            time.sleep(0.5)
            subprocess.run(["tmux", "send-keys", "-t", name, "Enter"], check=True)
            while "Stop says: LongMemEval loop" not in _screen(name) and time.monotonic() < deadline + 90:
                time.sleep(0.5)
            time.sleep(2)
            screen = _screen(name)
        finally:
            subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
    assert len(fake.main_requests) == 4, screen  # sent on three times, let go at the stall guard
    assert screen.count("Stop hook says: The LongMemEval loop") == 3, screen
    for problem in ("stop hook problem", "Stop hook reported a problem", "Stop hook error", "blocking error"):
        assert problem not in screen, (problem, screen)
