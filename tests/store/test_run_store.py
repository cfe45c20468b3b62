"""fileio and run_store: atomic JSON, validated appends, torn tails, reconcile, shards, the run lock, run ids."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

import factories
from lme.core import fileio
from lme.core.facts import SCHEMA_VERSIONS
from lme.store import run_store
from lme.core.errors import UserError
from helpers_data import error_row, judged_row, make_item
from lme.core.records import Question

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


# --------------------------------------------------------------------------- whole files


def test_write_atomic_json_replaces_whole_file_and_leaves_no_temp(tmp_path):
    path = tmp_path / "run-meta.json"
    run_store.write_atomic_json(path, {"a": 1})
    run_store.write_atomic_json(path, {"a": 2, "b": "é"})
    assert json.loads(path.read_text(encoding="utf-8")) == {"a": 2, "b": "é"}
    assert os.listdir(tmp_path) == ["run-meta.json"]


def test_write_atomic_json_failure_keeps_old_file(tmp_path):
    path = tmp_path / "m.json"
    run_store.write_atomic_json(path, {"ok": True})
    with pytest.raises(ValueError):
        run_store.write_atomic_json(path, {"bad": float("nan")})
    assert json.loads(path.read_text()) == {"ok": True}
    assert os.listdir(tmp_path) == ["m.json"]


def test_read_json_errors_are_clear(tmp_path):
    with pytest.raises(UserError, match="file not found"):
        run_store.read_json(tmp_path / "absent.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{\n "a": }')
    with pytest.raises(UserError, match=r"bad.json: not valid JSON .* line 2 column 7"):
        run_store.read_json(bad)
    newer = tmp_path / "manifest.json"
    newer.write_text(json.dumps({"schemaVersion": "2.0.0", "n_total": 0, "items": []}))
    with pytest.raises(UserError, match="newer version of longmemeval-benchmarker"):
        run_store.read_json(newer, schema="manifest")
    wrong = tmp_path / "manifest2.json"
    wrong.write_text(json.dumps({"schemaVersion": "1.0.0", "n_total": "x", "items": []}))
    with pytest.raises(UserError, match=r"manifest2.json: invalid manifest record: field n_total"):
        run_store.read_json(wrong, schema="manifest")


@pytest.mark.parametrize("name, schema", [("run-meta.json", "run-meta"), ("metrics.json", "metrics")])
def test_a_run_file_a_newer_version_wrote_that_this_one_cannot_read_names_both_versions(tmp_path, name, schema):
    path = tmp_path / name
    path.write_text(json.dumps({"schemaVersion": "1.4.0"}))  # a newer shape: its fields are not this version's
    with pytest.raises(UserError) as info:
        run_store.read_json(path, schema=schema)
    said = str(info.value)
    assert "\n" not in said and f"{path} was written by a newer version of longmemeval-benchmarker" in said
    assert "schemaVersion 1.4.0" in said and f"reads up to {SCHEMA_VERSIONS[schema]}" in said
    assert "claude plugin update" in said


def test_a_newer_minor_this_version_can_read_is_read_and_todays_bad_file_is_still_a_bad_file(tmp_path):
    readable = tmp_path / "manifest.json"
    readable.write_text(json.dumps({"schemaVersion": "1.4.0", "n_total": 0, "items": [], "added_later": 1}))
    assert run_store.read_json(readable, schema="manifest")["n_total"] == 0
    bad = tmp_path / "metrics.json"
    bad.write_text(json.dumps({"schemaVersion": "1.0.0"}))
    with pytest.raises(UserError, match="invalid metrics record") as info:
        run_store.read_json(bad, schema="metrics")
    assert "newer version" not in str(info.value)


# --------------------------------------------------------------------------- appends


def test_append_validates_before_writing(tmp_path):
    row = judged_row("q1")
    del row["judgment"]
    with pytest.raises(UserError, match=r"item-results.jsonl \(question q1\).*field judgment"):
        factories.append_unmarked(tmp_path, row)
    assert not (tmp_path / run_store.RESULTS_FILE).exists()


def test_rows_are_one_line_each_and_last_row_wins(tmp_path):
    row = judged_row("q1")
    row["hypothesis"] = "line one\nline two"
    factories.append_unmarked(tmp_path, error_row("q1"))
    factories.append_unmarked(tmp_path, row)
    factories.append_unmarked(tmp_path, judged_row("q2", label=False))
    assert len(lines(tmp_path / run_store.RESULTS_FILE)) == 3
    results = factories.load_rows(tmp_path)
    assert results["q1"]["status"] == "judged" and results["q1"]["hypothesis"] == "line one\nline two"
    assert [r["question_id"] for r in factories.iter_rows(tmp_path)] == ["q1", "q1", "q2"]


def test_concurrent_threads_never_interleave_lines(tmp_path):
    def worker(k: int) -> None:
        for i in range(25):
            row = judged_row(f"t{k}-{i}")
            row["hypothesis"] = "x" * 5000
            factories.append_unmarked(tmp_path, row)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(factories.load_rows(tmp_path)) == 150
    assert all(json.loads(line) for line in lines(tmp_path / run_store.RESULTS_FILE))


def test_torn_tail_is_ignored_by_readers_and_cut_before_next_append(tmp_path):
    path = tmp_path / run_store.RESULTS_FILE
    good = json.dumps(judged_row("q1"))
    path.write_text(good + "\n" + good[: len(good) // 2])
    assert list(factories.load_rows(tmp_path)) == ["q1"]
    fileio.APPENDS.forget(path)  # a fresh process would repair before its first append
    factories.append_unmarked(tmp_path, judged_row("q2"))
    assert [json.loads(line)["question_id"] for line in lines(path)] == ["q1", "q2"]


def test_complete_last_row_without_newline_is_kept(tmp_path):
    path = tmp_path / run_store.RESULTS_FILE
    path.write_text(json.dumps(judged_row("q1")) + "\n" + json.dumps(judged_row("q2")))
    assert set(factories.load_rows(tmp_path)) == {"q1", "q2"}
    assert run_store.repair(path) == "newline"
    assert path.read_text().endswith("}\n")
    assert set(factories.load_rows(tmp_path)) == {"q1", "q2"}


def test_torn_first_line_is_truncated_to_empty(tmp_path):
    path = tmp_path / run_store.COMPLETED_FILE
    path.write_text('{"question_id": "q')
    assert run_store.load_completed(tmp_path) == set()
    assert run_store.repair(path) == "truncated"
    assert path.read_bytes() == b""


def test_bad_line_in_the_middle_names_file_and_line(tmp_path):
    path = tmp_path / run_store.RESULTS_FILE
    path.write_text(json.dumps(judged_row("q1")) + "\n{garbage\n" + json.dumps(judged_row("q2")) + "\n")
    with pytest.raises(UserError, match=rf"{path}:2: corrupt line"):
        factories.load_rows(tmp_path)


def test_schema_invalid_complete_line_in_the_middle_is_an_error(tmp_path):
    path = tmp_path / run_store.COMPLETED_FILE
    path.write_text('{"question_id": 5}\n{"question_id": "q2"}\n')
    with pytest.raises(UserError, match=rf"{path}:1: invalid completed record"):
        run_store.load_completed(tmp_path)


# --------------------------------------------------------------------------- reconcile and resume


def test_reconcile_marks_judged_rows_and_drops_marks_without_one(tmp_path):
    factories.append_unmarked(tmp_path, judged_row("judged-unmarked"))
    factories.append_unmarked(tmp_path, judged_row("judged-marked"))
    run_store.mark_completed(tmp_path, "judged-marked")
    factories.append_unmarked(tmp_path, judged_row("later-error"))
    factories.append_unmarked(tmp_path, error_row("later-error"))
    run_store.mark_completed(tmp_path, "later-error")
    run_store.mark_completed(tmp_path, "no-row")
    changed = run_store.reconcile(tmp_path)
    assert changed == {"marked": ["judged-unmarked"], "unmarked": ["later-error", "no-row"]}
    assert run_store.load_completed(tmp_path) == {"judged-unmarked", "judged-marked"}
    assert run_store.reconcile(tmp_path) == {"marked": [], "unmarked": []}


def test_error_rows_are_never_completed_and_stay_pending(tmp_path):
    factories.append_unmarked(tmp_path, error_row("q1"))
    run_store.reconcile(tmp_path)
    assert run_store.load_completed(tmp_path) == set()
    items = [make_item("q0"), make_item("q1"), make_item("q2")]
    assert [i["question_id"] for i in run_store.filter_pending(items, {"q0"})] == ["q1", "q2"]
    questions = [Question.from_dict(i) for i in items]
    assert [q.question_id for q in run_store.filter_pending(questions, {"q2"})] == ["q0", "q1"]


def test_shards_are_merged_by_readers(tmp_path):
    a, b = tmp_path / "shard-1of2", tmp_path / "shard-2of2"
    a.mkdir()
    b.mkdir()
    factories.append_unmarked(a, judged_row("q1"))
    run_store.mark_completed(a, "q1")
    factories.append_unmarked(b, judged_row("q2"))
    run_store.mark_completed(b, "q2")
    assert set(factories.load_rows(tmp_path)) == {"q1", "q2"}
    assert run_store.load_completed(tmp_path) == {"q1", "q2"}
    assert run_store.load_completed(tmp_path, include_shards=False) == set()


# --------------------------------------------------------------------------- the lock


def test_second_writer_is_refused_with_holder_pid(tmp_path):
    code = textwrap.dedent(
        f"""
        import sys, time
        sys.path.insert(0, {str(SCRIPTS)!r})
        from lme.store import run_store
        with run_store.RunLock({str(tmp_path)!r}):
            print("locked", flush=True)
            sys.stdin.readline()
        """
    )
    holder = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(UserError, match=rf"run {tmp_path} is being written by pid {holder.pid}; wait for it or stop it"):
            run_store.RunLock(tmp_path).acquire()
    finally:
        holder.stdin.close()
        holder.wait(timeout=10)
    with run_store.RunLock(tmp_path) as lock:  # released when the holder exits
        assert lock.holder_pid() == os.getpid()


def test_stale_lock_file_of_a_dead_process_does_not_block(tmp_path):
    (tmp_path / run_store.LOCK_FILE).write_text("999999\n")
    with run_store.RunLock(tmp_path) as lock:
        assert lock.holder_pid() == os.getpid()  # taken at once, and the file now names this process


# --------------------------------------------------------------------------- ids and dirs


@pytest.mark.parametrize("bad", ["../x", "a/b", ".hidden", "a\\b", "", "x" * 81, "a..b", "sp ace"])
def test_unsafe_run_ids_are_refused(bad, tmp_path):
    with pytest.raises(UserError, match="invalid run id"):
        run_store.validate_run_id(bad)
    with pytest.raises(UserError):
        run_store.run_dir_for(tmp_path, bad)


def test_new_run_ids_are_valid_and_stay_inside_runs_dir(tmp_path):
    run_id = run_store.new_run_id()
    assert run_store.validate_run_id(run_id) == run_id
    assert run_store.run_dir_for(tmp_path, run_id) == (tmp_path / run_id).resolve()


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="needs POSIX permissions and a non-root user")
def test_unwritable_runs_dir_is_named(tmp_path):
    locked = tmp_path / "ro"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(UserError, match=f"{locked}"):
            run_store.ensure_writable_dir(locked / "runs")
    finally:
        locked.chmod(0o700)


def test_runs_dir_that_is_a_file_is_named(tmp_path):
    f = tmp_path / "runs"
    f.write_text("")
    with pytest.raises(UserError, match=f"{f}"):
        run_store.ensure_writable_dir(f)


def test_runs_dir_that_refuses_writes_is_named(tmp_path, monkeypatch):
    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(fileio, "_mkstemp", refuse)
    with pytest.raises(UserError, match=rf"directory {tmp_path} is not writable \(Permission denied\)"):
        run_store.ensure_writable_dir(tmp_path)


def test_unreadable_final_line_with_newline_is_skipped_then_cut(tmp_path):
    path = tmp_path / run_store.RESULTS_FILE
    path.write_bytes(json.dumps(judged_row("q1")).encode() + b"\n" + b"\x00" * 50 + b"\n")
    assert list(factories.load_rows(tmp_path)) == ["q1"]
    fileio.APPENDS.forget(path)
    factories.append_unmarked(tmp_path, judged_row("q2"))
    assert list(factories.load_rows(tmp_path)) == ["q1", "q2"]


def test_repair_leaves_a_clean_file_alone(tmp_path):
    path = tmp_path / run_store.RESULTS_FILE
    data = (json.dumps(judged_row("q1")) + "\n").encode()
    path.write_bytes(data)
    assert run_store.repair(path) is None
    assert path.read_bytes() == data


def test_atomically_written_files_get_the_mode_a_plain_open_would_give(tmp_path):
    code = textwrap.dedent(f"""
        import os, sys
        os.umask(0o022)
        sys.path.insert(0, {str(SCRIPTS)!r})
        from lme.core import fileio
        from pathlib import Path
        fileio.write_atomic_json(Path({str(tmp_path)!r}) / "x.json", {{"a": 1}})
        print(oct(os.stat({str(tmp_path / "x.json")!r}).st_mode & 0o777))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "0o644"  # mkstemp alone would give 0o600
