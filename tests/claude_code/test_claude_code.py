"""The plugin driven by the real Claude Code CLI (pinned 2.1.332), headless, against a scripted fake model.

Each test starts ``claude -p`` in a user's project with the plugin installed from this checkout (a directory
marketplace) and Claude Code's default permission mode. The "model" (tests/fake_claude_api.py) runs the blocks the
CLI sent it - the expanded command or the skill the Skill tool loaded, ``${CLAUDE_PLUGIN_ROOT}`` and
``$ARGUMENTS`` already substituted by the CLI - as Bash tool calls, exactly as written. The tests assert what a
user would see: the command expanded, no permission denial (from every stream-json result), and the outcome in the
project. docs/claude-code.md lists what these tests observed about the CLI.

Without the CLI the tests skip locally and fail under CI (``CI`` or ``LONGMEMEVAL_REQUIRE_CLAUDE=1``):
tests/run_tests.sh installs it (outside the checkout: tests/test_tools.sh).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any, Callable, Sequence

import pytest

import claude_code_harness as harness
from lme.core import command_names
import markdown_harness
from fake_claude_api import (
    Exchange,
    ScriptedClaude,
    bash,
    bash_blocks,
    command_body,
    once,
    play_blocks,
    say,
    skill_body,
    tool,
)
from fake_llm_server import FakeLLMServer, prompt_text, stable_share
from upstream_standin import make_upstream_tree

REPO = harness.REPO
LOOP_SKILL = command_names.SKILL_TOOL_NAME
"""The loop's skill as the Skill tool and permission rules name it (``/longmemeval-iterate`` runs it too)."""


# --------------------------------------------------------------------------- fixtures


@pytest.fixture
def cc(claude_code_installed, tmp_path) -> harness.ClaudeCode:
    """A copy of the installed HOME (conftest.py installs the plugin once per test session)."""
    return claude_code_installed.clone(tmp_path / "home")


def make_project(root: Path, *, setup: bool = True, upstream: bool = False) -> tuple[Path, dict[str, str]]:
    """A user's project (git, a venv running this python, the sample set up unless ``setup`` is false) and the
    environment the CLI passes on to its Bash commands."""
    base = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    base["HOME"] = str(root)  # git and setup in the project never read the real home
    standin = make_upstream_tree(root / "upstream") if upstream else None
    project, env = markdown_harness.prepare_project(root, sys.executable, base, longmemeval_root=standin,
                                                    run_setup=setup)
    return project, {k: env[k] for k in ("PATH", "VIRTUAL_ENV")} | {"LONGMEMEVAL_TIKTOKEN": "0"}


def llm_env(server: FakeLLMServer) -> dict[str, str]:
    """The benchmark's own model calls go to the fake OpenAI API (Anthropic's base URL is Claude Code's)."""
    return {"OPENAI_BASE_URL": server.openai_base_url, "OPENAI_API_KEY": "sk-test-DUMMY-openai-key-0000"}


def edit_config(project: Path, **changes: Any) -> dict[str, Any]:
    path = project / ".longmemeval-benchmarks" / "config.json"
    cfg = json.loads(path.read_text(encoding="utf-8"))
    cfg.update(changes)
    path.write_text(json.dumps(cfg, indent=2) + "\n", encoding="utf-8")
    return cfg


def expanded(doc: str, plugin_dir: Path, arguments: str = "") -> list[str]:
    """The repo's blocks of ``doc`` as Claude Code must send them: the plugin path and arguments substituted."""
    text = (REPO / doc).read_text(encoding="utf-8")
    return [b.replace("${CLAUDE_PLUGIN_ROOT}", str(plugin_dir)).replace("$ARGUMENTS", arguments).strip()
            for b in bash_blocks(text)]


def assert_clean(session: harness.Session, fake: ScriptedClaude) -> None:
    """The session ran the whole script, nothing was denied, nothing crashed."""
    transcript = session.describe()
    if os.environ.get("LONGMEMEVAL_CC_TRANSCRIPTS"):  # a folder: every session's transcript lands there
        folder = Path(os.environ["LONGMEMEVAL_CC_TRANSCRIPTS"])
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{session.init.get('session_id', 'session')}.txt").write_text(transcript, encoding="utf-8")
    assert session.returncode == 0, transcript
    assert session.permission_denials == [], transcript
    assert fake.errors == [] and fake.overruns == 0 and fake.finished, (fake.errors, fake.overruns, transcript)


def calls_of(session: harness.Session, needle: str) -> list[tuple[str, str, bool]]:
    return [call for call in session.bash_calls() if needle in call[0]]


# --------------------------------------------------------------------------- setup, run, report


def test_setup_sample_runs_through_claude_code(cc, tmp_path):
    project, env = make_project(tmp_path, setup=False)
    with ScriptedClaude([play_blocks(command_body, "--background"), say("Set up: the sample is ready.")]) as fake:
        session = cc.session(f"{command_names.SETUP} --sample", cwd=project, base_url=fake.base_url, env=env)
    assert_clean(session, fake)
    [command] = fake.main_requests[0].expanded_commands()
    assert (command.name, command.args) == (command_names.qualified(command_names.SETUP), "--sample")
    assert "${CLAUDE_PLUGIN_ROOT}" not in command.body and "$ARGUMENTS" not in command.body
    [(line, output, failed)] = session.bash_calls()  # a quick setup ends within its first call
    assert line == expanded("commands/longmemeval-setup.md", cc.plugin_dir, "--sample")[0] and not failed
    assert "venv      ready: " in output and "is up to date" in output and f"next: {command_names.RUN} --max 3" in output
    cfg = json.loads((project / ".longmemeval-benchmarks" / "config.json").read_text())
    assert cfg["judgeProvider"] == "offline" and cfg["datasetPath"].endswith("longmemeval_sample.json")


def test_a_run_and_its_report_through_claude_code(cc, tmp_path):
    project, env = make_project(tmp_path)
    with ScriptedClaude([play_blocks(command_body), say("The run completed.")]) as fake:
        session = cc.session(f"{command_names.RUN} --max 4", cwd=project, base_url=fake.base_url, env=env)
    assert_clean(session, fake)
    lines = [call[0] for call in session.bash_calls()]
    blocks = expanded("commands/longmemeval-run.md", cc.plugin_dir, "--max 4")
    assert set(lines) == set(blocks) and lines[:2] == blocks[:2] and lines[-1] == blocks[-1]
    [started] = [out for line, out, _ in session.bash_calls() if "--background" in line]
    run_id = re.search(r"run (\S+) started in the background \(pid \d+\)", started)[1]
    status = calls_of(session, "run_status.py")[-1][1]
    assert status.startswith("completed") and "4/4 done (4 judged, 0 errors)" in status and f"run {run_id}" in status
    assert "--run-id" not in status  # --max 4 made a 4-item run: nothing left to finish
    assert "overall" in session.bash_calls()[-1][1].lower()  # the scorecard was printed
    meta = json.loads((project / ".longmemeval-benchmarks" / "runs" / run_id / "run-meta.json").read_text())
    assert meta["status"] == "completed"

    with ScriptedClaude([play_blocks(command_body), say("Here is the scorecard.")]) as fake:
        report = cc.session(command_names.REPORT, cwd=project, base_url=fake.base_url, env=env)
    assert_clean(report, fake)
    [(line, scorecard, failed)] = report.bash_calls()
    assert [line] == expanded("commands/longmemeval-report.md", cc.plugin_dir) and not failed
    assert run_id in scorecard and "task-averaged" in scorecard.lower()


def _priced_project(root: Path, **changes: Any) -> tuple[Path, dict[str, str]]:
    """The sample with paid models (the fake OpenAI server answers): runs are priced and the cost gate applies."""
    project, env = make_project(root, upstream=True)
    edit_config(project, target="full-context", targetProvider="openai", targetModel="gpt-4o-mini",
                judgeProvider="openai", judgeModel="gpt-4o", requestTimeoutSeconds=60, **changes)
    return project, env


def test_a_run_above_confirm_cost_stops_and_asks_before_anything_starts(cc, tmp_path, fake_llm):
    project, env = _priced_project(tmp_path, confirmCostUsd=0.01)
    env |= llm_env(fake_llm)
    asked = []

    def ask(exchange: Exchange) -> Any:
        [result] = exchange.last_tool_results()
        asked.append(result.text)
        return say(f"This run needs your go-ahead:\n{result.text}\nShall I start it?")

    script = [play_blocks(command_body, stop_on=lambda block, result: result.exit_code == 5), once(ask)]
    with ScriptedClaude(script) as fake:
        first = cc.session(f"{command_names.RUN} --variant _s", cwd=project, base_url=fake.base_url, env=env)
    assert_clean(first, fake)
    [(line, output, failed)] = calls_of(first, "run_benchmark.py")
    assert line == expanded("commands/longmemeval-run.md", cc.plugin_dir, "--variant _s")[1] and failed
    assert output.startswith("Exit code 5") and "estimate: 24 items" in output and "$" in output
    assert "run the same command again with --yes once the cost is approved (an agent asks the user" in output
    assert asked
    assert not (project / ".longmemeval-benchmarks" / "runs").exists() and fake_llm.requests == []
    assert not [call for call in first.bash_calls() if "--yes" in call[0]]  # never added without the user

    # The user's answer: the same command with --yes (its rules apply again; a bare "yes" in a later turn makes
    # Claude Code ask to allow the line once, unless setup --allow-unattended wrote the rules).
    with ScriptedClaude([play_blocks(command_body), say("The run completed.")]) as fake:
        second = cc.session(f"{command_names.RUN} --variant _s --yes", cwd=project, base_url=fake.base_url, env=env)
    assert_clean(second, fake)
    status = calls_of(second, "run_status.py")[-1][1]
    assert status.startswith("completed") and "24/24 done (24 judged, 0 errors)" in status
    assert len(fake_llm.requests) >= 48  # reader + judge per item, through the real SDKs


# --------------------------------------------------------------------------- the loop, kept going by the Stop hook

FIXES = ("Prefer the most recent session.", "Check every session's date.")
"""What each round's fix adds to memory_system/reader.py's instructions; the fake reader answers better with them."""
_READER_LINE = 'not answer the question, say that there is not enough information to answer it."'


class FixAwareReader:
    """The fake model's reader: gold for a stable half of the questions; with the first fix for 80% of them,
    with both fixes for all of them. So round 1's fix helps, round 2's reaches the target."""

    def __init__(self, server: FakeLLMServer) -> None:
        self.server = server

    def __call__(self, body: Any) -> str | None:
        text = prompt_text(body)
        question = self.server._find_question(text)
        if question is None or FIXES[0] not in text:
            return None  # the server's own policy: gold for stable_share < correct_share (0.5)
        if FIXES[1] in text or stable_share(question) < 800:
            return str(self.server.answers[question])
        return None


def _wrong_ids(project: Path) -> list[str]:
    rows: dict[str, dict[str, Any]] = {}
    path = project / ".longmemeval-benchmarks" / "runs" / "longmemeval-iter" / "item-results.jsonl"
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        rows[row["question_id"]] = row
    return sorted(q for q, r in rows.items() if r["status"] != "judged" or not r["judgment"].get("label"))


def loop_body(exchange: Exchange) -> str:
    """The loop skill's text as this conversation got it: loaded by the Skill tool (chat), or as the expansion of
    ``/longmemeval-iterate`` (the skill is the slash command)."""
    loaded = exchange.loaded_skills()
    return loaded[LOOP_SKILL] if LOOP_SKILL in loaded else command_body(exchange)


def _reader_fix(project: Path, fix_no: int, fixes: Sequence[str]) -> tuple[Path, str, str]:
    """memory-ref's copy: fix ``fix_no`` adds its sentence to memory_system/reader.py's instructions, after the
    fixes before it."""
    old = _READER_LINE if fix_no == 1 else _READER_LINE.replace('it."', f'it. {fixes[0]}"')
    return project / "memory_system" / "reader.py", old, f'{old[:-1]} {fixes[fix_no - 1]}"'


def _round(project: Path, number: int, hook_reasons: list[str], *, fix_no: int | None = None,
           until_the_fix: bool = False, fixes: Sequence[str] = FIXES,
           site: Callable[[Path, int, Sequence[str]], tuple[Path, str, str]] = _reader_fix) -> list[Any]:
    """One round as the skill has it (steps 1-10), then the model stops; the Stop hook must send it on. ``fix_no``:
    which of ``fixes`` the round makes (default: the round's own, on top of the ones before); ``until_the_fix``:
    only steps 1-6 (the round's fix committed, nothing re-tested); ``site(project, fix_no, fixes)``: the file the
    fix edits, and the edit (old, new) that makes it (default: memory-ref's copy, ``_reader_fix``)."""
    skill = loop_body
    state = project / ".longmemeval-benchmarks"
    fix_no = number if fix_no is None else fix_no
    path, old, new = site(project, fix_no, fixes)

    def trigger_set(exchange: Exchange) -> Any:
        return tool("Write", {"file_path": str(state / "trigger_set.txt"), "content": "\n".join(_wrong_ids(project)) + "\n"})

    def proposal(exchange: Exchange) -> Any:
        return tool("Write", {"file_path": str(state / "proposal.md"), "content": f"{fixes[fix_no - 1]} (reader "
                              f"instructions)\n\nFiles: {path.relative_to(project).as_posix()}.\n"})

    def fix(exchange: Exchange) -> Any:
        return tool("Edit", {"file_path": str(path), "old_string": old, "new_string": new})

    def stop_here(exchange: Exchange) -> Any:
        return say(f"Round {number} is decided; I stop here.")

    def after_the_hook(exchange: Exchange) -> None:
        hook_reasons.append(exchange.last_text())
        return None

    steps = [
        play_blocks(skill, "--background", "run_status.py --run-id longmemeval-iter", "--confirm",
                    "--noise-floor", "rounds.py begin", "cluster_failures.py --run-id longmemeval-iter", "--ids 1"),
        once(lambda ex: tool("Read", {"file_path": str(state / "trigger_set.txt")})), once(trigger_set),
        *([once(lambda ex: tool("Read", {"file_path": str(state / "proposal.md")}))] if number > 1 else []),
        once(proposal), once(lambda ex: tool("Read", {"file_path": str(path)})), once(fix),
        play_blocks(skill, "rounds.py commit-fix"),
    ]
    if until_the_fix:
        return steps
    return [*steps, play_blocks(skill, "drop_qids.py", "run_status.py --run-id longmemeval-iter", "rounds.py finish"),
            once(stop_here), after_the_hook]


def _confirmed(text: str) -> list[Any]:
    """The loop's last steps at the target: step 1 (nothing left to run), its wait, the confirmation; then stop."""
    return [play_blocks(loop_body, "--background", "run_status.py --run-id longmemeval-iter", "--confirm"), say(text)]


def _loop_session(cc: harness.ClaudeCode, project: Path, env: dict[str, str], script: list[Any],
                  timeout: float = 400) -> tuple[harness.Session, ScriptedClaude]:
    """``/longmemeval-iterate`` in ``project``, the model playing ``script``; it ran clean."""
    with ScriptedClaude(script) as fake:
        session = cc.session(command_names.ITERATE, cwd=project, base_url=fake.base_url, env=env, timeout=timeout)
    assert_clean(session, fake)
    return session, fake


def test_the_loop_through_claude_code_two_rounds_kept_going_by_the_stop_hook(
        claude_code_installed, long_claude_code_sessions, tmp_path, request):
    TwoRounds.joined(long_claude_code_sessions.get(request.node.name), claude_code_installed, tmp_path)


def _two_rounds(cc: harness.ClaudeCode, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    project, env = make_project(tmp_path, upstream=True)
    markdown_harness.SETUPS["loop"](project, env, fake_llm)
    fake_llm.answer_fn = markdown_harness.writer_aware(FixAwareReader(fake_llm))
    env |= llm_env(fake_llm)
    hook_reasons: list[str] = []
    skill = loop_body
    script = [  # /longmemeval-iterate expands the skill itself: no Skill call, its own rules, no permission rule
        play_blocks(skill, "loop_target.py use-copy", "check_setup.sh", "loop_session.py\" start",
                    "loop_guard.py config"),
        *_round(project, 1, hook_reasons),
        *_round(project, 2, hook_reasons),
        *_confirmed("CONFIRMED: the loop is over."),
    ]
    session, fake = _loop_session(cc, project, env, script)
    transcript = session.describe()

    # The slash command was the skill; its blocks ran under the skill's rules, across the hook's continuations.
    [command] = fake.main_requests[0].expanded_commands()
    assert command.name == command_names.qualified(command_names.ITERATE), transcript
    assert "# LongMemEval iteration loop" in command.body and "${CLAUDE_PLUGIN_ROOT}" not in command.body
    assert session.tool_uses("Skill") == [] and not (REPO / "commands" / f"{command_names.LOOP_SKILL}.md").exists()
    # Two stops blocked by the hook, each naming the next step; the third (at CONFIRMED) let the session end.
    assert len(hook_reasons) == 2, transcript
    for reason in hook_reasons:
        assert "Stop hook" in reason and "is not over" in reason and "next: step 1" in reason, reason
    assert "CONFIRMED" in calls_of(session, "--confirm")[-1][1]
    assert len(fake.main_requests) == len(fake.turns)  # no request after the last stop: the hook let it go
    # The outcome in the project: two kept rounds, a confirmed loop, pushed; the session that started it recorded.
    state = project / ".longmemeval-benchmarks"
    decisions = [json.loads(line) for line in (state / "decisions.jsonl").read_text().splitlines()]
    assert [(d["round"], d["decision"]) for d in decisions] == [(1, "keep"), (2, "keep")], decisions
    confirmation = json.loads((state / "confirmation.json").read_text())
    assert (confirmation["status"], confirmation["confirm_correct"], confirmation["n_total"]) == ("confirmed", 24, 24)
    loop_session = json.loads((state / "loop-session.json").read_text())
    assert loop_session["session_id"] == session.init["session_id"]
    log = subprocess.run(["git", "log", "--format=%s", "longmemeval-iter"], cwd=tmp_path / "origin.git",
                         capture_output=True, text=True, check=True).stdout.splitlines()
    assert log[0].startswith("FINAL: LongMemEval 24/24"), log
    assert [s for s in log if s.startswith("fix(")] == [f"fix(v2): {FIXES[1]} (reader instructions)",
                                                       f"fix(v1): {FIXES[0]} (reader instructions)"]


TwoRounds = harness.played(_two_rounds)
"""Its session, in a thread while the suite runs (conftest.py)."""


# --------------------------------------------------------------------------- the loop across the official judge's retirement

OFFICIAL = "gpt-4o-2024-08-06"
SUCCESSOR = "openai:o3-mini"


class OneFixReader(FixAwareReader):
    """The fake reader: gold for a stable half of the questions, for all of them once the first fix is in."""

    def __call__(self, body: Any) -> str | None:
        question = self.server._find_question(prompt_text(body))
        return None if question is None or FIXES[0] not in prompt_text(body) else str(self.server.answers[question])


def _the_user_names_a_calibrated_successor(project: Path) -> None:
    """What only the user does: successorJudge in the config, and its calibration record (judge_agreement.py --all
    measures one on official verdicts; the fake server's are not official, so the record is the user's own)."""
    from lme.judge import agreement as judge_agreement
    from lme.judge import request_shapes as judge_shapes

    edit_config(project, successorJudge=SUCCESSOR)
    judge_agreement.append_record(project, {
        "candidate": SUCCESSOR, "candidate_provider": "openai", "candidate_model": "o3-mini",
        "request_shape": judge_shapes.shape_for("openai", "o3-mini", None).to_dict(), "verdict_set_sha256": "ab" * 32,
        "n": 500, "agree": 489, "agreement": 0.978, "kappa": 0.94, "kappa_ci95": [0.91, 0.97], "flips": [],
        "measured_at": "2027-01-10T09:00:00Z", "source": "--all"})


def test_the_loop_through_claude_code_across_the_official_judges_retirement(claude_code_installed,
                                                                            long_claude_code_sessions, tmp_path,
                                                                            request):
    AcrossTheDay.joined(long_claude_code_sessions.get(request.node.name), claude_code_installed, tmp_path)


def _across_the_day(cc: harness.ClaudeCode, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    project, env = make_project(tmp_path, upstream=True)
    markdown_harness.SETUPS["loop"](project, env, fake_llm)
    fake_llm.answer_fn = markdown_harness.writer_aware(OneFixReader(fake_llm))
    env |= llm_env(fake_llm)
    skill = loop_body

    def the_day(exchange: Exchange) -> None:  # mid-round: the re-test's judge calls answer 404 from now on
        fake_llm.gone_models[OFFICIAL] = 404
        return None

    # Session 1: a round up to its fix; the official judge disappears; its re-test stops; BLOCKED, the session ends.
    script = [
        play_blocks(skill, "loop_target.py use-copy", "check_setup.sh", "loop_session.py\" start",
                    "loop_guard.py config"),
        *_round(project, 1, [], until_the_fix=True),
        the_day,
        play_blocks(skill, "drop_qids.py", "run_status.py --run-id longmemeval-iter"),  # failed: step 1 again
        play_blocks(skill, "--background"),
        say("BLOCKED: the official judge retired. Your choices: archive-only figures, or name a calibrated "
            "successor in the config. I stop here."),
    ]
    first, fake = _loop_session(cc, project, env, script)
    transcript = first.describe()
    retest = calls_of(first, "drop_qids.py")[0][1]
    assert "started in the background" in retest, transcript
    assert calls_of(first, "run_status.py")[-1][1].startswith("Exit code 1\nfailed"), transcript
    halt = calls_of(first, "--background")[-1][1]
    assert halt.startswith("Exit code 2\n") and "\nBLOCKED: official judge retired (" in halt, transcript
    assert "1. archive-only figures" in halt and "2. a successor the user names" in halt and "calibrated" in halt
    assert len(fake.main_requests) == len(fake.turns), transcript  # the Stop hook let it end, at once
    notices = [e.get("content", "") for e in first.events if e.get("subtype") == "informational"]
    assert any("LongMemEval loop: BLOCKED: official judge retired" in n for n in notices), notices
    state = project / ".longmemeval-benchmarks"
    history = (project / "history_max_effort.md").read_text()
    assert len([r for r in history.splitlines() if r.startswith("| BLOCKED |")]) == 1  # logged by the run itself
    assert json.loads((state / "judge-day.json").read_text())["found_by"]["how"].startswith("found mid-run")
    assert not [q for q in fake_llm.requests if (q.get("body") or {}).get("model") == "o3-mini"]

    # The user (never the agent) names a calibrated successor; the next session takes its baseline and goes on.
    _the_user_names_a_calibrated_successor(project)
    hook_reasons: list[str] = []
    script = [
        play_blocks(skill, "check_setup.sh", "loop_session.py\" start", "loop_guard.py config"),
        play_blocks(skill, "rounds.py successor-baseline"),
        *_round(project, 2, hook_reasons, fix_no=1),
        *_confirmed("CONFIRMED by the successor openai:o3-mini: its figure, not an official one."),
    ]
    second, fake = _loop_session(cc, project, env, script, timeout=500)
    transcript = second.describe()
    status = calls_of(second, "rounds.py status")[0][1]
    assert "next: the official judge retired: the successor baseline" in status, transcript
    baseline = calls_of(second, "successor-baseline")[0][1]
    assert baseline.startswith("successor baseline: official judge retired: from here on the successor "
                               "openai:o3-mini") and "round v1 voided" in baseline, transcript
    assert len(hook_reasons) == 1 and "judge: the successor openai:o3-mini" in hook_reasons[0], hook_reasons
    confirmed = calls_of(second, "--confirm")[-1][1]
    assert "CONFIRMED by the successor openai:o3-mini, not official" in confirmed, transcript
    assert "no official-scale estimate" in confirmed and "no official figure is claimed" in confirmed
    decisions = [json.loads(line) for line in (state / "decisions.jsonl").read_text().splitlines()]
    assert [(d["round"], d["decision"]) for d in decisions] == [(1, "void"), (2, "keep")], decisions
    assert decisions[-1]["judge"] == "the successor openai:o3-mini"
    rows = [json.loads(line) for line in (state / "runs" / "longmemeval-iter" / "item-results.jsonl").read_text()
            .splitlines()]
    assert rows and all(r["judgment"]["successor"] and not r["judgment"]["official"] for r in rows)
    log = subprocess.run(["git", "log", "--format=%s", "longmemeval-iter"], cwd=tmp_path / "origin.git",
                         capture_output=True, text=True, check=True).stdout.splitlines()
    assert log[0].startswith("FINAL: LongMemEval 24/24 by the successor openai:o3-mini (not official)"), log
    assert any(s.startswith("successor baseline: openai:o3-mini") for s in log), log


AcrossTheDay = harness.played(_across_the_day)
"""Its session, in a thread while the suite runs (conftest.py)."""


# --------------------------------------------------------------------------- "iterate LongMemEval" in chat: permissions


def test_iterate_in_chat_asks_for_the_skill_until_setup_allow_unattended_wrote_the_rules(cc, tmp_path, fake_llm):
    project, env = make_project(tmp_path, upstream=True)
    markdown_harness.SETUPS["loop"](project, env, fake_llm)
    env |= llm_env(fake_llm)
    status_line = f'bash "{cc.plugin_dir}/scripts/venv_run.sh" rounds.py status'

    # No rules: the model's Skill call needs approval, and so does every line of the loop outside the skill.
    with ScriptedClaude([tool("Skill", {"skill": LOOP_SKILL}), bash(status_line), say("I need permission.")]) as fake:
        denied = cc.session("iterate LongMemEval", cwd=project, base_url=fake.base_url, env=env)
    assert [(d["tool_name"], d["tool_input"].get("skill") or d["tool_input"]["command"])
            for d in denied.permission_denials] == [("Skill", LOOP_SKILL), ("Bash", status_line)], denied.describe()
    assert f"Skill({LOOP_SKILL})" in next(iter(denied.tool_results().values()))["content"]

    # setup --allow-unattended, through the setup command, writes the exact rules with this plugin's path ...
    with ScriptedClaude([play_blocks(command_body, "--background"), say("Rules written.")]) as fake:
        setup = cc.session(f"{command_names.SETUP} --skip-venv --allow-unattended", cwd=project,
                           base_url=fake.base_url, env=env)
    assert_clean(setup, fake)
    rules = json.loads((project / ".claude" / "settings.local.json").read_text())["permissions"]["allow"]
    assert f"Skill({LOOP_SKILL})" in rules
    assert f'Bash(bash "{cc.plugin_dir}/scripts/venv_run.sh" rounds.py:*)' in rules
    assert not [r for r in rules if "${CLAUDE_PLUGIN_ROOT}" in r]

    # ... read although the workspace was never trusted: the skill loads, its own rules run its lines, ...
    skill = skill_body(LOOP_SKILL)  # the same skill /longmemeval-iterate runs
    script = [tool("Skill", {"skill": LOOP_SKILL}),
              play_blocks(skill, "loop_target.py use-copy", "check_setup.sh", "loop_guard.py config"),
              say("The loop is set up.")]
    with ScriptedClaude(script) as fake:
        chat = cc.session("iterate LongMemEval", cwd=project, base_url=fake.base_url, env=env)
    assert_clean(chat, fake)
    assert [c[2] for c in chat.bash_calls()] == [False, False, False], chat.describe()
    # ... and a later turn of the same session (the skill's rules are gone by then) runs the loop's lines too.
    session_id = chat.init["session_id"]
    with ScriptedClaude([bash(status_line), say("Round status shown.")]) as fake:
        later = cc.session("continue", cwd=project, base_url=fake.base_url, env=env,
                           extra_args=["--resume", session_id])
    assert_clean(later, fake)
    assert "next: step 1" in later.bash_calls()[0][1]


# --------------------------------------------------------------------------- the Stop hook's bounds


def test_the_stop_hook_lets_other_sessions_go_and_a_spinning_session_go_after_three_idle_stops(cc, tmp_path):
    project, env = make_project(tmp_path)
    (project / ".max_effort_round").write_text("0\n")
    state = project / ".longmemeval-benchmarks" / "loop-session.json"
    mine = str(uuid.uuid4())
    state.write_text(json.dumps({"session_id": "someone-else", "status": "active", "history_rows": 0}))
    with ScriptedClaude([say("Hello.")]) as fake:  # another session's loop: this one stops at once
        other = cc.session("hello", cwd=project, base_url=fake.base_url, env=env)
    assert_clean(other, fake)
    assert len(fake.main_requests) == 1

    state.write_text(json.dumps({"session_id": mine, "status": "active", "history_rows": 0}))
    with ScriptedClaude([say("Done?")] * 4) as fake:  # this session's loop: blocked, until nothing moves
        spinning = cc.session("hello", cwd=project, base_url=fake.base_url, env=env, extra_args=["--session-id", mine])
    assert_clean(spinning, fake)
    reasons = [ex.last_text() for ex in fake.main_requests[1:]]
    assert len(reasons) == 3 and all("is not over" in r and "next: step 1" in r for r in reasons), reasons
    notices = [e for e in spinning.events if e.get("subtype") == "informational"]
    assert any("no change to the loop's files across 4 stops" in e.get("content", "") for e in notices), notices

    state.write_text(json.dumps({"session_id": mine, "status": "active", "history_rows": 0}))
    with ScriptedClaude([play_blocks(command_body), say("Cancelled.")]) as fake:  # the user's cancel ends it
        cancel = cc.session(command_names.CANCEL, cwd=project, base_url=fake.base_url, env=env,
                            extra_args=["--resume", mine])
    assert_clean(cancel, fake)
    assert json.loads(state.read_text())["status"] == "cancelled" and len(fake.main_requests) == 2


# --------------------------------------------------------------------------- a run longer than the Bash tool's limit

LONG_RUN_LATENCY = 5.1
"""Seconds per fake model call: 24 items x (reader + judge) at concurrency 1 = at least 245 s, past the Bash tool's
120 s default twice over. The session runs in a thread while the rest of the suite runs (conftest.py)."""


def test_a_run_longer_than_the_bash_tools_limit_completes_through_the_documented_blocks(
        claude_code_installed, long_claude_code_sessions, tmp_path, request):
    # conftest.py started it with the session's first test and runs this test last: it waited meanwhile
    LongRun.joined(long_claude_code_sessions.get(request.node.name), claude_code_installed, tmp_path)


def _long_run(cc: harness.ClaudeCode, tmp_path: Path, llm: FakeLLMServer) -> None:
    project, env = _priced_project(tmp_path, concurrency=1)
    llm.latency = LONG_RUN_LATENCY
    items = json.loads((REPO / "data" / "sample" / "longmemeval_sample.json").read_text())
    llm.answers = {item["question"]: item["answer"] for item in items}
    with ScriptedClaude([play_blocks(command_body), say("The run completed.")]) as fake:
        session = cc.session(command_names.RUN, cwd=project, base_url=fake.base_url, env=env | llm_env(llm),
                             timeout=600)
    assert_clean(session, fake)
    transcript = session.describe()
    assert session.seconds > 240, transcript  # longer than two of the Bash tool's 120 s default limits
    calls = session.bash_calls()
    # no call came near the limit: none was moved to the background by Claude Code
    assert not [c for c in calls if "moved to the background" in c[1]], transcript
    waits = calls_of(session, "run_status.py")
    assert len(waits) >= 3, transcript
    assert all(out.startswith("Exit code 4") and "running" in out for _, out, _ in waits[:-1]), transcript
    assert waits[-1][1].startswith("completed") and "24/24 done (24 judged, 0 errors)" in waits[-1][1]
    assert re.search(r"acc \d\.\d{3}  \$\d", waits[0][1]) and "ETA" in waits[0][1], waits[0][1]
    [started] = [out for line, out, _ in calls if "--background" in line]
    run_id = re.search(r"run (\S+) started in the background", started)[1]
    meta = json.loads((project / ".longmemeval-benchmarks" / "runs" / run_id / "run-meta.json").read_text())
    assert meta["status"] == "completed"


LongRun = harness.played(_long_run)
"""Its session, in a thread while the suite runs (conftest.py)."""
