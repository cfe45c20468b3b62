"""Shared test setup: scripts/, tests/ and its folders on sys.path, and no test ever touches the user's real state
or network.

The tests sit in one folder per stage of scripts/lme/ (tests/judge/, tests/run/, ...), plus tests/plugins/ for the
memory systems, tests/claude_code/, tests/docs/, tests/fakes/ and tests/structure/; the shared helpers (factories.py,
fake_llm_server.py, run_project.py, ...) stay here. Every folder is on sys.path, so a test imports a helper or
another test module by its plain name wherever the two sit; test file names are unique across folders
(tests/structure/test_tests_layout.py)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPTS = REPO / "scripts"
TESTS = REPO / "tests"
TEST_FOLDERS = sorted(p for p in TESTS.iterdir() if p.is_dir() and any(p.glob("test_*.py")))
for p in (*reversed(TEST_FOLDERS), SCRIPTS, TESTS):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

SHARED_DATA = REPO.parent / "shared" / "data" / "longmemeval"

import claude_code_harness  # noqa: E402  (reads where the pinned CLI lives before any test moves HOME)
from command_env import bytecode_folders  # noqa: E402


def _bytecode_outside_the_checkout() -> None:
    """Bytecode is written and kept between runs, in PYTHONPYCACHEPREFIX or the test cache's ``pycache/`` (outside
    the checkout: installing the plugin copies no ``__pycache__``), for this process and every command a test starts.

    Where PYTHONDONTWRITEBYTECODE is set (some shells and containers set it), each of the suite's thousands of
    commands compiled the toolkit from its source (~0.2 s of CPU each) and each test process rewrote every test
    module's asserts. A test that must see no bytecode, or a stale one, sets its own environment."""
    prefix = os.environ.get("PYTHONPYCACHEPREFIX") or str(claude_code_harness.cache_folder() / "pycache")
    os.environ["PYTHONPYCACHEPREFIX"] = prefix
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.pycache_prefix = prefix
    sys.dont_write_bytecode = False


_bytecode_outside_the_checkout()
os.environ.pop("PYTHONUNBUFFERED", None)  # commands buffer their stdout as on a user's machine: where a shell set
# it, a background setup's output written only at its exit (after its exit record) went unseen by the tests

SHIPPED = (SCRIPTS, REPO / "plugins")
"""The folders the plugin install copies whole: a ``__pycache__`` a test run leaves there would be installed."""
_BYTECODE_BEFORE = pytest.StashKey[set]()


def pytest_sessionstart(session):
    session.stash[_BYTECODE_BEFORE] = bytecode_folders(SHIPPED)


def pytest_sessionfinish(session, exitstatus):
    """The run fails when it left a new ``__pycache__`` in scripts/ or plugins/: some command a test started had
    lost the bytecode setting (start it with command_env.clean_env, or the test process's environment)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return  # the controller checks once, after every worker ended
    left = sorted(bytecode_folders(SHIPPED) - session.stash.get(_BYTECODE_BEFORE, set()))
    if left:
        names = ", ".join(path.relative_to(REPO).as_posix() for path in left)
        session.config.get_terminal_writer().line(
            f"\nerror: the test run left bytecode in the shipped folders: {names} (a command started without "
            f"PYTHONPYCACHEPREFIX: tests/command_env.py's clean_env keeps it)", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(autouse=True)
def _isolated_environment(tmp_path_factory, monkeypatch):
    """Point HOME at a temp dir and drop real API keys/base URLs so nothing can reach a real provider."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("LONGMEMEVAL_TIKTOKEN", "0")  # never let tiktoken fetch its BPE file from the internet
    for var in (
        "CLAUDECODE",  # what Claude Code's Bash tool sets: messages would print its forms (command_names.step)
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_BASE_URL",
        "OPENAI_ORG_ID",
        "OPENAI_ORGANIZATION",
        "CLAUDE_CODE_SESSION_ID",  # a suite started from a Claude Code session must not run as a loop session
    ):
        monkeypatch.delenv(var, raising=False)
    yield


@pytest.fixture
def fresh_probes():
    """Each test a new process as far as probes go: ``provider_probe``'s in-process memory is empty before and
    after (a module opts in with ``pytestmark = pytest.mark.usefixtures("fresh_probes")``)."""
    from lme.models import provider_probe

    provider_probe.forget()
    yield
    provider_probe.forget()


@pytest.fixture
def repo_root() -> Path:
    return REPO


@pytest.fixture
def shared_data() -> Path:
    """The real LongMemEval copy beside the repo; tests that need it skip cleanly when it is absent."""
    if not (SHARED_DATA / "longmemeval_oracle.json").exists():
        pytest.skip("real LongMemEval data (../shared/data/longmemeval) not present")
    return SHARED_DATA


@pytest.fixture
def fake_llm(monkeypatch):
    """A running fake model server (tests/fake_llm_server.py) with both SDKs' env vars pointed at it.

    The key values are dummies: the real SDKs need one, and tests assert they never land in a file.
    """
    from fake_llm_server import FakeLLMServer

    server = FakeLLMServer()
    server.start()
    monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-DUMMY-openai-key-0000")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-DUMMY-anthropic-key-0000")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def upstream_prompt(request, monkeypatch, tmp_path):
    """Verdicts judged in this test can be official: the stand-in prompt function (tests/upstream_standin.py)
    counts as upstream's, and, when the test runs the fake server, its host counts as the official judge's
    (``endpoint_urls.TEST_OFFICIAL_HOSTS``: in this process only; nothing a user writes reaches it)."""
    from lme.core import endpoint_urls
    from lme.judge import official as judge_official
    from upstream_standin import make_upstream_tree

    standin = judge_official.load_prompt_builder(make_upstream_tree(tmp_path / "standin")).function_sha256
    monkeypatch.setattr(judge_official, "UPSTREAM_FUNCTION_SHA256", frozenset({standin}))
    if "fake_llm" in request.fixturenames:
        server = request.getfixturevalue("fake_llm")
        monkeypatch.setattr(endpoint_urls, "TEST_OFFICIAL_HOSTS", frozenset({f"127.0.0.1:{server.port}"}))


# --------------------------------------------------------------------------- Claude Code (tests/claude_code/test_claude_code.py)

LONG_SESSIONS = {
    # about four minutes, most of it waiting on a slow fake model
    "test_a_run_longer_than_the_bash_tools_limit_completes_through_the_documented_blocks":
        ("test_claude_code", "LongRun"),
    # over two minutes, waiting on a slow package index
    "test_setup_on_a_pip_install_slower_than_the_bash_tools_limit_ends_with_its_summary":
        ("test_claude_code_names", "SlowSetup"),
    # the loop sessions, about 40 s each, mostly waiting on fake models too
    "test_the_loop_through_claude_code_across_the_official_judges_retirement": ("test_claude_code", "AcrossTheDay"),
    "test_the_loop_on_the_users_own_file_keeps_one_fix_reverts_one_and_each_row_names_its_code":
        ("test_claude_code_own_system", "OwnSystemLoop"),
    "test_the_loop_through_claude_code_two_rounds_kept_going_by_the_stop_hook": ("test_claude_code", "TwoRounds"),
    "test_the_standing_rules_allow_the_loop_and_refuse_the_rest": ("test_claude_code_unattended", "StandingRules"),
}
"""Each slow test's session (module, ``SessionThread`` class), started in a thread with the suite's first test so
that it waits while the suite runs; the test joins it last."""


@pytest.fixture(scope="session")
def claude_binary() -> str:
    """The pinned CLI; missing (or another version): skip locally, fail under CI."""
    import claude_code_harness as harness

    problem = harness.unusable_reason()
    if problem is not None:
        if harness.cli_required():
            pytest.fail(problem)
        pytest.skip(problem)
    return harness.claude_binary()


@pytest.fixture(scope="session")
def claude_code_installed(claude_binary, tmp_path_factory):
    """A HOME with the plugin added as a marketplace and installed, made once; tests use copies of it."""
    import claude_code_harness as harness

    root = tmp_path_factory.mktemp("claude-code")
    plugin = harness.copy_plugin(root / "plugin" / harness.PLUGIN)
    home = root / "home"
    home.mkdir()
    harness.install_plugin(claude_binary, home, plugin)
    return harness.ClaudeCode(claude_binary, home, plugin)


MARKED_BY_FIXTURE = {"claude_binary": "claude_code", "browser": "browser"}
"""A test that uses the fixture gets the marker (pytest.ini: the slow kinds ``run_tests.sh --fast`` leaves out)."""


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects by marker
def pytest_collection_modifyitems(items):
    """Each test using the real CLI or the browser is marked so; the slow Claude Code tests run last (their
    sessions started with the first test; see below)."""
    for item in items:
        for fixture, marker in MARKED_BY_FIXTURE.items():
            if fixture in item.fixturenames:
                item.add_marker(marker)
    items.sort(key=lambda item: item.name in LONG_SESSIONS)


@pytest.fixture(scope="session", autouse=True)
def long_claude_code_sessions(request, tmp_path_factory):
    """Start each slow Claude Code session with the suite's first test, so it waits while the suite runs: {test name:
    its thread}. Under pytest-xdist the first worker to start a test plays them all and publishes each one's outcome
    (tests/shared_work.py); in the other workers the map gives the test the file to wait for."""
    import importlib

    import claude_code_harness as harness
    import shared_work

    wanted = {item.name for item in request.session.items} & set(LONG_SESSIONS)
    if not wanted or harness.unusable_reason() is not None:
        yield {}
        return
    shared = shared_work.shared_folder(tmp_path_factory)
    if shared is not None and not shared_work.claim(shared, "claude-code-sessions"):
        yield {name: shared / f"{LONG_SESSIONS[name][1]}.pickle" for name in wanted}
        return
    threads = {}
    for name in sorted(wanted):
        module, cls = LONG_SESSIONS[name]
        launcher = getattr(importlib.import_module(module), cls)
        threads[name] = launcher.launch(request.getfixturevalue("claude_code_installed"),
                                        tmp_path_factory.mktemp(cls.lower()),
                                        None if shared is None else shared / f"{cls}.pickle")
    yield threads
    for thread in threads.values():
        if shared is not None and not request.session.shouldstop:  # tests in other workers may wait on it
            thread.join(timeout=560)
        thread.kill()
        thread.join(timeout=30)
