"""What a user meets in the first hour, with the real Claude Code CLI (pinned 2.1.332) and a scripted fake model:
the plugin's commands by their plain names right after install (headless and typed in a terminal), setup's long
first pip install under the Bash tool's 120 s limit, where a script's next step is a shell command and where a
slash command, and the size of what ``claude plugin install`` copies from the checkout.

The loop's skill by both of its ways (``/longmemeval-iterate`` with no rules, "iterate LongMemEval" in chat after
setup ``--allow-unattended``) is proven in tests/claude_code/test_claude_code.py, with the Stop hook's two rounds.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import claude_code_harness as harness
from fake_claude_api import Exchange, ScriptedClaude, bash, command_body, play_blocks, say
from lme.core import command_names
from test_claude_code import assert_clean, expanded, make_project

REPO = harness.REPO
QUALIFIED = f"/{harness.PLUGIN}:"
ARGS = {command_names.SETUP: "--sample --skip-venv", command_names.RUN: "--max 3", command_names.REPORT: "",
        command_names.ITERATE: "", command_names.CANCEL: ""}
"""What a user types after each plain name in these tests."""


@pytest.fixture
def cc(claude_code_installed, tmp_path) -> harness.ClaudeCode:
    return claude_code_installed.clone(tmp_path / "home")


def bare_project(root: Path) -> Path:
    """A user's folder with nothing but ``git init``: no setup, no venv, no ``.claude``."""
    project = root / "bare"
    project.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    return project


# --------------------------------------------------------------------------- the names in the files


SLASH = re.compile(r"(?<![\w.:/}-])/longmemeval-[\w:-]+")
NAMED_IN = ("README.md", "docs/*.md", "commands/*.md", "skills/*/SKILL.md", "references/*.md", "plugins/*.md",
            "scripts/*.sh")


def test_the_files_name_the_plain_form_and_the_full_form_only_as_the_fallback():
    plain = set(command_names.ALL.values())
    found: dict[str, set[str]] = {}
    for pattern in NAMED_IN:
        for path in sorted(REPO.glob(pattern)):
            for name in SLASH.findall(path.read_text(encoding="utf-8")):
                found.setdefault(name, set()).add(path.relative_to(REPO).as_posix())
    assert set(found) - {command_names.qualified(n) for n in plain} <= plain, found
    assert plain <= set(found), "every plain name is documented"
    full = {name: where for name, where in found.items() if name.startswith(QUALIFIED)}
    # the full form: once in the README, as the fallback for a clash; docs/claude-code.md records what the CLI sent
    assert set().union(*full.values()) <= {"README.md", "docs/claude-code.md"}, full
    readme = SLASH.findall((REPO / "README.md").read_text(encoding="utf-8"))
    assert [n for n in readme if n.startswith(QUALIFIED)] == [command_names.qualified(command_names.RUN)]


# --------------------------------------------------------------------------- headless, right after install


def test_each_plain_name_expands_in_a_bare_git_init_project_right_after_install(cc, tmp_path):
    project = bare_project(tmp_path)
    for name, args in ARGS.items():
        script = [play_blocks(command_body, "--background"), say("Set up.")] if name == command_names.SETUP \
            else [say("ok")]
        with ScriptedClaude(script) as fake:
            session = cc.session(f"{name} {args}".strip(), cwd=project, base_url=fake.base_url)
        assert_clean(session, fake)
        [command] = fake.main_requests[0].expanded_commands()
        # the plain name arrives as the plugin's command (Claude Code names it in full), arguments substituted
        assert (command.name, command.args) == (command_names.qualified(name), args), session.describe()
        assert command.body.strip() and "${CLAUDE_PLUGIN_ROOT}" not in command.body and str(cc.plugin_dir) in command.body
        if name == command_names.ITERATE:  # the loop's skill itself: no command file of that name
            assert "# LongMemEval iteration loop" in command.body and session.tool_uses("Skill") == []
        if name == command_names.SETUP:  # it ran: in Claude Code its next step is the slash command
            [(line, output, failed)] = session.bash_calls()
            assert line == expanded("commands/longmemeval-setup.md", cc.plugin_dir, args)[0] and not failed
            assert "next: /longmemeval-run --max 3   (offline sample run" in output and "in Claude Code:" not in output
    # the same setup line from a shell (no CLAUDECODE): the shell command first, the slash command second
    shell = subprocess.run(shlex.split(line), cwd=project, capture_output=True, text=True, timeout=120,
                           env={k: v for k, v in os.environ.items() if k != "CLAUDECODE"})
    assert shell.returncode == 0, shell.stderr
    assert (f"next: .longmemeval-venv/bin/python {cc.plugin_dir / 'scripts' / 'run_benchmark.py'} --max 3   "
            f"(in Claude Code: /longmemeval-run --max 3)") in shell.stdout

    with ScriptedClaude([say("ok")]) as fake:  # the full form, the fallback when another plugin has the name
        session = cc.session(f"{command_names.qualified(command_names.RUN)} --max 3", cwd=project, base_url=fake.base_url)
    assert_clean(session, fake)
    assert [(c.name, c.args) for c in fake.main_requests[0].expanded_commands()] == \
        [(command_names.qualified(command_names.RUN), "--max 3")]


# --------------------------------------------------------------------------- typed in a terminal (tmux)


def test_each_plain_name_typed_in_the_terminal_and_entered_reaches_the_model_expanded(cc, tmp_path):
    if harness.tmux_binary() is None:
        if harness.cli_required():
            pytest.fail("tmux is not installed (bash tests/run_tests.sh installs it)")
        pytest.skip("tmux is not installed (bash tests/run_tests.sh installs it)")
    project = bare_project(tmp_path)
    key = harness.base_env(cc.home)["ANTHROPIC_API_KEY"]
    harness.accept_first_run(cc.home, project, key)
    with ScriptedClaude([say("ok")] * len(ARGS)) as fake:
        env = cc.env(fake.base_url, {"TERM": "xterm-256color"})
        term = harness.Terminal.start([cc.binary], cwd=project, env=env, socket=tmp_path / "tmux.sock")
        try:
            term.wait_for(lambda: "❯" in term.screen(), 60, "the prompt")
            for number, (name, args) in enumerate(ARGS.items(), 1):
                typed = f"{name} {args}".strip()
                term.type(typed)
                term.wait_for(lambda: typed in term.screen(), 20, f"{typed!r} on the screen")
                time.sleep(0.5)  # the completion menu settles; Enter then submits what was typed
                term.enter()
                request = term.wait_for(lambda: len(fake.main_requests) >= number and fake.main_requests[number - 1],
                                        60, f"the model request for {typed!r}")
                [command] = request.expanded_commands()[-1:]
                assert (command.name, command.args) == (command_names.qualified(name), args), term.screen()
                assert command.body.strip() and "${CLAUDE_PLUGIN_ROOT}" not in command.body
                term.wait_for(lambda: len(fake.turns) >= number, 30, "the model's answer")
                term.wait_for(lambda: term.screen().rstrip().count("ok") >= number, 30, "the answer on the screen")
        finally:
            screen = term.screen()
            term.stop()
    assert "Unknown command" not in screen, screen


# --------------------------------------------------------------------------- setup under the Bash tool's limits

SLOW_INDEX_SECONDS = 130
"""How long the fake package index holds pip's first request: past the Bash tool's 120 s default limit."""


class SlowIndex(ThreadingHTTPServer):
    """A package index on 127.0.0.1 that answers pip's first request after ``hold`` seconds, then 404 at once (no
    such project here: pip keeps what is installed)."""

    def __init__(self, hold: float) -> None:
        self.hold, self.paths, self.first_answered = hold, [], None
        self.started = time.monotonic()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server naming
                server.paths.append(self.path)
                if len(server.paths) == 1:
                    time.sleep(server.hold)
                    server.first_answered = time.monotonic() - server.started
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        self.daemon_threads = True
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/simple/"


def slow_pip_env(index: SlowIndex) -> dict[str, str]:
    """pip as setup runs it, against the slow index: ``PIP_UPGRADE`` makes it ask the index about every
    requirement, as a first install does; no pip config file of this machine is read (no other index)."""
    return {"PIP_INDEX_URL": index.url, "PIP_UPGRADE": "1", "PIP_CONFIG_FILE": os.devnull,
            "PIP_DEFAULT_TIMEOUT": "600", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


def test_setup_on_a_pip_install_slower_than_the_bash_tools_limit_ends_with_its_summary(
        claude_code_installed, long_claude_code_sessions, tmp_path, request):
    # conftest.py started it with the session's first test and runs this test last: it waited meanwhile
    SlowSetup.joined(long_claude_code_sessions.get(request.node.name), claude_code_installed, tmp_path)


def _slow_setup(cc: harness.ClaudeCode, tmp_path: Path, _llm: Any) -> None:
    """``/longmemeval-setup --sample`` whose pip install takes over two minutes, played as the command says (the
    ``--background`` line, then the ``--wait`` line while it exits 4)."""
    project, env = make_project(tmp_path, setup=False)
    (project / ".longmemeval-venv" / ".longmemeval-requirements.sha256").unlink()  # not installed yet
    index = SlowIndex(SLOW_INDEX_SECONDS)

    def follow(exchange: Exchange) -> Any:
        [result] = exchange.last_tool_results()[-1:] or [None]
        if result is None or result.exit_code != 4:
            return None
        return bash(next(b for b in expanded_blocks(exchange) if "--wait" in b))

    script = [play_blocks(command_body, "--background", again_on=None), follow, say("Set up.")]
    try:
        with ScriptedClaude(script) as fake:
            session = cc.session(f"{command_names.SETUP} --sample", cwd=project, base_url=fake.base_url,
                                 env=env | slow_pip_env(index), timeout=560)
    finally:
        index.shutdown()
    assert_clean(session, fake)
    transcript = session.describe()
    assert index.first_answered is not None and index.first_answered >= SLOW_INDEX_SECONDS, index.paths
    assert session.seconds > 120, transcript  # longer than the Bash tool's default limit
    calls = session.bash_calls()
    assert not [c for c in calls if "moved to the background" in c[1]], transcript  # never handed to the background
    first, *waits = calls
    assert "--background" in first[0] and first[1].startswith("Exit code 4") and "setup: still running" in first[1]
    assert f'wait: python3 "{cc.plugin_dir}/scripts/setup_project.py" --wait 100' in first[1], first[1]
    assert waits and all("--wait 100" in line for line, _, _ in waits), transcript
    summary = waits[-1][1]
    assert not waits[-1][2] and "venv      ready: updated" in summary and "next: /longmemeval-run --max 3" in summary, summary
    assert (project / ".longmemeval-venv" / ".longmemeval-requirements.sha256").is_file()
    assert json.loads((project / ".longmemeval-benchmarks" / "config.json").read_text())["judgeProvider"] == "offline"


SlowSetup = harness.played(_slow_setup)
"""Its session, in a thread while the suite runs (conftest.py)."""


def expanded_blocks(exchange: Exchange) -> list[str]:
    from fake_claude_api import bash_blocks

    return [b.strip() for b in bash_blocks(command_body(exchange))]


# --------------------------------------------------------------------------- the installed plugin's size

MAX_INSTALLED_BYTES = 10 * 1024 * 1024


def tree_bytes(root: Path) -> int:
    return sum(p.lstat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink())


def test_installing_the_plugin_from_the_checkout_after_the_test_commands_install_copies_only_the_plugin(
        claude_binary, tmp_path):
    env = dict(os.environ)  # the test command's own locations (run_tests.sh exported them), else this run's
    env.setdefault("LONGMEMEVAL_TEST_VENV", sys.prefix)
    env.setdefault("LONGMEMEVAL_CLAUDE_CODE_DIR", str(Path(claude_binary).resolve().parents[2])
                   if "node_modules" in Path(claude_binary).resolve().parts else str(tmp_path / "no-cli"))
    before = sorted(p.name for p in REPO.iterdir())
    done = subprocess.run(["bash", str(REPO / "tests" / "run_tests.sh"), "--install-only"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(p.name for p in REPO.iterdir()) == before  # nothing installed into the checkout

    home = tmp_path / "home"
    home.mkdir()
    harness.install_plugin(claude_binary, home, REPO)  # the checkout itself, as the README says
    [installed] = [p for p in (home / ".claude" / "plugins" / "cache").glob("*/*/*") if p.is_dir()]
    size = tree_bytes(installed)
    print(f"installed plugin: {size / 1e6:.2f} MB at {installed}")
    assert size < MAX_INSTALLED_BYTES, sorted((tree_bytes(p), p.name) for p in installed.iterdir())[-5:]
    assert (installed / "commands" / "longmemeval-run.md").is_file()
    assert not [n for n in (".venv", ".tools", "node_modules") if (installed / n).exists()]
