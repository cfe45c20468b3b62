"""The loop on the user's own memory system, through the real Claude Code CLI (pinned 2.1.332), unattended.

The user wrote ``memsys.py`` from plugins/README.md alone (a Python file: ``generate(item, ctx) -> dict``; it asks
its model through the OpenAI SDK, the model being the fake server), named it as the project's target, and ran
``setup --allow-unattended`` (whose rules then cover memsys.py). One headless ``/longmemeval-iterate`` session then sets the loop on it with the skill's
own line (``loop_target.py use memsys.py``) and plays two rounds as the skill says: round 1's fix does not help
(net 0: reverted), round 2's does (kept), and the loop is confirmed. No permission prompt on the way (the Edit of
memsys.py is allowed by the standing rule setup computed from the config's target; the second test shows that
without it the edit is asked for, and that ``use`` adds it), and every row carries the code that made it:
the reverted fix's re-test rows the fix's code, the rows the next round starts from the reverted code, the kept
fix's rows (its re-test, the confirmation rerun) the new code.

Without the CLI the test skips locally and fails under CI (tests/run_tests.sh installs it).
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Sequence

import pytest

import claude_code_harness as harness
import markdown_harness
from fake_claude_api import Exchange, ScriptedClaude, bash, once, play_blocks, say, tool
from fake_llm_server import FakeLLMServer, prompt_text
from lme.core import command_names
from test_claude_code import FIXES, _round, assert_clean, calls_of, edit_config, llm_env, loop_body, make_project

MEMSYS = '''"""My memory system: the history and the question to my model, with my instructions."""
from openai import OpenAI

INSTRUCTIONS = "Answer from the chat history."


def generate(item, ctx):
    history = "\\n".join(f"[{s['date']}] {t['role']}: {t['content']}" for s in item["sessions"] for t in s["turns"])
    prompt = f"{INSTRUCTIONS}\\n\\nHistory:\\n{history}\\n\\nToday is {item['question_date']}. {item['question']}"
    reply = OpenAI().chat.completions.create(model=ctx["model"], messages=[{"role": "user", "content": prompt}],
                                             temperature=0, max_tokens=200)
    return {"hypothesis": reply.choices[0].message.content or "",
            "retrieved_session_ids": [s["session_id"] for s in reversed(item["sessions"])],
            "stages": [{"name": "prompt", "status": "ok", "detail": f"{len(item['sessions'])} sessions"}]}
'''
"""A system as plugins/README.md describes one, written without the toolkit."""

LINE = 'INSTRUCTIONS = "Answer from the chat history."'
OWN_FIXES = ("Answer in as few words as you can.", FIXES[0])
"""Round 1's fix (no help: the fake model answers as before) and round 2's (the fake model answers every question
with it in the prompt)."""


class OwnSystemReader:
    """The fake model behind memsys.py: gold for a stable half of the questions; for all of them once the prompt
    holds ``FIXES[0]`` (round 2's fix)."""

    def __init__(self, server: Any) -> None:
        self.server = server

    def __call__(self, body: Any) -> str | None:
        text = prompt_text(body)
        question = self.server._find_question(text)
        return None if question is None or FIXES[0] not in text else str(self.server.answers[question])


def memsys_fix(project: Path, fix_no: int, fixes: Sequence[str]) -> tuple[Path, str, str]:
    """Each round's fix adds its sentence to memsys.py's instructions (round 1's is reverted before round 2)."""
    return project / "memsys.py", LINE, LINE[:-1] + f' {fixes[fix_no - 1]}"'


def code_id(text: str) -> str:
    """The code fingerprint of memsys.py holding ``text`` (plugins/README.md, "What a run records of your code")."""
    file_sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return hashlib.sha256(f"memsys.py\t{file_sha}\n".encode("utf-8")).hexdigest()[:16]


def use_line(exchange: Exchange) -> Any:
    """The skill's own line for the user's system, as the CLI sent the skill (the plugin's path written in)."""
    [line] = re.findall(r"`(bash \"[^`]*loop_target\.py use memsys\.py)`", loop_body(exchange))
    return bash(line)


def rows_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture
def cc(claude_code_installed, tmp_path) -> harness.ClaudeCode:
    return claude_code_installed.clone(tmp_path / "home")


def test_the_loop_on_the_users_own_file_keeps_one_fix_reverts_one_and_each_row_names_its_code(
        claude_code_installed, long_claude_code_sessions, tmp_path, request):
    OwnSystemLoop.joined(long_claude_code_sessions.get(request.node.name), claude_code_installed, tmp_path)


def _own_system_loop(cc: harness.ClaudeCode, tmp_path: Path, fake_llm: FakeLLMServer) -> None:
    project, env = make_project(tmp_path, upstream=True)
    markdown_harness.SETUPS["loop"](project, env, fake_llm)
    fake_llm.answer_fn = OwnSystemReader(fake_llm)
    env |= llm_env(fake_llm)
    (project / "memsys.py").write_text(MEMSYS, encoding="utf-8")
    cfg = json.loads((project / ".longmemeval-benchmarks" / "config.json").read_text())
    loop = {k: v for k, v in cfg["loop"].items() if k != "targetOptions"}
    edit_config(project, target="memsys.py", loop={**loop, "target": "memory-ref"})  # the user names the system
    subprocess.run([sys.executable, str(cc.plugin_dir / "scripts" / "setup_project.py"), "--skip-venv",
                    "--allow-unattended"], cwd=project, check=True, capture_output=True)
    original, bad, good = (MEMSYS, MEMSYS.replace(LINE, memsys_fix(project, 1, OWN_FIXES)[2]),
                           MEMSYS.replace(LINE, memsys_fix(project, 2, OWN_FIXES)[2]))
    skill = loop_body
    hook_reasons: list[str] = []
    script = [  # /longmemeval-iterate: the skill; its Bash lines its own rules, the Edit of memsys.py the standing one
        once(use_line),
        play_blocks(skill, "check_setup.sh", "loop_session.py\" start", "loop_guard.py config"),
        *_round(project, 1, hook_reasons, fixes=OWN_FIXES, site=memsys_fix),
        *_round(project, 2, hook_reasons, fixes=OWN_FIXES, site=memsys_fix),
        play_blocks(skill, "--background", "run_status.py --run-id longmemeval-iter", "--confirm"),
        say("CONFIRMED: the loop on memsys.py is over."),
    ]
    with ScriptedClaude(script) as fake:
        session = cc.session(command_names.ITERATE, cwd=project, base_url=fake.base_url, env=env, timeout=600)
    assert_clean(session, fake)  # ran to the end, 0 permission denials: the skill's rules and the standing ones

    # The documented line set the loop on memsys.py, with its Edit rule, and gave it none of memory-ref's settings.
    [(line, said, failed)] = calls_of(session, "loop_target.py use memsys.py")
    assert not failed and "loop.fix_paths to ['memsys.py']" in said, said
    allow = json.loads((project / ".claude" / "settings.local.json").read_text())["permissions"]["allow"]
    assert allow.count("Edit(/memsys.py)") == 1  # setup wrote it from the config's target; use found it there
    assert "ok   symbolic layers: memory-ref's settings, not checked" in calls_of(session, "check_setup.sh")[0][1]
    assert [u["input"]["file_path"] for u in session.tool_uses("Edit")] == [str(project / "memsys.py")] * 2

    # Round 1 reverted (net 0), round 2 kept, confirmed.
    state = project / ".longmemeval-benchmarks"
    decisions = [d for d in rows_of(state / "decisions.jsonl") if d.get("applied", True) and not d.get("applying")]
    assert [(d["round"], d["decision"]) for d in decisions] == [(1, "revert"), (2, "keep")], decisions
    assert "CONFIRMED" in calls_of(session, "--confirm")[-1][1]
    assert (project / "memsys.py").read_text() == good

    # The code of every row: baseline A, the reverted fix's re-test B, the rows round 2 starts from A again (the
    # reverted code), the kept fix's re-test and the confirmation rerun C.
    a, b, c = code_id(original), code_id(bad), code_id(good)
    run = state / "runs" / "longmemeval-iter"
    [revert_backup] = sorted((run / "backups").glob("revert-*"))
    retest_1 = {r["question_id"]: r["code"] for r in rows_of(revert_backup / "item-results.jsonl")[-len(
        decisions[0]["restored_ids"]):]}
    assert set(retest_1) == set(decisions[0]["restored_ids"]) and set(retest_1.values()) == {b}
    snapshot_2 = rows_of(state / "snapshots" / "v2" / "item-results.jsonl")
    assert {r["code"] for r in snapshot_2} == {a}  # round 2 starts from the reverted code's rows
    meta = json.loads((run / "run-meta.json").read_text())
    codes = [inv["code"]["id"] for inv in meta["invocations"]]
    assert codes[0] == a and b in codes and codes[-1] == c
    after_revert = codes[codes.index(b) + 1]
    assert after_revert == a  # the next round's run: the reverted code
    final = {r["question_id"]: r["code"] for r in rows_of(run / "item-results.jsonl")}
    kept_retest = {q for q, code in final.items() if code == c}  # the kept fix's re-test
    assert kept_retest and set(final.values()) == {a, c}
    confirmation = json.loads((state / "confirmation.json").read_text())
    confirm_rows = rows_of(state / "runs" / confirmation["confirm_run_id"] / "item-results.jsonl")
    assert len(confirm_rows) == 24 and {r["code"] for r in confirm_rows} == {c}
    assert all(r["target"]["stages"] == [{"name": "prompt", "status": "ok", "detail": r["target"]["stages"][0]["detail"]}]
               for r in confirm_rows)
    log = subprocess.run(["git", "log", "--format=%s", "longmemeval-iter"], cwd=tmp_path / "origin.git",
                         capture_output=True, text=True, check=True).stdout.splitlines()
    assert f"fix(v2): {OWN_FIXES[1]} (reader instructions)" in log
    assert "loop target: memsys.py, your own memory system" in log


OwnSystemLoop = harness.played(_own_system_loop)
"""Its session, in a thread while the suite runs (conftest.py)."""


SETTINGS_RELOAD_S = 5
"""Claude Code 2.1.332 reads a changed settings.local.json a moment after the change: an Edit sent at once (1.5 s
after) was still asked for, one sent 1 s later ran. The documented order needs no wait: setup's rules cover the
system the config's ``target`` names from the start."""


def test_the_edit_of_the_users_file_asks_until_use_adds_its_rule_to_the_standing_ones(cc, tmp_path, fake_llm):
    """The Edit rule is what lets the loop edit memsys.py unattended. Setup's rules were written before the user
    named memsys.py (they cover memory-ref's copy only): the CLI denies the edit; the skill's ``use memsys.py`` adds
    the rule, and once the CLI has read its changed settings (a moment later: ``SETTINGS_RELOAD_S``) the edit runs."""
    project, env = make_project(tmp_path, upstream=True)
    markdown_harness.SETUPS["loop"](project, env, fake_llm)
    env |= llm_env(fake_llm)
    subprocess.run([sys.executable, str(cc.plugin_dir / "scripts" / "setup_project.py"), "--skip-venv",
                    "--allow-unattended"], cwd=project, check=True, capture_output=True)
    (project / "memsys.py").write_text(MEMSYS, encoding="utf-8")
    edit_config(project, target="memsys.py")  # named after setup wrote its rules
    path, old, new = memsys_fix(project, 2, OWN_FIXES)
    edit = {"file_path": str(path), "old_string": old, "new_string": new}
    script = [tool("Edit", edit), once(use_line), play_blocks(loop_body, "check_setup.sh"),
              bash(f"sleep {SETTINGS_RELOAD_S}"), tool("Edit", edit), say("Edited.")]
    with ScriptedClaude(script) as fake:
        session = cc.session(command_names.ITERATE, cwd=project, base_url=fake.base_url, env=env)
    assert session.returncode == 0 and fake.finished, session.describe()
    assert [(d["tool_name"], d["tool_input"]["file_path"]) for d in session.permission_denials] == [
        ("Edit", str(path))], session.describe()
    assert path.read_text() == MEMSYS.replace(old, new)  # the edit after use ran
