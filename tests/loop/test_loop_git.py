"""loop_git commit --changed: the agent's fix is every changed file outside the loop's own state, nothing else."""

from __future__ import annotations

import json

import pytest

from lme.loop import branch as loop_git
from lme.cli import loop_git as loop_git_cli
from lme.core.errors import run_main
from loop_testing import git, make_loop_project


@pytest.fixture
def project(tmp_path):
    return make_loop_project(tmp_path)


def _loop_state(project):
    (project / "history_max_effort.md").write_text("# h\n")
    (project / ".max_effort_round").write_text("1\n")
    state = project / ".longmemeval-benchmarks"
    (state / "runs" / "loop").mkdir(parents=True)
    (state / "runs" / "loop" / "item-results.jsonl").write_text("{}\n")
    (state / "config.json").write_text("{}\n")
    (state / "trigger_set.txt").write_text("q001\n")
    (state / "proposal.md").write_text("answer from the latest session\n")


def test_changed_commits_edited_new_and_deleted_files_but_no_loop_state(project, capsys):
    _loop_state(project)
    (project / "README.md").write_text("edited by the fix\n")
    (project / "src").mkdir()
    (project / "src" / "reader.py").write_text("LATEST = True\n")
    (project / ".gitignore").unlink()  # a deleted file is part of the fix; runs and venv are no longer ignored
    assert run_main(loop_git_cli.main, ["--project", str(project), "commit", "-m", "fix(v1): latest", "--changed"]) == 0
    files = git(["show", "--name-only", "--format=", "HEAD"], project).stdout.split()
    assert sorted(files) == [".gitignore", "README.md", "src/reader.py"]
    assert "committing: " in capsys.readouterr().err
    status = git(["status", "--porcelain", "--untracked-files=all"], project).stdout
    assert "history_max_effort.md" in status and ".longmemeval-benchmarks/trigger_set.txt" in status
    assert ".longmemeval-benchmarks/runs/loop/item-results.jsonl" in status and ".longmemeval-venv/" in status


def test_changed_with_no_fix_in_the_tree_is_refused_and_commits_nothing(project, capsys):
    _loop_state(project)
    before = git(["rev-parse", "HEAD"], project).stdout
    assert run_main(loop_git_cli.main, ["--project", str(project), "commit", "-m", "fix(v1): x", "--changed"]) == 2
    assert "no fix to commit" in capsys.readouterr().err
    assert git(["rev-parse", "HEAD"], project).stdout == before


def test_state_commit_carries_the_rounds_trigger_set_and_proposal(project):
    _loop_state(project)
    assert loop_git_cli.main(["--project", str(project), "commit", "-m", "round v1", "--state"]) == 0
    files = set(git(["show", "--name-only", "--format=", "HEAD"], project).stdout.split())
    assert {".longmemeval-benchmarks/trigger_set.txt", ".longmemeval-benchmarks/proposal.md"} <= files
    assert ".longmemeval-benchmarks/config.json" in files  # the branch reproduces the run's settings
    assert not [f for f in files if "/runs/" in f or "/cache/" in f]


def test_a_config_holding_a_key_is_never_committed(project, capsys):
    _loop_state(project)
    config = project / ".longmemeval-benchmarks" / "config.json"
    config.write_text(json.dumps({"loop": {}, "providers": {"openai": {"api_key": "sk-live-0123456789abcdef"}}}))
    before = git(["rev-parse", "HEAD"], project).stdout
    assert run_main(loop_git_cli.main, ["--project", str(project), "commit", "-m", "round v1", "--state"]) == 2
    err = capsys.readouterr().err
    assert "looks like it holds an API key" in err and "sk-live" not in err
    assert git(["rev-parse", "HEAD"], project).stdout == before
