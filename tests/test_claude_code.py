"""The plugin driven by the real Claude Code CLI (pinned 2.1.332), headless, against a scripted fake model.

Each test starts ``claude -p`` in a user's project with the plugin installed from this checkout (a directory
marketplace) and Claude Code's default permission mode. The "model" (tests/fake_claude_api.py) runs the blocks the
CLI sent it - the expanded command or the skill the Skill tool loaded, ``${CLAUDE_PLUGIN_ROOT}`` and
``$ARGUMENTS`` already substituted by the CLI - as Bash tool calls, exactly as written. The tests assert what a
user would see: the command expanded, no permission denial (from every stream-json result), and the outcome in the
project. docs/claude-code.md lists what these tests observed about the CLI.

Without the CLI the tests skip locally and fail under CI (``CI`` or ``LONGMEMEVAL_REQUIRE_CLAUDE=1``):
tests/run_tests.sh installs it into ``.tools/``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest

import claude_code_harness as harness
import command_names
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
LOOP_SKILL = f"{harness.PLUGIN}:longmemeval-loop"


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def claude_binary() -> str:
    binary = harness.claude_binary()
    if binary is None:
        if harness.cli_required():
            pytest.fail("the Claude Code CLI is not installed: bash tests/run_tests.sh installs it into .tools/")
        pytest.skip("the Claude Code CLI is not installed (bash tests/run_tests.sh installs it into .tools/)")
    version = harness.cli_version(binary)
    assert version == harness.CLAUDE_CODE_VERSION, f"{binary} is Claude Code {version}, the tests pin {harness.CLAUDE_CODE_VERSION}"
    return binary


@pytest.fixture(scope="session")
def installed(claude_binary, tmp_path_factory) -> harness.ClaudeCode:
    """A HOME with the plugin added as a marketplace and installed, made once; tests use copies of it."""
    root = tmp_path_factory.mktemp("claude-code")
    plugin = harness.copy_plugin(root / "plugin" / harness.PLUGIN)
    home = root / "home"
    home.mkdir()
    harness.install_plugin(claude_binary, home, plugin)
    return harness.ClaudeCode(claude_binary, home, plugin)


@pytest.fixture
def cc(installed, tmp_path) -> harness.ClaudeCode:
    return installed.clone(tmp_path / "home")


def make_project(root: Path, *, setup: bool = True, upstream: bool = False) -> tuple[Path, dict[str, str]]:
    """A user's project (git, a venv running this python, the sample set up unless ``setup`` is false) and the
    environment the CLI passes on to its Bash commands."""
    base = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
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
    assert session.returncode == 0, transcript
    assert session.permission_denials == [], transcript
    assert fake.errors == [] and fake.overruns == 0 and fake.finished, (fake.errors, fake.overruns, transcript)


def calls_of(session: harness.Session, needle: str) -> list[tuple[str, str, bool]]:
    return [call for call in session.bash_calls() if needle in call[0]]


# --------------------------------------------------------------------------- setup, run, report


def test_setup_sample_runs_through_claude_code(cc, tmp_path):
    project, env = make_project(tmp_path, setup=False)
    with ScriptedClaude([play_blocks(command_body), say("Set up: the sample is ready.")]) as fake:
        session = cc.session(f"{command_names.SETUP} --sample", cwd=project, base_url=fake.base_url, env=env)
    assert_clean(session, fake)
    [command] = fake.main_requests[0].expanded_commands()
    assert (command.name, command.args) == (command_names.SETUP, "--sample")
    assert "${CLAUDE_PLUGIN_ROOT}" not in command.body and "$ARGUMENTS" not in command.body
    [(line, output, failed)] = session.bash_calls()
    assert [line] == expanded("commands/longmemeval-setup.md", cc.plugin_dir, "--sample") and not failed
    assert "venv      up to date" in output and f"next: {command_names.RUN} --max 3" in output
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
    assert status.startswith("completed") and "4/24 done (4 judged, 0 errors)" in status and f"run {run_id}" in status
    assert f"{command_names.RUN} --run-id {run_id}" in status  # 20 items not run yet: how to finish it
    assert "overall" in session.bash_calls()[-1][1].lower()  # the scorecard was printed
    meta = json.loads((project / ".longmemeval-benchmarks" / "runs" / run_id / "run-meta.json").read_text())
    assert meta["status"] == "completed"

    with ScriptedClaude([play_blocks(command_body), say("Here is the scorecard.")]) as fake:
        report = cc.session(command_names.REPORT, cwd=project, base_url=fake.base_url, env=env)
    assert_clean(report, fake)
    [(line, scorecard, failed)] = report.bash_calls()
    assert [line] == expanded("commands/longmemeval-report.md", cc.plugin_dir) and not failed
    assert run_id in scorecard and "task-averaged" in scorecard.lower()
