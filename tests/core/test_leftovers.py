"""Temps of killed writes are removed at the next start (issue 38, finding 9): only our own temp names, only when
old enough that no live writer can still rename them, never through a link, never outside the project."""

from __future__ import annotations

import os
from pathlib import Path

from lme.core import fileio
from leftovers_testing import STATE, assert_swept, plant


def test_stale_temps_of_each_kind_are_removed_and_the_fresh_the_foreign_and_the_linked_kept(tmp_path, capsys):
    project, outside = tmp_path / "p", tmp_path / "outside"
    outside.mkdir()
    planted = plant(project, outside)
    removed = fileio.clean_leftovers(project)
    assert_swept(planted)
    assert (removed.count, removed.bytes) == (len(planted.stale), planted.stale_bytes)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{len(planted.stale)} " in err and f"{planted.stale_bytes:,}" in err


def test_a_sweep_that_finds_nothing_says_nothing(tmp_path, capsys):
    (tmp_path / "p" / STATE / "runs" / "r1").mkdir(parents=True)
    assert fileio.clean_leftovers(tmp_path / "p").count == 0
    assert fileio.clean_leftovers(tmp_path / "not-a-project").count == 0
    assert capsys.readouterr().err == ""
    assert not (tmp_path / "not-a-project").exists()


def test_a_configured_runs_folder_is_swept_but_a_folder_outside_the_project_never(tmp_path):
    project, outside = tmp_path / "p", tmp_path / "outside"
    outside.mkdir()
    planted = plant(project, outside, run_folder="../my-runs/r1")  # runs_dir: my-runs, beside the state folder
    elsewhere = plant(tmp_path / "elsewhere", outside)
    fileio.clean_leftovers(project, project / "my-runs", tmp_path / "elsewhere" / STATE)
    assert_swept(planted)
    assert all(os.path.lexists(p) for p in elsewhere.stale)


def test_the_upstream_checkout_is_never_searched(tmp_path):
    project = tmp_path / "p"
    planted = plant(project, tmp_path)
    theirs = project / STATE / "LongMemEval" / ".git" / ".index.abcdefgh.tmp"
    theirs.parent.mkdir(parents=True)
    theirs.write_bytes(b"git's")
    os.utime(theirs, (0, 0))
    fileio.clean_leftovers(project)
    assert theirs.exists() and not any(os.path.lexists(p) for p in planted.stale)


def test_a_partial_folder_with_one_fresh_file_is_a_live_build_and_kept(tmp_path):
    project = tmp_path / "p"
    plant(project, tmp_path)
    building = fileio.make_temp_dir(project / STATE / "snapshots" / "v4")
    (building / "item-results.jsonl").write_bytes(b"copying")
    os.utime(building, (0, 0))
    fileio.clean_leftovers(project)
    assert (building / "item-results.jsonl").exists()
    assert building.name.startswith(".v4.") and building.name.endswith(".tmp")


def test_an_atomic_write_leaves_no_temp_and_its_temp_name_is_one_a_sweep_knows(tmp_path, monkeypatch):
    made: list[str] = []
    real = fileio._mkstemp

    def spy(**where):
        fd, name = real(**where)
        made.append(name)
        return fd, name

    monkeypatch.setattr(fileio, "_mkstemp", spy)
    fileio.write_atomic_bytes(tmp_path / "report.html", b"<html>")
    fileio.ensure_writable_dir(tmp_path / "runs")
    assert all(fileio.is_temp_name(Path(name).name) for name in made) and len(made) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html", "runs"]
