"""A file we open is the file we meant: no write, truncation or lock goes through a symbolic link out of a project.

``fileio`` opens every file of a run folder, the state folder and the cache with ``O_NOFOLLOW`` and refuses a linked
parent folder below the project; each refusal is one ``SymlinkRefused`` line, and the file outside is untouched.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from lme.core import fileio
from lme.core.errors import UserError
from lme.core.fileio import SymlinkRefused

STATE = ".longmemeval-benchmarks"


def snapshot(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def places(tmp_path):
    project = tmp_path / "project"
    run = project / STATE / "runs" / "r1"
    run.mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.jsonl").write_bytes(b'{"keep": 1}\n{"torn": ')
    (outside / "lockfile").write_bytes(b"precious\n")
    return project, run, outside


def test_an_append_repair_or_lock_through_a_linked_file_is_refused_and_the_outside_file_untouched(places):
    project, run, outside = places
    (run / "item-results.jsonl").symlink_to(outside / "victim.jsonl")
    (run / ".lock").symlink_to(outside / "lockfile")
    before = snapshot(outside)
    with pytest.raises(SymlinkRefused, match="item-results.jsonl is a symbolic link"):
        fileio.append_jsonl(run / "item-results.jsonl", {"question_id": "q1"})
    with pytest.raises(SymlinkRefused):
        fileio.repair_tail(run / "item-results.jsonl")
    with pytest.raises(SymlinkRefused, match=r"\.lock is a symbolic link"):
        fileio.FileLock(run, ".lock").acquire()
    with pytest.raises(SymlinkRefused):
        list(fileio.iter_jsonl(run / "item-results.jsonl"))
    with pytest.raises(SymlinkRefused):
        fileio.read_json(run / "item-results.jsonl")
    assert snapshot(outside) == before


def test_a_linked_folder_below_the_project_is_refused_for_every_write(places):
    project, run, outside = places
    (run / "shard-1of2").symlink_to(outside, target_is_directory=True)
    (run / "charts").symlink_to(outside, target_is_directory=True)
    before = snapshot(outside)
    with pytest.raises(SymlinkRefused, match="shard-1of2 is a symbolic link"):
        fileio.append_jsonl(run / "shard-1of2" / "item-results.jsonl", {"question_id": "q1"})
    with pytest.raises(SymlinkRefused, match="charts is a symbolic link"):
        fileio.write_atomic_bytes(run / "charts" / "per_type.png", b"png")
    with pytest.raises(SymlinkRefused):
        fileio.make_dirs(run / "charts" / "deeper")
    with pytest.raises(SymlinkRefused):
        fileio.ensure_writable_dir(run / "shard-1of2")
    assert snapshot(outside) == before and sorted(os.listdir(outside)) == ["lockfile", "victim.jsonl"]


def test_the_state_folder_itself_linked_out_of_the_project_is_refused(tmp_path):
    project, outside = tmp_path / "project", tmp_path / "outside"
    project.mkdir()
    outside.mkdir()
    (project / STATE).symlink_to(outside, target_is_directory=True)
    with pytest.raises(SymlinkRefused, match=f"{STATE} is a symbolic link"):
        fileio.write_atomic_json(project / STATE / "config.json", {})
    assert list(outside.iterdir()) == []


def test_an_owned_project_protects_folders_outside_the_state_folder_too(tmp_path):
    project, outside = tmp_path / "project", tmp_path / "outside"
    (project / "runs").mkdir(parents=True)
    outside.mkdir()
    (project / "runs" / "r1").symlink_to(outside, target_is_directory=True)
    fileio.write_atomic_bytes(project / "runs" / "r1" / "x.json", b"{}")  # not declared: only the file is checked
    (outside / "x.json").unlink()
    fileio.own(project)
    with pytest.raises(SymlinkRefused, match="r1 is a symbolic link"):
        fileio.write_atomic_bytes(project / "runs" / "r1" / "x.json", b"{}")
    assert list(outside.iterdir()) == []


def test_an_atomic_replace_over_a_link_replaces_the_link_not_its_target(places):
    project, run, outside = places
    (run / "run-meta.json").symlink_to(outside / "victim.jsonl")
    before = snapshot(outside)
    fileio.write_atomic_json(run / "run-meta.json", {"status": "running"})
    assert not (run / "run-meta.json").is_symlink() and snapshot(outside) == before


def test_a_pipe_in_place_of_a_log_is_refused_not_waited_on(places):
    project, run, _ = places
    os.mkfifo(run / "item-results.jsonl")
    with pytest.raises(UserError, match="is not a regular file"):
        fileio.append_jsonl(run / "item-results.jsonl", {"question_id": "q1"})
    with pytest.raises(UserError, match="is not a regular file"):
        fileio.read_json(run / "item-results.jsonl")


def test_regular_files_and_folders_still_work(places):
    project, run, _ = places
    fileio.append_jsonl(run / "item-results.jsonl", {"question_id": "q1"})
    fileio.make_dirs(run / "charts")
    fileio.write_atomic_bytes(run / "charts" / "a.png", b"png")
    with fileio.FileLock(run, ".lock"):
        pass
    assert [rec for _, rec in fileio.iter_jsonl(run / "item-results.jsonl")] == [{"question_id": "q1"}]
    fileio.copy_tree(run, project / "copy", skip=(".lock",))
    assert sorted(p.name for p in (project / "copy").rglob("*")) == ["a.png", "charts", "item-results.jsonl"]
