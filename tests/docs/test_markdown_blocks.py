"""Every bash block in commands/, skills/ and references/ runs as written (see tests/markdown_harness.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import markdown_harness as harness
from lme.score import trigger_set

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


def _git_log(repo: Path, env, ref: str = "HEAD") -> list[str]:
    return subprocess.run(["git", "log", "--format=%s", ref], cwd=repo, env=env, capture_output=True, text=True,
                          check=True).stdout.splitlines()


def _a_round_was_played(project: Path, env, output: str) -> None:
    """Below the target, one round: baseline, fix, re-test, revert (the fix changes no answer: net 0), pushed."""
    assert "below the target: no confirmation yet" in output
    state = project / ".longmemeval-benchmarks"
    intent, decision = [json.loads(line) for line in (state / "decisions.jsonl").read_text().splitlines()]
    assert intent["applying"] and not intent["applied"]  # a revert is recorded, then applied, then recorded again
    assert (decision["round"], decision["decision"], decision["net"], decision["applied"]) == (1, "revert", 0, True)
    chosen = trigger_set.parse((state / "trigger_set.txt").read_text())
    assert decision["retested"] == len(chosen.ids) > 0 and len(chosen.control) >= len(chosen.failing)
    assert decision["retest_set"]["control"] == len(chosen.control) and decision["noise"]["measured"]
    assert "noise floor (" in output and "stack: writer openai:gpt-4o-mini" in output  # steps 3b and the stack
    log = _git_log(project, env)
    assert log[0].startswith("round v1: REVERT: net +0") and log[1].startswith('Revert "fix(v1): Prefer the latest')
    assert log[2].startswith("fix(v1): Prefer the latest") and log[3] == "round v1: baseline"
    assert _git_log(project.parent / "origin.git", env, "longmemeval-iter") == log
    assert not (project / "memory_system" / "answer_policy.py").exists()  # the fix went into the project's target
    assert (project / "memory_system" / "__init__.py").exists()
    rows = [json.loads(line) for line in
            (state / "runs" / "longmemeval-iter" / "item-results.jsonl").read_text().splitlines()]
    assert rows and {row["target"]["name"] for row in rows} == {"memory_system"}


def _the_loop_was_confirmed(project: Path, env, output: str) -> None:
    confirmation = json.loads((project / ".longmemeval-benchmarks" / "confirmation.json").read_text())
    assert (confirmation["status"], confirmation["confirm_correct"], confirmation["n_total"]) == ("confirmed", 24, 24)
    assert _git_log(project.parent / "origin.git", env, "longmemeval-iter")[0].startswith("FINAL: LongMemEval 24/24")
    history = (project / "history_max_effort.md").read_text()
    assert any(line.startswith("| BLOCKED |") and "API billing" in line for line in history.splitlines())


def _the_hypotheses_were_judged(project: Path, env, output: str) -> None:
    rows = [json.loads(line) for line in
            (project / ".longmemeval-benchmarks" / "runs" / "skill-hyps" / "item-results.jsonl").read_text().splitlines()]
    written = (project / "hyps.jsonl").read_text().splitlines()
    assert len(rows) == len(written) and {r["status"] for r in rows} == {"judged"}
    assert {r["target"]["name"] for r in rows} == {"hypotheses"}


def _the_shell_path_ran_and_scored(project: Path, env, output: str) -> None:
    """README "Without Claude Code": the estimate with its keys, then the approved paid run, judged, and its scorecard."""
    assert "dry run estimate: 24 items; target full-context anthropic:claude-sonnet-4-6" in output
    assert "keys       set: ANTHROPIC_API_KEY, OPENAI_API_KEY" in output
    runs = project / ".longmemeval-benchmarks" / "runs"
    newest = max(runs.iterdir(), key=lambda d: json.loads((d / "run-meta.json").read_text())["started_at"])
    meta = json.loads((newest / "run-meta.json").read_text())
    assert (meta["status"], meta["target"]["name"], meta["judge"]["model"]) == ("completed", "full-context",
                                                                               "gpt-4o-2024-08-06")
    assert f"# LongMemEval scorecard — run `{newest.name}`" in output and "judged 24/24" in output


#: What a doc's blocks must have done, beyond exiting 0 (doc path -> check(project, env, output)).
OUTCOMES = {
    "README.md": _the_shell_path_ran_and_scored,
    "skills/longmemeval-iterate/SKILL.md": _a_round_was_played,
    "references/termination.md": _the_loop_was_confirmed,
    "skills/run-benchmark/SKILL.md": _the_hypotheses_were_judged,
}


@pytest.mark.parametrize("doc", DOC_FILES, ids=[p.relative_to(harness.REPO).as_posix() for p in DOC_FILES])
def test_bash_blocks_run_as_written(doc, user_project, fake_llm):
    project, env = user_project
    harness.apply_setups(doc, project, env, fake_llm)
    result = harness.run_file(doc, project, env)
    for number, reason in result.skipped:
        print(f"doc-test skipped {doc.relative_to(harness.REPO)} block {number}: {reason}")
    assert result.failed is None, result.describe_failure()
    outcome = OUTCOMES.get(doc.relative_to(harness.REPO).as_posix())
    if outcome is not None:
        outcome(project, env, result.output)


def test_the_loop_docs_run_every_block():
    """No skip left in the loop's docs: each of their steps is exercised as written."""
    for name in ("skills/longmemeval-iterate/SKILL.md",
                 "references/iteration-rules.md", "references/termination.md"):
        blocks = harness.extract_blocks(harness.REPO / name)
        assert blocks and [b.number for b in blocks if b.skip is not None] == [], name


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


def test_agent_directive_plays_the_agents_edit_in_the_blocks_subshell_and_stacks_with_args(
        tmp_path, user_project, monkeypatch):
    project, env = user_project
    monkeypatch.setitem(harness.AGENT_STANDINS, "demo-edit", "echo edited > fix.txt; SECRET=1")
    doc = _write(tmp_path / "commands" / "agent.md", (
        "<!-- doc-test: agent demo-edit -->\n<!-- doc-test: args --x -->\n"
        "```bash\ncat fix.txt; echo \"secret=${SECRET:-} args=$ARGUMENTS\"\n```\n\n"
        "```bash\necho \"next=${SECRET:-unset}\"\n```\n"))
    blocks = harness.extract_blocks(doc)
    assert (blocks[0].agent, blocks[0].args, blocks[1].agent) == ("demo-edit", "--x", None)
    result = harness.run_file(doc, project, env)
    assert result.failed is None, result.describe_failure()
    assert "edited\nsecret=1 args=--x" in result.output and "next=unset" in result.output
    unknown = _write(tmp_path / "unknown.md", "<!-- doc-test: agent nope -->\n```bash\ntrue\n```\n")
    with pytest.raises(ValueError, match="unknown.md:2: unknown doc-test agent stand-in 'nope'"):
        harness.extract_blocks(unknown)


def test_setup_directive_makes_the_project_loop_ready(tmp_path, user_project, fake_llm):
    project, env = user_project
    doc = _write(tmp_path / "loop.md", "# Loop\n\n<!-- doc-test: setup loop -->\n\n```bash\ntrue\n```\n")
    assert harness.file_setups(doc) == ["loop"] and harness.extract_blocks(doc)[0].agent is None
    assert harness.apply_setups(doc, project, env, fake_llm) == ["loop"]
    loop = json.loads((project / ".longmemeval-benchmarks" / "config.json").read_text())["loop"]
    assert loop["judge"] == "openai:gpt-4o" and all(loop["targetOptions"].values())
    assert len(fake_llm.answers) == 24 and fake_llm.correct_share == 0.5
    with pytest.raises(ValueError, match="unknown doc-test setup 'nope'"):
        harness.apply_setups(_write(tmp_path / "bad.md", "<!-- doc-test: setup nope -->\n"), project, env, fake_llm)


def test_arguments_are_substituted_textually_in_commands_only(tmp_path):
    block = harness.Block(Path("x.md"), 1, 1, "echo '$ARGUMENTS'\n")
    assert "echo '--sample'" in harness.build_script([block], substitute=True, default_args="--sample")
    assert "echo '$ARGUMENTS'" in harness.build_script([block], substitute=False, default_args="--sample")


def test_indented_fences_in_lists_are_found_and_dedented(tmp_path):
    doc = _write(tmp_path / "list.md", "1. Step:\n\n   ```bash\n   echo hi\n   ```\n\n```sh\nnot bash\n```\n")
    assert [b.code for b in harness.extract_blocks(doc)] == ["echo hi\n"]


def test_the_prepared_project_looks_like_a_users(user_project):
    project, env = user_project
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
