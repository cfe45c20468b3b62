"""The user's copy of memory-ref across plugin updates: a copy made from an older memory-ref is refused at a run's
start in one line naming update-copy (no run directory, no error rows); ``loop_target.py update-copy`` merges
today's memory-ref into it by git's three-way merge, keeping the user's edit, after which an offline run
completes; a conflict leaves the merge to the user; bad inputs change nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lme.cli import loop_target as loop_target_cli
from lme.cli import run_benchmark
from lme.core import schemas
from lme.core.errors import run_main
from lme.loop import copy_update
from lme.loop import target as loop_target
from lme.targets import api
from loop_testing import git, make_loop_project
from run_project import REPO, make_project, register_answers, run_dir

OLD = "d0bf04d"
"""A real older memory-ref (2026-12-01): it imports ``lme.targets.bm25_index`` and ``lme.targets.reader``, which
moved to ``lme.target_kit`` since. The tests take its files from this repository's history."""
OLDEST = "a5a6983"
"""The oldest memory-ref a use-copy copy can hold (2026-11-29): ``import sqlite_store``, ``from bm25_index import``,
``from errors import`` (top-level modules of ``scripts/`` then)."""
USER_EDIT = "\n\ndef users_own_helper(text: str) -> str:\n    \"\"\"The user's fix, kept across updates.\"\"\"\n" \
            "    return normalise(text)\n"
RUN_ARGS = ["--progress", "quiet", "--no-scorecard", "--target-option", "embedder=none"]


def old_copy(project: Path, *, message: str = loop_target.COMMIT_MESSAGE.format(dest="memory_system"),
             version: str = OLD) -> Path:
    """``project/memory_system``: memory-ref as of ``OLD``, committed as the older use-copy did, then the user's
    edit committed on top."""
    names = git(["ls-tree", "--name-only", version, "plugins/memory_ref/"], REPO, check=False)
    if names.returncode != 0:
        pytest.skip(f"this checkout has no history back to {version} (a shallow clone)")
    copy = project / "memory_system"
    copy.mkdir()
    for name in names.stdout.split():
        (copy / Path(name).name).write_text(git(["show", f"{version}:{name}"], REPO).stdout)
    git(["add", "memory_system"], project)
    git(["commit", "-q", "-m", message], project)
    with open(copy / "text.py", "a") as fh:
        fh.write(USER_EDIT)
    git(["commit", "-q", "-am", "my fix"], project)
    return copy


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    """A loop project whose target is ./memory_system; commands run from its root, as the plugin runs them."""
    root = make_loop_project(tmp_path, remote=False)
    monkeypatch.chdir(root)
    return make_project(root, target="memory_system", concurrency=1,
                        loop={"branch": "longmemeval-iter", "target": "memory_system"})


def update(project: Path, *args: str) -> int:
    return run_main(loop_target_cli.main, ["--project", str(project), "update-copy", *args])


def state(project: Path) -> tuple[str, str, str]:
    """HEAD, the work tree's status and every ref: what a refused update-copy must leave as it was."""
    return (git(["rev-parse", "HEAD"], project).stdout, git(["status", "--porcelain"], project).stdout,
            git(["for-each-ref"], project).stdout)


@pytest.mark.parametrize("version, gone", [(OLD, "lme.targets.bm25_index"), (OLDEST, "sqlite_store")])
def test_an_old_copy_is_refused_at_run_start_then_update_copy_keeps_the_users_edit_and_the_run_completes(
        project, capsys, fake_llm, version, gone):
    register_answers(fake_llm)
    copy = old_copy(project, version=version)
    argv = ["--project", str(project), "--run-id", "r1", *RUN_ARGS]
    for dry in ([], ["--dry-run"]):
        assert run_main(run_benchmark.main, [*argv, *dry]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "memory_system/" in err and gone in err
        assert "loop_target.py update-copy" in err and "bad target options" not in err
        assert not run_dir(project, "r1").exists()

    assert update(project) == 0
    out = capsys.readouterr().out
    assert "merged memory-ref" in out and "your changes kept" in out
    assert (copy / "text.py").read_text().endswith(USER_EDIT)
    assert (copy / "index.py").read_text() == (REPO / "plugins" / "memory_ref" / "index.py").read_text()
    record = json.loads((copy / api.RECORD_FILE).read_text())
    assert record["targetApi"] == api.version_text(api.TARGET_API)
    assert git(["status", "--porcelain", "memory_system"], project).stdout == ""

    assert run_main(run_benchmark.main, argv) == 0
    rows = [json.loads(x) for x in (run_dir(project, "r1") / "item-results.jsonl").read_text().splitlines()]
    assert rows and all(r["status"] == "judged" for r in rows)
    assert update(project) == 0
    assert "up to date" in capsys.readouterr().out


def test_a_conflict_leaves_the_merge_in_progress_and_names_the_files(project, capsys):
    copy = old_copy(project)
    index = (copy / "index.py").read_text()
    (copy / "index.py").write_text(index.replace("from lme.targets.bm25_index import BM25Index",
                                                 "from my_ranker import BM25Index  # the user's own fix"))
    git(["commit", "-q", "-am", "my own import fix"], project)
    head = git(["rev-parse", "HEAD"], project).stdout
    assert update(project) == copy_update.EXIT_CONFLICT
    line = capsys.readouterr().out.strip()
    assert len(line.splitlines()) == 1 and "memory_system/index.py" in line
    assert "git add" in line and "git commit" in line and "git merge --abort" in line
    assert "<<<<<<<" in (copy / "index.py").read_text()
    assert (copy / "text.py").read_text().endswith(USER_EDIT)
    git(["merge", "--abort"], project)
    assert git(["rev-parse", "HEAD"], project).stdout == head and "my_ranker" in (copy / "index.py").read_text()


def test_a_copy_made_today_runs_as_before_and_update_copy_has_nothing_to_do(project, capsys, fake_llm):
    register_answers(fake_llm)
    assert run_main(loop_target_cli.main, ["--project", str(project), "use-copy"]) == 0
    record = json.loads((project / "memory_system" / api.RECORD_FILE).read_text())
    schemas.validate("target-api-record", record, where=api.RECORD_FILE)
    assert record["targetApi"] == api.version_text(api.TARGET_API) and record["pluginVersion"]
    assert record["baseCommitMessage"] == git(["log", "-1", "--format=%s"], project).stdout.strip()
    before = state(project)
    assert update(project) == 0
    assert "up to date" in capsys.readouterr().out and state(project) == before
    assert run_main(run_benchmark.main, ["--project", str(project), "--run-id", "r1", *RUN_ARGS]) == 0


def test_a_copy_recorded_against_another_major_is_refused_in_one_line(project, capsys):
    assert run_main(loop_target_cli.main, ["--project", str(project), "use-copy"]) == 0
    (project / "memory_system" / api.RECORD_FILE).write_text(json.dumps({"targetApi": "0.9"}))
    capsys.readouterr()
    assert run_main(run_benchmark.main, ["--project", str(project), "--run-id", "r1", *RUN_ARGS]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "target API 0.9" in err and "update-copy" in err
    assert not run_dir(project, "r1").exists()


def test_without_the_copy_commit_todays_memory_ref_goes_on_a_branch_to_diff(project, capsys):
    copy = old_copy(project, message="add my memory system")
    head = git(["rev-parse", "HEAD"], project).stdout
    assert update(project) == copy_update.EXIT_SIDE_BRANCH
    line = capsys.readouterr().out.strip()
    assert len(line.splitlines()) == 1 and "git diff HEAD memory-ref-" in line
    branch = line.split("git diff HEAD ")[1].split()[0]
    assert git(["rev-parse", "HEAD"], project).stdout == head and (copy / "text.py").read_text().endswith(USER_EDIT)
    shown = git(["show", f"{branch}:memory_system/index.py"], project).stdout
    assert shown == (REPO / "plugins" / "memory_ref" / "index.py").read_text()


def test_bad_inputs_of_update_copy_change_nothing(project, capsys):
    before = state(project)
    assert update(project) == 2  # no copy
    assert "no committed copy of memory-ref" in capsys.readouterr().err and state(project) == before
    copy = old_copy(project)
    (copy / "text.py").write_text("# half an edit\n")
    before = state(project)
    assert update(project) == 2
    assert "uncommitted changes" in capsys.readouterr().err and state(project) == before
    git(["checkout", "-q", "--", "memory_system"], project)
    git(["switch", "-q", "main"], project)
    before = state(project)
    assert update(project) == 2
    assert "not on the loop branch" in capsys.readouterr().err and state(project) == before
    git(["switch", "-q", "longmemeval-iter"], project)
    before = state(project)
    assert update(project, "--dest", "../elsewhere") == 2
    assert "not a folder inside the project" in capsys.readouterr().err and state(project) == before
