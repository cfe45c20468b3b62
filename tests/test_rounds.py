"""Round counter, snapshots and the loop's history log."""

from __future__ import annotations

import json
import threading

import pytest

import rounds
from errors import UserError, run_main
from loop_testing import item_ids, write_run


def test_init_creates_counter_at_zero_and_history_once(tmp_path):
    assert rounds.init(tmp_path) == [".max_effort_round", "history_max_effort.md"]
    assert rounds.current(tmp_path) == 0
    assert rounds.init(tmp_path) == []


def test_bump_increments_and_returns_the_new_round(tmp_path):
    rounds.init(tmp_path)
    assert [rounds.bump(tmp_path) for _ in range(3)] == [1, 2, 3]
    assert (tmp_path / ".max_effort_round").read_text() == "3\n"


def test_concurrent_bumps_never_lose_a_round(tmp_path):
    rounds.init(tmp_path)
    got: list[int] = []
    threads = [threading.Thread(target=lambda: got.append(rounds.bump(tmp_path))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got) == list(range(1, 9))
    assert rounds.current(tmp_path) == 8


def test_missing_or_garbled_counter_is_a_user_error(tmp_path, capsys):
    assert run_main(rounds.main, ["--project", str(tmp_path), "current"]) == 2
    assert "check_setup.sh" in capsys.readouterr().err
    (tmp_path / ".max_effort_round").write_text("three\n")
    with pytest.raises(UserError, match="not a round number"):
        rounds.current(tmp_path)


def _run(tmp_path, run_id="loop", labels=None):
    types = item_ids(12)
    labels = labels or {q: i % 3 != 0 for i, q in enumerate(types)}
    return types, write_run(tmp_path, run_id, types, labels)


def test_snapshot_copies_the_run_files_into_v_round(tmp_path):
    rounds.init(tmp_path)
    rounds.bump(tmp_path)
    _, run_dir = _run(tmp_path)
    dest = rounds.snapshot(tmp_path, "loop")
    assert dest == tmp_path / ".longmemeval-benchmarks" / "snapshots" / "v1"
    for name in rounds.SNAPSHOT_FILES:
        assert (dest / name).read_bytes() == (run_dir / name).read_bytes()
    assert json.loads((dest / "snapshot.json").read_text())["run_id"] == "loop"


def test_snapshot_refuses_to_overwrite(tmp_path):
    rounds.init(tmp_path)
    _run(tmp_path)
    rounds.snapshot(tmp_path, "loop")
    before = (tmp_path / ".longmemeval-benchmarks/snapshots/v0/item-results.jsonl").read_bytes()
    with pytest.raises(UserError, match="already exists"):
        rounds.snapshot(tmp_path, "loop")
    assert (tmp_path / ".longmemeval-benchmarks/snapshots/v0/item-results.jsonl").read_bytes() == before


def test_snapshot_of_unknown_run_is_refused(tmp_path):
    rounds.init(tmp_path)
    with pytest.raises(UserError, match="no run"):
        rounds.snapshot(tmp_path, "nope")


def test_log_appends_a_row_to_history_max_effort_never_history_md(tmp_path, capsys):
    rounds.init(tmp_path)
    rounds.bump(tmp_path)
    _run(tmp_path)  # 8 of 12 right
    assert rounds.main(["--project", str(tmp_path), "log", "--run-id", "loop", "--note", "baseline | first"]) == 0
    row = capsys.readouterr().out.strip()
    assert row.startswith("| v1 | ") and "| 8/12 | 0.6667 |" in row and row.endswith("| baseline / first |")
    assert (tmp_path / "history_max_effort.md").read_text().splitlines()[-1] == row
    assert not (tmp_path / "history.md").exists()


def test_log_in_a_project_without_a_counter_creates_it_and_logs_round_zero(tmp_path):
    _run(tmp_path)
    row = rounds.log(tmp_path, "loop", "first look")
    assert row.startswith("| v0 | ") and (tmp_path / ".max_effort_round").read_text() == "0\n"


def test_blocked_billing_is_logged_for_a_human(tmp_path):
    rounds.init(tmp_path)
    line = rounds.blocked(tmp_path, "billing")
    assert line.startswith("BLOCKED: API billing")
    assert "BLOCKED: API billing" in (tmp_path / "history_max_effort.md").read_text()


def test_figure_reads_numbers_and_metric_blocks():
    assert rounds.figure(0.5) == 0.5
    assert rounds.figure({"accuracy_strict": 0.9, "accuracy_judged": 0.95}) == 0.9
    assert rounds.figure(None) is None and rounds.figure(True) is None
