"""A run's start and the scorecard clean up what killed writes left (issue 38, finding 9): the stale temps of the
project's run folders and state folder, partial loop snapshots among them, go; a fresh temp, other files and links
stay."""

from __future__ import annotations

from lme.cli import run_benchmark, scorecard
from lme.core.errors import run_main
from leftovers_testing import assert_swept, plant
from run_project import make_project, register_answers


def run(project, *args):
    return run_main(run_benchmark.main, ["--project", str(project), "--progress", "quiet",
                                         "--no-scorecard", *args])


def test_a_runs_start_removes_the_stale_temps_and_keeps_the_rest(tmp_path, fake_llm, capsys):
    register_answers(fake_llm)
    project = make_project(tmp_path / "p")
    (tmp_path / "outside").mkdir()
    planted = plant(project, tmp_path / "outside")
    assert run(project, "--run-id", "r1", "--max", "1") == 0
    assert_swept(planted)
    assert f"{len(planted.stale)} " in capsys.readouterr().err


def test_the_scorecard_removes_the_stale_temps_and_keeps_the_rest(tmp_path, fake_llm, capsys):
    register_answers(fake_llm)
    project = make_project(tmp_path / "p")
    assert run(project, "--run-id", "r1", "--max", "1") == 0
    (tmp_path / "outside").mkdir()
    planted = plant(project, tmp_path / "outside")
    capsys.readouterr()
    assert scorecard.main(["--run-id", "r1", "--project", str(project), "--no-charts", "--no-html"]) == 0
    assert_swept(planted)
    assert f"{len(planted.stale)} " in capsys.readouterr().err
