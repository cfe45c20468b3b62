"""check_setup.sh against real git projects: each broken precondition fails with its own line and fix."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from loop_testing import git, make_loop_project

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "check_setup.sh"
KEYS = {"OPENAI_API_KEY": "sk-test-openai-SECRETVALUE", "ANTHROPIC_API_KEY": "sk-ant-test-SECRETVALUE"}


@pytest.fixture(scope="module", autouse=True)
def python3_without_its_shim(tmp_path_factory):
    """A folder first on the checks' PATH whose ``python3`` is the interpreter the PATH's ``python3`` runs, started
    directly: where that is a version manager's shim (pyenv's: a bash script that runs ``pyenv exec``), each of the
    fallback's six python starts (no venv) cost ~60 ms of CPU in the shim alone. The script still finds ``python3``
    on PATH, and the same interpreter answers."""
    found = shutil.which("python3")
    if found is None:
        yield
        return
    real = subprocess.run([found, "-c", "import sys; print(sys.executable)"], capture_output=True, text=True,
                          check=True, timeout=60).stdout.strip()
    folder = tmp_path_factory.mktemp("python3-on-path")
    (folder / "python3").symlink_to(real)
    previous = os.environ["PATH"]
    os.environ["PATH"] = f"{folder}{os.pathsep}{previous}"
    yield
    os.environ["PATH"] = previous


def run_check(project: Path, env_extra: dict | None = None, drop: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **KEYS, **(env_extra or {})}
    for name in drop:
        env.pop(name, None)
    return subprocess.run(["bash", str(SCRIPT), "--project", str(project)], capture_output=True, text=True, env=env, timeout=60)


def fails(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("FAIL")]


@pytest.fixture
def project(tmp_path):
    return make_loop_project(tmp_path)


@pytest.fixture(scope="module")
def good_check(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """A good project and its check, run once for the tests that read the same run."""
    project = make_loop_project(tmp_path_factory.mktemp("good"))
    return project, run_check(project)


def test_good_project_passes_and_creates_the_loop_state_files(good_check):
    project, proc = good_check
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert fails(proc.stdout) == []
    assert (project / ".max_effort_round").read_text().strip() == "0"
    assert "| round | date | correct/n |" in (project / "history_max_effort.md").read_text()
    assert not (project / "history.md").exists()


def test_key_values_are_never_printed(good_check):
    _, proc = good_check
    assert "SECRETVALUE" not in proc.stdout + proc.stderr
    assert "ok   OPENAI_API_KEY is set" in proc.stdout


def test_existing_round_counter_is_kept(project):
    (project / ".max_effort_round").write_text("7\n")
    assert run_check(project).returncode == 0
    assert (project / ".max_effort_round").read_text().strip() == "7"


def test_wrong_branch_fails(project):
    git(["switch", "-q", "main"], project)
    proc = run_check(project)
    assert proc.returncode == 1
    assert fails(proc.stdout) == ["FAIL on branch 'main', not the loop branch longmemeval-iter -> git switch longmemeval-iter (create it once with git switch -c longmemeval-iter)"]


def test_missing_remote_fails(tmp_path):
    project = make_loop_project(tmp_path, remote=False)
    proc = run_check(project)
    assert proc.returncode == 1
    (line,) = fails(proc.stdout)
    assert "git remote 'origin' does not exist" in line


def test_unpushable_remote_fails(project):
    git(["remote", "set-url", "origin", str(project.parent / "gone.git")], project)
    proc = run_check(project)
    assert proc.returncode == 1
    (line,) = fails(proc.stdout)
    assert "push --dry-run" in line


def test_missing_key_fails_naming_only_the_key(project):
    proc = run_check(project, drop=("ANTHROPIC_API_KEY",))
    assert proc.returncode == 1
    assert fails(proc.stdout) == ["FAIL ANTHROPIC_API_KEY is not set -> export ANTHROPIC_API_KEY=... in the shell that runs the loop"]


def test_non_gpt4o_judge_and_symbolic_flag_off_in_config_fail(tmp_path):
    project = make_loop_project(
        tmp_path, loop={"judge": "anthropic:claude-sonnet-4-5", "targetOptions": {"symbolic_bypass": False}}
    )
    proc = run_check(project)
    assert proc.returncode == 1
    lines = fails(proc.stdout)
    assert len(lines) == 2
    assert "loop judge is 'anthropic:claude-sonnet-4-5'" in lines[0]
    assert lines[1].startswith("FAIL symbolic_bypass is off")


def test_configured_branch_and_keys_are_honoured(tmp_path):
    project = make_loop_project(tmp_path, branch="campaign", loop={"branch": "campaign", "required_keys": ["OPENAI_API_KEY"]})
    proc = run_check(project, drop=("ANTHROPIC_API_KEY",))
    assert proc.returncode == 0, proc.stdout


def test_missing_venv_fails_but_other_checks_still_run(tmp_path):
    project = make_loop_project(tmp_path, venv=False)
    proc = run_check(project)
    assert proc.returncode == 1
    assert fails(proc.stdout)[0].startswith("FAIL venv python missing")
    assert "ok   on the loop branch longmemeval-iter" in proc.stdout


def test_unknown_argument_is_a_usage_error(project):
    proc = subprocess.run(["bash", str(SCRIPT), "--bogus"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2 and "unknown argument" in proc.stderr


def test_a_folder_that_is_not_a_project_gets_no_loop_state_files(tmp_path):
    folder = tmp_path / "not-a-project"
    folder.mkdir()
    proc = run_check(folder, drop=tuple(KEYS))
    assert proc.returncode == 1
    assert list(folder.iterdir()) == []
    assert "skip loop state files" in proc.stdout


def test_a_failed_check_leaves_the_state_files_uncreated_until_it_passes(project):
    assert run_check(project, drop=("ANTHROPIC_API_KEY",)).returncode == 1
    assert not (project / ".max_effort_round").exists() and not (project / "history_max_effort.md").exists()
    assert run_check(project).returncode == 0
    assert (project / ".max_effort_round").read_text().strip() == "0"
