"""Claude Code as a test client: the real, pinned CLI run headless against a scripted fake model.

A session is ``claude -p PROMPT --output-format stream-json --verbose`` in a user's project, with a temporary
``HOME`` in which this plugin was added as a directory marketplace and installed (``claude plugin marketplace
add``, ``claude plugin install``), ``ANTHROPIC_BASE_URL`` at a :class:`fake_claude_api.ScriptedClaude` and a dummy
key. The permission mode is Claude Code's default (nothing pre-approved beyond what the plugin's files and the
project grant), so every Bash call the plugin's Markdown makes either matches an ``allowed-tools`` rule or shows
up as a ``permission_denials`` entry in the stream.

The sessions' plugin is installed from a copy of the checkout's plugin files (commands, skills, hooks,
references, scripts, plugins, data, manifests), so nothing a session writes lands in the checkout; the install
size test (tests/claude_code/test_claude_code_names.py) installs from the checkout itself.

The pinned CLI lives where tests/run_tests.sh installed it (``LONGMEMEVAL_CLAUDE_CODE_DIR``, by default under
``${XDG_CACHE_HOME:-~/.cache}/longmemeval-benchmarker/``, outside the checkout), else ``claude`` on PATH.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import shared_work

REPO = Path(__file__).resolve().parent.parent
CLAUDE_CODE_VERSION = "2.1.332"
PLUGIN = "longmemeval-benchmarker"
PLUGIN_PARTS = (".claude-plugin", "commands", "skills", "hooks", "references", "scripts", "plugins", "data",
                "README.md", "LICENSE")
_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")


def cache_folder(env: Mapping[str, str] = os.environ) -> Path:
    """Where the test command keeps what it installs, outside the checkout (tests/test_tools.sh says the same)."""
    cache = env.get("LONGMEMEVAL_TEST_CACHE") or str(Path(env.get("XDG_CACHE_HOME") or Path(env.get("HOME", "~"))
                                                          / ".cache") / "longmemeval-benchmarker")
    return Path(cache).expanduser()


def default_tools_dir(env: Mapping[str, str] = os.environ) -> Path:
    """Where tests/run_tests.sh installs the pinned CLI (tests/test_tools.sh says the same)."""
    if env.get("LONGMEMEVAL_CLAUDE_CODE_DIR"):
        return Path(env["LONGMEMEVAL_CLAUDE_CODE_DIR"])
    return cache_folder(env) / f"claude-code-{CLAUDE_CODE_VERSION}"


TOOLS_DIR = default_tools_dir()
"""Read once, at import (conftest.py imports this module before any test points HOME elsewhere)."""


def claude_binary() -> str | None:
    """The pinned CLI installed by tests/run_tests.sh (``TOOLS_DIR``), else ``claude`` on PATH."""
    local = TOOLS_DIR / "node_modules" / ".bin" / "claude"
    if local.exists():
        return str(local)
    return shutil.which("claude")


def cli_required() -> bool:
    """Under CI (or LONGMEMEVAL_REQUIRE_CLAUDE=1) a missing CLI fails the tests instead of skipping them."""
    return os.environ.get("CI", "").lower() in ("1", "true", "yes") or os.environ.get("LONGMEMEVAL_REQUIRE_CLAUDE") == "1"


def unusable_reason() -> str | None:
    """Why the Claude Code tests cannot run here (None: the pinned CLI is installed)."""
    binary = claude_binary()
    if binary is None:
        return f"the Claude Code CLI is not installed (bash tests/run_tests.sh installs it into {TOOLS_DIR})"
    version = cli_version(binary)
    if version != CLAUDE_CODE_VERSION:
        return f"{binary} is Claude Code {version!r}; the tests pin {CLAUDE_CODE_VERSION} (tests/run_tests.sh)"
    return None


def cli_version(binary: str) -> str:
    done = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=60)
    return done.stdout.split()[0] if done.returncode == 0 and done.stdout.split() else ""


def copy_plugin(dest: Path) -> Path:
    """The checkout's plugin files under ``dest`` (the directory marketplace Claude Code reads)."""
    dest.mkdir(parents=True, exist_ok=True)
    for part in PLUGIN_PARTS:
        source = REPO / part
        if source.is_dir():
            shutil.copytree(source, dest / part, ignore=_IGNORE)
        elif source.is_file():
            shutil.copy2(source, dest / part)
    return dest


def base_env(home: Path, base_url: str | None = None, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The CLI's environment: a temp HOME, the fake model, a dummy key, no updater or telemetry."""
    keep = ("PATH", "LANG", "LC_ALL", "TMPDIR", "TERM", "SHELL", "USER", "LOGNAME", "CI")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.update({
        "HOME": str(home),
        "ANTHROPIC_API_KEY": "sk-ant-test-DUMMY-claude-code-0000",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "GIT_AUTHOR_NAME": "Claude Code test", "GIT_AUTHOR_EMAIL": "cc-test@example.invalid",
        "GIT_COMMITTER_NAME": "Claude Code test", "GIT_COMMITTER_EMAIL": "cc-test@example.invalid",
        "PYTHONDONTWRITEBYTECODE": "1",
    })
    if base_url is not None:
        env["ANTHROPIC_BASE_URL"] = base_url
    env.update(extra or {})
    return env


def install_plugin(binary: str, home: Path, plugin_dir: Path) -> None:
    """Add ``plugin_dir`` as a marketplace and install the plugin from it, as a user does.

    Without an API key: with one, 2.1.332 spends 15-30 s per plugin command trying to reach Anthropic."""
    env = base_env(home)
    env.pop("ANTHROPIC_API_KEY")
    for args in (["plugin", "marketplace", "add", str(plugin_dir)],
                 ["plugin", "install", f"{PLUGIN}@{PLUGIN}"]):
        done = subprocess.run([binary, *args], env=env, cwd=home, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"claude {' '.join(args)} failed ({done.returncode}):\n{done.stdout}{done.stderr}")


# --------------------------------------------------------------------------- a headless session


@dataclass
class Session:
    """What one ``claude -p`` printed (stream-json) and how it ended."""

    returncode: int
    events: list[dict[str, Any]]
    stderr: str
    seconds: float

    @property
    def init(self) -> dict[str, Any]:
        return next((e for e in self.events if e.get("type") == "system" and e.get("subtype") == "init"), {})

    @property
    def results(self) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("type") == "result"]

    @property
    def permission_denials(self) -> list[dict[str, Any]]:
        """Every denial of every result segment (the json output format keeps only the last one's)."""
        return [d for r in self.results for d in r.get("permission_denials") or ()]

    def tool_uses(self, name: str | None = None) -> list[dict[str, Any]]:
        out = []
        for event in self.events:
            if event.get("type") != "assistant":
                continue
            for block in event.get("message", {}).get("content") or ():
                if block.get("type") == "tool_use" and (name is None or block.get("name") == name):
                    out.append(block)
        return out

    def tool_results(self) -> dict[str, dict[str, Any]]:
        """tool_use_id -> the tool_result block the CLI produced for it."""
        out = {}
        for event in self.events:
            if event.get("type") != "user":
                continue
            content = event.get("message", {}).get("content")
            for block in content if isinstance(content, list) else ():
                if isinstance(block, Mapping) and block.get("type") == "tool_result":
                    out[str(block.get("tool_use_id"))] = dict(block)
        return out

    def bash_calls(self) -> list[tuple[str, str, bool]]:
        """(command, result text, is_error) for every Bash call, in order."""
        results = self.tool_results()
        calls = []
        for use in self.tool_uses("Bash"):
            result = results.get(use["id"], {})
            calls.append((use["input"]["command"], result_text(result), bool(result.get("is_error"))))
        return calls

    def describe(self) -> str:
        """A readable transcript for assertion messages."""
        lines = [f"exit {self.returncode} after {self.seconds:.1f} s"]
        for event in self.events:
            kind = event.get("type")
            if kind == "assistant":
                for block in event.get("message", {}).get("content") or ():
                    if block.get("type") == "text":
                        lines.append(f"assistant: {block['text'][:300]}")
                    elif block.get("type") == "tool_use":
                        lines.append(f"tool_use {block['name']}: {json.dumps(block['input'])[:400]}")
            elif kind == "user":
                content = event.get("message", {}).get("content")
                for block in content if isinstance(content, list) else ():
                    if isinstance(block, Mapping) and block.get("type") == "tool_result":
                        flag = " (error)" if block.get("is_error") else ""
                        lines.append(f"tool_result{flag}: {result_text(block)[-800:]}")
            elif kind == "result":
                lines.append(f"result {event.get('subtype')}: denials={event.get('permission_denials')}")
            elif kind == "system" and event.get("subtype") not in ("init",):
                lines.append(f"system {event.get('subtype')}: {json.dumps(event)[:400]}")
        if self.stderr.strip():
            lines.append("stderr: " + self.stderr.strip()[-2000:])
        return "\n".join(lines)


def result_text(block: Mapping[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(str(b.get("text", "")) for b in content or () if isinstance(b, Mapping))


def run_session(binary: str, prompt: str, *, cwd: Path, env: Mapping[str, str], timeout: float = 240,
                extra_args: Iterable[str] = (), on_start: Callable[[subprocess.Popen], None] | None = None) -> Session:
    """One headless session in ``cwd``; stream-json events parsed (non-JSON lines are kept in stderr).

    ``on_start(proc)`` gets the CLI's process (its own process group) as soon as it runs, e.g. to kill it."""
    started = time.monotonic()
    cmd = [binary, "-p", prompt, "--output-format", "stream-json", "--verbose", *extra_args]
    with subprocess.Popen(cmd, cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, start_new_session=True) as proc:
        if on_start is not None:
            on_start(proc)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            out, err = proc.communicate()
            err += f"\n(claude -p killed after {timeout:.0f} s)"
    events, junk = [], []
    for line in out.splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            junk.append(line)
    return Session(proc.returncode, events, "\n".join(junk) + err, time.monotonic() - started)


@dataclass
class ClaudeCode:
    """An installed HOME plus the binary: ``session()`` runs one headless conversation."""

    binary: str
    home: Path
    plugin_dir: Path
    extra_env: dict[str, str] = field(default_factory=dict)
    on_start: Callable[[subprocess.Popen], None] | None = None
    """Called with each session's process as it starts (a session thread's, to kill it)."""

    def env(self, base_url: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        return base_env(self.home, base_url, {**self.extra_env, **(extra or {})})

    def session(self, prompt: str, *, cwd: Path, base_url: str, env: Mapping[str, str] | None = None,
                timeout: float = 240, extra_args: Iterable[str] = (),
                on_start: Callable[[subprocess.Popen], None] | None = None) -> Session:
        return run_session(self.binary, prompt, cwd=cwd, env=self.env(base_url, env), timeout=timeout,
                           extra_args=extra_args, on_start=on_start or self.on_start)

    def clone(self, home: Path) -> "ClaudeCode":
        """A copy of this HOME (the plugin stays where it was installed from)."""
        shutil.copytree(self.home, home, symlinks=True)
        return ClaudeCode(self.binary, home, self.plugin_dir, dict(self.extra_env))


class SessionThread(threading.Thread):
    """A long Claude Code session played in a thread while the rest of the suite runs (conftest.py starts it with
    the first test; its test joins it last). ``played`` makes one from a test's body."""

    def __init__(self, cc: ClaudeCode, root: Path) -> None:
        super().__init__(name=f"claude-code-{type(self).__name__}", daemon=True)
        self.cc, self.root = cc, root
        cc.on_start = self.on_start
        self.error: BaseException | None = None
        self.proc: subprocess.Popen | None = None
        self.outcome_file: Path | None = None
        """Where the session's outcome is written when it ends, for a test in another test process to read."""

    def play(self) -> None:
        raise NotImplementedError

    def run(self) -> None:
        try:
            self.play()
        except BaseException as err:  # noqa: BLE001 - reported by the test
            self.error = err
        finally:
            if self.outcome_file is not None:
                shared_work.publish(self.outcome_file, None if self.error is None
                                    else "".join(traceback.format_exception(self.error)))

    def on_start(self, proc: subprocess.Popen) -> None:
        self.proc = proc

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, 9)

    @classmethod
    def launch(cls, installed: ClaudeCode, root: Path, outcome_file: Path | None = None) -> "SessionThread":
        thread = cls(installed.clone(root / "home"), root)
        thread.outcome_file = outcome_file
        thread.start()
        return thread

    @classmethod
    def joined(cls, started: "SessionThread | Path | None", installed: ClaudeCode, root: Path,
               timeout: float = 560) -> None:
        """Wait for the session conftest.py started with the suite's first test (a thread here, or the outcome file
        of one played in another test process), or for one started now when this test runs alone; what failed in
        it (an assertion of its ``play`` included) is raised here."""
        if isinstance(started, Path):
            error = shared_work.wait_for(started, f"the {cls.__name__} session", timeout)
            assert error is None, f"the {cls.__name__} session, played in another test process, failed:\n{error}"
            return
        thread = started or cls.launch(installed, root)
        thread.join(timeout=timeout)
        assert not thread.is_alive(), f"the {cls.__name__} session did not end within {timeout:g} s"
        if thread.error is not None:
            raise thread.error


def played(body: Callable[[ClaudeCode, Path, Any], None]) -> type[SessionThread]:
    """A ``SessionThread`` whose ``play`` is ``body(cc, root, server)``: a test's whole body, given a fake model
    server of its own (``fake_llm_server.FakeLLMServer``), so it runs in a thread while the suite runs."""

    class Played(SessionThread):
        def play(self) -> None:
            from fake_llm_server import FakeLLMServer

            with FakeLLMServer() as server:
                body(self.cc, self.root, server)

    Played.__name__ = Played.__qualname__ = body.__name__.strip("_").title().replace("_", "")
    return Played


# --------------------------------------------------------------------------- an interactive session (tmux)


def tmux_binary() -> str | None:
    return shutil.which("tmux")


def accept_first_run(home: Path, project: Path, api_key: str) -> None:
    """What a user who finished the CLI's first start has in ``~/.claude.json``: onboarding done (else it tries to
    reach api.anthropic.com), this folder trusted, the key approved. Nothing about the plugin or its rules."""
    path = home / ".claude.json"
    data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    data.update({"hasCompletedOnboarding": True, "theme": "dark", "lastOnboardingVersion": CLAUDE_CODE_VERSION,
                 "customApiKeyResponses": {"approved": [api_key[-20:]], "rejected": []}})
    data.setdefault("projects", {})[str(project)] = {"hasTrustDialogAccepted": True, "allowedTools": []}
    path.write_text(json.dumps(data), encoding="utf-8")


@dataclass
class Terminal:
    """The CLI in a terminal: a detached tmux session of its own (its own socket), typed into like a user."""

    socket: Path
    binary: str = "tmux"

    @classmethod
    def start(cls, command: list[str], *, cwd: Path, env: Mapping[str, str], socket: Path) -> "Terminal":
        term = cls(socket, tmux_binary() or "tmux")
        subprocess.run([term.binary, "-S", str(socket), "new-session", "-d", "-x", "200", "-y", "50", "-c", str(cwd),
                        "env", "-i", *(f"{k}={v}" for k, v in env.items()), *command], check=True, timeout=30)
        term.tmux("set-option", "-g", "remain-on-exit", "on")
        return term

    def tmux(self, *args: str) -> str:
        done = subprocess.run([self.binary, "-S", str(self.socket), *args], capture_output=True, text=True, timeout=30)
        return done.stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p")

    def type(self, text: str) -> None:
        self.tmux("send-keys", "-l", text)

    def enter(self) -> None:
        self.tmux("send-keys", "Enter")

    def wait_for(self, predicate: Callable[[], Any], timeout: float = 60, what: str = "") -> Any:
        """Poll ``predicate`` until it returns something truthy; AssertionError with the screen on timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = predicate()
            if found:
                return found
            time.sleep(0.3)
        raise AssertionError(f"timed out waiting for {what or predicate}; the screen:\n{self.screen()}")

    def stop(self) -> None:
        self.tmux("kill-server")
