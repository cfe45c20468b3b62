"""drop_qids: exactly the named ids leave the completed set and the results, atomically, with a backup."""

from __future__ import annotations

import pytest

import factories
from lme.store import run_store
from lme.score import drop_qids
from lme.cli import drop_qids as drop_qids_cli
from lme.core.errors import UserError, run_main
from loop_testing import item_ids, make_row, write_run


@pytest.fixture
def run(tmp_path):
    types = item_ids(10)
    ids = list(types)
    labels = {q: (None if i == 4 else i % 2 == 0) for i, q in enumerate(ids)}  # q004 error, odd ids wrong
    run_dir = write_run(tmp_path, "loop", types, labels)
    return tmp_path, run_dir, ids


def test_dropped_ids_leave_results_and_completed_and_nothing_else_changes(run):
    project, run_dir, ids = run
    rows_before = factories.load_rows(run_dir)
    done_before = run_store.load_completed(run_dir)
    assert run_main(drop_qids_cli.main, ["--project", str(project), "--run-id", "loop", ids[0], ids[2]]) == 0
    rows_after = factories.load_rows(run_dir)
    assert set(rows_after) == set(rows_before) - {ids[0], ids[2]}
    assert {q: rows_after[q] for q in rows_after} == {q: rows_before[q] for q in rows_after}
    assert run_store.load_completed(run_dir) == done_before - {ids[0], ids[2]}


def test_the_runs_ids_are_read_once_however_many_ids_are_dropped(run, monkeypatch):
    """Each read loads every row of the run: once per dropped id was n x k rows for k ids of an n-row run."""
    _, run_dir, ids = run
    reads = []
    real = drop_qids.known_ids
    monkeypatch.setattr(drop_qids, "known_ids", lambda run_dir: reads.append(run_dir) or real(run_dir))
    drop_qids.drop_qids(run_dir, ids[:5])
    assert reads == [run_dir]


def test_every_attempt_of_a_dropped_id_goes(run):
    project, run_dir, ids = run
    factories.append_unmarked(run_dir, make_row(ids[1], "single-session-assistant", True))
    drop_qids.drop_qids(run_dir, [ids[1]])
    assert not any(r["question_id"] == ids[1] for r in factories.iter_rows(run_dir))


def test_backup_holds_both_files_as_they_were(run):
    project, run_dir, ids = run
    results = (run_dir / "item-results.jsonl").read_bytes()
    completed = (run_dir / "questions_completed.jsonl").read_bytes()
    out = drop_qids.drop_qids(run_dir, [ids[0]])
    from pathlib import Path

    backup = Path(out["backup"])
    assert (backup / "item-results.jsonl").read_bytes() == results
    assert (backup / "questions_completed.jsonl").read_bytes() == completed
    assert out["rows_removed"] == 1 and out["marks_removed"] == 1


def test_unknown_ids_are_refused_all_named_and_nothing_written(run, capsys):
    project, run_dir, ids = run
    results = (run_dir / "item-results.jsonl").read_bytes()
    code = run_main(drop_qids_cli.main, ["--project", str(project), "--run-id", "loop", ids[0], "nope1", "nope2"])
    assert code == 2
    err = capsys.readouterr().err
    assert "nope1, nope2" in err and ids[0] not in err.split(":")[-1]
    assert (run_dir / "item-results.jsonl").read_bytes() == results
    assert not (run_dir / "backups").exists()


def test_failed_drops_every_wrong_and_error_id(run):
    project, run_dir, ids = run
    assert run_main(drop_qids_cli.main, ["--project", str(project), "--run-id", "loop", "--failed"]) == 0
    remaining = factories.load_rows(run_dir)
    assert sorted(remaining) == [q for i, q in enumerate(ids) if i % 2 == 0 and i != 4]


def test_from_file_reads_ids_and_skips_comments(run, tmp_path):
    project, run_dir, ids = run
    listing = tmp_path / "ids.txt"
    listing.write_text(f"# trigger set\n{ids[3]}\n\n{ids[5]}  # temporal\n")
    assert run_main(drop_qids_cli.main, ["--project", str(project), "--run-id", "loop", "--from-file", str(listing)]) == 0
    assert ids[3] not in factories.load_rows(run_dir) and ids[5] not in factories.load_rows(run_dir)


def test_a_running_writer_blocks_the_drop(run):
    project, run_dir, ids = run
    results = (run_dir / "item-results.jsonl").read_bytes()
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    ready, release = ctx.Event(), ctx.Event()

    def hold():
        with run_store.RunLock(run_dir):
            ready.set()
            release.wait(10)

    proc = ctx.Process(target=hold)
    proc.start()
    try:
        assert ready.wait(10)
        with pytest.raises(UserError, match="being written"):
            drop_qids.drop_qids(run_dir, [ids[0]])
    finally:
        release.set()
        proc.join(10)
    assert (run_dir / "item-results.jsonl").read_bytes() == results


def test_no_ids_is_a_user_error(run):
    project, run_dir, ids = run
    with pytest.raises(UserError, match="no question ids"):
        drop_qids.drop_qids(run_dir, [])


def _hold_lock_in_child(lock_dir, shared_root=None):
    """Start a process holding the RunLock of ``lock_dir`` (and, like a shard writer, a shared lock on
    ``shared_root``); returns (process, release event)."""
    import contextlib
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    ready, release = ctx.Event(), ctx.Event()

    def hold():
        with contextlib.ExitStack() as held:
            if shared_root is not None:
                held.enter_context(run_store.RunLock(shared_root, shared=True))
            held.enter_context(run_store.RunLock(lock_dir))
            ready.set()
            release.wait(10)

    proc = ctx.Process(target=hold)
    proc.start()
    assert ready.wait(10)
    return proc, release


def _shard_with_row(run_dir, qid):
    shard = run_dir / "shard-1of2"
    shard.mkdir()
    factories.append_unmarked(shard, make_row(qid, "single-session-user", True))
    run_store.mark_completed(shard, qid)
    return shard


@pytest.mark.parametrize("root_lock", ["shared root lock", "shard lock only"])
def test_a_shard_writer_blocks_the_drop_naming_its_pid_and_nothing_changes(run, root_lock):
    project, run_dir, ids = run
    shard = _shard_with_row(run_dir, ids[0])
    before = {p: p.read_bytes() for d in (run_dir, shard) for p in d.glob("*.jsonl")}
    proc, release = _hold_lock_in_child(shard, run_dir if root_lock == "shared root lock" else None)
    try:
        with pytest.raises(UserError, match=f"pid {proc.pid}"):
            drop_qids.drop_qids(run_dir, [ids[0]])
    finally:
        release.set()
        proc.join(10)
    assert {p: p.read_bytes() for p in before} == before
    assert not (run_dir / "backups").exists()
    with run_store.RunLock(run_dir):  # the refused drop let go of the locks it had taken
        pass


def test_dropped_ids_leave_shard_files_too(run):
    project, run_dir, ids = run
    shard = _shard_with_row(run_dir, ids[0])
    out = drop_qids.drop_qids(run_dir, [ids[0]])
    assert ids[0] not in factories.load_rows(shard)
    assert ids[0] not in run_store.load_completed(shard)
    assert out["rows_removed"] == 2 and out["marks_removed"] == 2


def test_a_non_utf8_id_file_is_one_line_error(run, tmp_path, capsys):
    project, run_dir, ids = run
    listing = tmp_path / "ids.bin"
    listing.write_bytes(b"\xff\xfe\x00bad\n")
    code = run_main(drop_qids_cli.main, ["--project", str(project), "--run-id", "loop", "--from-file", str(listing)])
    assert code == 2
    err = capsys.readouterr().err
    assert "not UTF-8" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
