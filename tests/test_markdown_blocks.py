"""Every bash block in commands/, skills/ and references/ runs as written (see tests/markdown_harness.py)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

import markdown_harness as harness

DOC_FILES = harness.doc_files()


def _standin_root(tmp_path: Path) -> Path | None:
    try:
        from upstream_standin import make_upstream_tree
    except ImportError:
        return None
    return make_upstream_tree(tmp_path / "upstream")


@pytest.fixture(scope="module")
def earlier_runs(tmp_path_factory) -> Path | None:
    """One offline sample run, made once and copied into each project: users who report or iterate have runs."""
    root = tmp_path_factory.mktemp("earlier-runs")
    # Module scope runs before conftest's per-test isolation: isolate by hand (no keys, a temp HOME).
    base = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    base["HOME"] = str(tmp_path_factory.mktemp("earlier-runs-home"))
    project, env = harness.prepare_project(root, sys.executable, base)
    runs = harness.make_sample_run(project, env)
    if runs is None:
        print("doc-test: the offline sample run failed; projects start with no runs")
    return runs


@pytest.fixture
def user_project(tmp_path, fake_llm, earlier_runs):
    return harness.prepare_project(tmp_path, sys.executable, os.environ,
                                   longmemeval_root=_standin_root(tmp_path), runs_from=earlier_runs)


@pytest.mark.parametrize("doc", DOC_FILES, ids=[p.relative_to(harness.REPO).as_posix() for p in DOC_FILES])
def test_bash_blocks_run_as_written(doc, user_project):
    project, env = user_project
    result = harness.run_file(doc, project, env)
    for number, reason in result.skipped:
        print(f"doc-test skipped {doc.relative_to(harness.REPO)} block {number}: {reason}")
    assert result.failed is None, result.describe_failure()


# --------------------------------------------------------------------------- the harness itself


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_a_failing_block_is_reported_with_file_block_number_and_output(tmp_path, user_project):
    project, env = user_project
    doc = _write(tmp_path / "docs" / "broken.md", (
        "# Broken\n\n```bash\necho first-ran > first.txt\n```\n\n```python\nraise SystemExit(1)\n```\n\n"
        "```bash\necho about-to-fail\nfalse\necho never-printed\n```\n\n```bash\necho third > third.txt\n```\n"))
    result = harness.run_file(doc, project, env)
    assert result.failed is not None and result.failed.number == 2 and result.failed.line == 11
    assert result.ran == [1, 2] and (project / "first.txt").exists() and not (project / "third.txt").exists()
    message = result.describe_failure()
    assert "broken.md: bash block 2 (line 11) exited with 1" in message
    assert "about-to-fail" in message and "never-printed" not in result.output


def test_exit_inside_a_block_fails_that_block_not_the_harness(tmp_path, user_project):
    project, env = user_project
    doc = _write(tmp_path / "exit.md", "```bash\ntrue\n```\n\n```bash\necho bye >&2; exit 3\n```\n")
    result = harness.run_file(doc, project, env)
    assert (result.failed.number, result.exit_code) == (2, 3) and "bye" in result.output


def test_directives_skip_a_block_and_set_its_arguments(tmp_path, user_project):
    project, env = user_project
    doc = _write(tmp_path / "commands" / "demo.md", (
        "<!-- doc-test: skip needs a real key -->\n```bash\nexit 1\n```\n\n"
        "<!-- doc-test: args --max 3 -->\n\n```bash\ntest \"$ARGUMENTS\" = '--max 3'\necho got $ARGUMENTS\n```\n"))
    blocks = harness.extract_blocks(doc)
    assert [(b.number, b.skip, b.args) for b in blocks] == [(1, "needs a real key", None), (2, None, "--max 3")]
    result = harness.run_file(doc, project, env)
    assert result.failed is None, result.describe_failure()
    assert result.skipped == [(1, "needs a real key")] and result.ran == [2]
    assert "got --max 3" in result.output


def test_arguments_are_substituted_textually_in_commands_only(tmp_path):
    block = harness.Block(Path("x.md"), 1, 1, "echo '$ARGUMENTS'\n")
    assert "echo '--sample'" in harness.build_script([block], substitute=True, default_args="--sample")
    assert "echo '$ARGUMENTS'" in harness.build_script([block], substitute=False, default_args="--sample")


def test_indented_fences_in_lists_are_found_and_dedented(tmp_path):
    doc = _write(tmp_path / "list.md", "1. Step:\n\n   ```bash\n   echo hi\n   ```\n\n```sh\nnot bash\n```\n")
    assert [b.code for b in harness.extract_blocks(doc)] == ["echo hi\n"]


def test_the_prepared_project_looks_like_a_users(user_project):
    project, env = user_project
    import subprocess

    branch = subprocess.run(["git", "branch", "--show-current"], cwd=project, env=env, capture_output=True,
                            text=True).stdout.strip()
    assert branch == "longmemeval-iter"
    assert (project / ".longmemeval-venv" / "bin" / "python").exists()
    assert (project / ".longmemeval-benchmarks" / "config.json").exists()
    assert env["CLAUDE_PLUGIN_ROOT"] == str(harness.REPO)
    assert env["PATH"].startswith(str(project / ".longmemeval-venv" / "bin"))
    assert "127.0.0.1" in env["OPENAI_BASE_URL"]


def test_a_hanging_block_is_killed_at_the_timeout_and_reported(tmp_path, user_project):
    project, env = user_project
    doc = _write(tmp_path / "hang.md", "```bash\nsleep 30 &\nsleep 30\n```\n")
    result = harness.run_file(doc, project, env, timeout=1)
    assert result.failed.number == 1 and result.exit_code == 124 and "timed out" in result.output
