"""Round counter, snapshots and the loop's history log."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time

import pytest

from lme.report import charts
from lme.loop import state as loop_state
from lme.loop import steps as loop_steps
from lme.cli import rounds
from lme.store import run_store
from lme.core.errors import UserError, run_main
from loop_testing import git, item_ids, make_loop_project, make_row, measure_noise_floor, write_run


def test_init_creates_counter_at_zero_and_history_once(tmp_path):
    assert loop_state.init(tmp_path) == [".max_effort_round", "history_max_effort.md"]
    assert loop_state.current(tmp_path) == 0
    assert loop_state.init(tmp_path) == []


def test_bump_increments_and_returns_the_new_round(tmp_path):
    loop_state.init(tmp_path)
    assert [loop_state.bump(tmp_path) for _ in range(3)] == [1, 2, 3]
    assert (tmp_path / ".max_effort_round").read_text() == "3\n"


def test_concurrent_bumps_never_lose_a_round(tmp_path):
    loop_state.init(tmp_path)
    got: list[int] = []
    threads = [threading.Thread(target=lambda: got.append(loop_state.bump(tmp_path))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got) == list(range(1, 9))
    assert loop_state.current(tmp_path) == 8


def test_a_counter_lock_left_behind_by_a_crash_does_not_block_the_next_bump(tmp_path):
    loop_state.init(tmp_path)
    (tmp_path / loop_state.COUNTER_LOCK).write_text("999999\n")  # what a process killed mid-bump leaves
    t0 = time.monotonic()
    assert loop_state.bump(tmp_path) == 1
    assert time.monotonic() - t0 < 5  # taken at once: an OS lock dies with its holder


def test_missing_or_garbled_counter_is_a_user_error(tmp_path, capsys):
    assert run_main(rounds.main, ["--project", str(tmp_path), "current"]) == 2
    assert "check_setup.sh" in capsys.readouterr().err
    (tmp_path / ".max_effort_round").write_text("three\n")
    with pytest.raises(UserError, match="not a round number"):
        loop_state.current(tmp_path)


def _run(tmp_path, run_id="loop", labels=None):
    types = item_ids(12)
    labels = labels or {q: i % 3 != 0 for i, q in enumerate(types)}
    return types, write_run(tmp_path, run_id, types, labels)


def test_snapshot_copies_the_run_files_into_v_round(tmp_path):
    loop_state.init(tmp_path)
    loop_state.bump(tmp_path)
    _, run_dir = _run(tmp_path)
    dest = loop_steps.snapshot(tmp_path, "loop")
    assert dest == tmp_path / ".longmemeval-benchmarks" / "snapshots" / "v1"
    for name in run_store.SNAPSHOT_FILES:
        assert (dest / name).read_bytes() == (run_dir / name).read_bytes()
    assert json.loads((dest / "snapshot.json").read_text())["run_id"] == "loop"


def test_snapshot_refuses_to_overwrite(tmp_path):
    loop_state.init(tmp_path)
    _run(tmp_path)
    loop_steps.snapshot(tmp_path, "loop")
    before = (tmp_path / ".longmemeval-benchmarks/snapshots/v0/item-results.jsonl").read_bytes()
    with pytest.raises(UserError, match="already exists"):
        loop_steps.snapshot(tmp_path, "loop")
    assert (tmp_path / ".longmemeval-benchmarks/snapshots/v0/item-results.jsonl").read_bytes() == before


def test_snapshot_of_unknown_run_is_refused(tmp_path):
    loop_state.init(tmp_path)
    with pytest.raises(UserError, match="no run"):
        loop_steps.snapshot(tmp_path, "nope")


def test_log_appends_a_row_to_history_max_effort_never_history_md(tmp_path, capsys):
    loop_state.init(tmp_path)
    loop_state.bump(tmp_path)
    _run(tmp_path)  # 8 of 12 right
    assert rounds.main(["--project", str(tmp_path), "log", "--run-id", "loop", "--note", "baseline | first"]) == 0
    row = capsys.readouterr().out.strip()
    assert row.startswith("| v1 | ") and "| 8/12 | 0.6667 |" in row and row.endswith("| baseline / first |")
    assert (tmp_path / "history_max_effort.md").read_text().splitlines()[-1] == row
    assert not (tmp_path / "history.md").exists()


def test_log_in_a_project_without_a_counter_creates_it_and_logs_round_zero(tmp_path):
    _run(tmp_path)
    row = loop_steps.log(tmp_path, "loop", "first look")
    assert row.startswith("| v0 | ") and (tmp_path / ".max_effort_round").read_text() == "0\n"


def test_blocked_billing_is_logged_for_a_human(tmp_path):
    loop_state.init(tmp_path)
    line = loop_state.blocked(tmp_path, "billing")
    assert line.startswith("| BLOCKED | ") and "API billing (round v0)" in line
    assert line in (tmp_path / "history_max_effort.md").read_text().splitlines()


def test_a_blocked_row_keeps_later_rounds_inside_the_history_table_and_charts_skip_it(tmp_path):
    _run(tmp_path)
    loop_state.init(tmp_path)
    loop_steps.log(tmp_path, "loop", "baseline")
    loop_state.blocked(tmp_path, "billing")
    loop_state.bump(tmp_path)
    loop_steps.log(tmp_path, "loop", "after the billing fix")
    history = tmp_path / "history_max_effort.md"
    lines = history.read_text().splitlines()
    table = lines[lines.index("| round | date | correct/n | overall | task-avg | abstention | note |"):]
    # one unbroken Markdown table: every line from the header on is a row with the header's 7 cells
    assert all(line.startswith("| ") or line.startswith("|---") for line in table)
    assert {line.count("|") for line in table} == {8}
    assert table[-1].startswith("| v1 | ") and table[-2].startswith("| BLOCKED | ")
    assert [r["label"] for r in charts.load_history(history)] == ["v0", "v1"]


def test_a_blocked_reason_cannot_break_the_row(tmp_path):
    loop_state.init(tmp_path)
    row = loop_state.blocked(tmp_path, "quota | exceeded\nagain")
    assert row.count("|") == 8 and "\n" not in row


def test_round_figures_read_a_metrics_json_and_a_decisions_kept_figures_alike():
    """The strict figures from metrics.json's blocks, or from the ``retest_figures`` a decision kept: one record,
    no guessing among keys."""
    block = {"n": 2, "judged": 2, "correct": 1, "accuracy_strict": 0.5, "accuracy_judged": 0.5,
             "wilson_strict": [0.1, 0.9], "wilson_judged": [0.1, 0.9]}
    metrics = {"correct": 1, "n_total": 2, "overall": {**block}, "abstention": {**block, "n": 0},
               "task_averaged": {"accuracy_strict": 0.5, "accuracy_judged": 0.5},
               "per_type": {"multi-session": block, "temporal-reasoning": {**block, "n": 0}}}
    figures = loop_state.RoundFigures.of_metrics(metrics)
    assert (figures.correct, figures.n_total, figures.overall, figures.task_averaged) == (1, 2, 0.5, 0.5)
    assert list(figures.per_type) == ["multi-session"] and figures.per_type["multi-session"].accuracy == 0.5
    assert loop_state.RoundFigures.from_dict(figures.to_dict()) == figures
    assert loop_state.history_row(3, figures, "note", date="2026-12-01") == (
        "| v3 | 2026-12-01 | 1/2 | 0.5000 | 0.5000 | 0.5000 | note |")


# --------------------------------------------------------------------------- the round's steps, one command each


@pytest.fixture
def loop_project(tmp_path):
    from lme.core.config_defaults import default_config

    project = make_loop_project(tmp_path)
    config = project / ".longmemeval-benchmarks" / "config.json"  # the loop improves the project's memory_system/
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(json.dumps({**default_config(), "loop": {"target": "memory_system"}}))
    types = item_ids(12)
    labels = {q: i % 3 != 0 for i, q in enumerate(types)}
    write_run(project, "loop", types, labels)
    measure_noise_floor(project, "loop")
    return project, types, labels


def test_begin_refuses_a_round_until_the_noise_floor_of_the_stack_is_measured(loop_project, capsys):
    project, _, _ = loop_project
    (project / ".longmemeval-benchmarks" / "noise-floor.json").unlink()
    assert run_main(rounds.main, ["--project", str(project), "begin", "--run-id", "loop"]) == 2
    err = capsys.readouterr().err
    assert "no noise floor for this stack" in err and "--noise-floor" in err
    assert not loop_state.snapshot_dir(project, 1).exists()
    record = measure_noise_floor(project, "loop")
    record["stack_key"] = "another-stack"  # measured with other models: stale
    (project / ".longmemeval-benchmarks" / "noise-floor.json").write_text(json.dumps(record))
    with pytest.raises(UserError, match="models changed"):
        loop_steps.begin(project, "loop")
    measure_noise_floor(project, "loop")
    assert loop_steps.begin(project, "loop") == 1


def _subjects(project, ref="HEAD"):
    return git(["log", "--format=%s", ref], project).stdout.splitlines()


def _write_fix(project, proposal="Prefer the latest session\n\nFiles: memory_system/policy.py\n"):
    (project / ".longmemeval-benchmarks" / "proposal.md").write_text(proposal)
    (project / "memory_system").mkdir(exist_ok=True)
    (project / "memory_system" / "policy.py").write_text("LATEST = True\n")


def test_begin_bumps_snapshots_logs_commits_and_pushes_and_a_rerun_finishes_the_same_round(loop_project):
    project, _, _ = loop_project
    assert loop_steps.begin(project, "loop") == 1
    assert loop_state.snapshot_dir(project, 1).is_dir()
    assert _subjects(project)[0] == "round v1: baseline"
    assert _subjects(project, "origin/longmemeval-iter")[0] == "round v1: baseline"
    committed = git(["show", "--name-only", "--format=", "HEAD"], project).stdout.split()
    snapshot = sorted(p for p in committed if "/snapshots/" in p)
    assert snapshot == [".longmemeval-benchmarks/snapshots/v1/labels.jsonl",
                        ".longmemeval-benchmarks/snapshots/v1/snapshot.json"]  # ids, labels, hashes: not the rows
    labels = [json.loads(line) for line in (loop_state.snapshot_dir(project, 1) / "labels.jsonl").read_text().splitlines()]
    assert {"question_id", "label", "hypothesis_sha256"} <= set(labels[0]) and "hypothesis" not in labels[0]
    assert loop_steps.begin(project, "loop") == 1  # an interrupted or repeated begin does not start round 2
    rows = [line for line in (project / "history_max_effort.md").read_text().splitlines() if line.startswith("| v1 |")]
    assert len(rows) == 1 and "baseline of round v1" in rows[0]
    assert loop_state.current(project) == 1


def test_commit_fix_commits_the_change_as_the_rounds_fix_once(loop_project, capsys):
    project, _, _ = loop_project
    loop_state.init(project)
    _write_fix(project)
    with pytest.raises(UserError, match="has not begun"):
        loop_steps.commit_fix(project)
    loop_steps.begin(project, "loop")
    assert run_main(rounds.main, ["--project", str(project), "commit-fix"]) == 0
    sha = capsys.readouterr().out.strip()
    assert loop_state.fix_commit(project, 1) == sha
    message = git(["log", "-1", "--format=%B"], project).stdout
    assert message.startswith("fix(v1): Prefer the latest session\n\nFiles: memory_system/policy.py")
    assert git(["show", "--name-only", "--format=", "HEAD"], project).stdout.split() == ["memory_system/policy.py"]
    (project / "memory_system" / "policy.py").write_text("LATEST = False\n")
    with pytest.raises(UserError, match="one fix per round"):
        loop_steps.commit_fix(project)
    with pytest.raises(UserError, match="already has its fix commit"):
        loop_steps.begin(project, "loop")


def test_commit_fix_commits_the_memory_systems_files_only_and_names_the_rest(loop_project, capsys):
    project, _, _ = loop_project
    loop_steps.begin(project, "loop")
    _write_fix(project)
    (project / ".gitignore").write_text((project / ".gitignore").read_text() + "# setup's entries\n")
    (project / "notes.txt").write_text("the user's own notes\n")
    capsys.readouterr()
    assert run_main(rounds.main, ["--project", str(project), "commit-fix"]) == 0
    err = capsys.readouterr().err
    assert "committing: memory_system/policy.py" in err
    assert "left alone (not the memory system's files, memory_system/): .gitignore, notes.txt" in err
    assert git(["show", "--name-only", "--format=", "HEAD"], project).stdout.split() == ["memory_system/policy.py"]
    status = git(["status", "--porcelain"], project).stdout
    assert " M .gitignore" in status and "?? notes.txt" in status  # untouched, uncommitted


def test_commit_fix_with_only_other_files_changed_or_a_built_in_target_commits_nothing(loop_project):
    project, _, _ = loop_project
    loop_steps.begin(project, "loop")
    (project / ".longmemeval-benchmarks" / "proposal.md").write_text("A fix\n")
    (project / "notes.txt").write_text("the user's own notes\n")
    head = git(["rev-parse", "HEAD"], project).stdout
    with pytest.raises(UserError, match=r"no changed files in the memory system \(memory_system/\).*left alone: notes.txt"):
        loop_steps.commit_fix(project)
    config = project / ".longmemeval-benchmarks" / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "loop": {"target": "memory-ref"}}))
    _write_fix(project)
    with pytest.raises(UserError, match="target memory-ref is built in .*loop_target.py use-copy"):
        loop_steps.commit_fix(project)
    assert git(["rev-parse", "HEAD"], project).stdout == head


def test_commit_fix_refuses_an_empty_proposal_or_no_change(loop_project):
    project, _, _ = loop_project
    loop_steps.begin(project, "loop")
    (project / ".longmemeval-benchmarks" / "proposal.md").write_text("\n")
    with pytest.raises(UserError, match="is empty"):
        loop_steps.commit_fix(project)
    (project / ".longmemeval-benchmarks" / "proposal.md").write_text("A fix\n")
    with pytest.raises(UserError, match="no changed files in the memory system"):
        loop_steps.commit_fix(project)


def test_finish_reverts_a_harmful_fix_commits_pushes_and_never_decides_twice(loop_project):
    project, types, labels = loop_project
    loop_steps.begin(project, "loop")
    with pytest.raises(UserError, match="no 'fix\\(v1\\):' commit"):
        loop_steps.finish(project, "loop")
    _write_fix(project)
    fix = loop_steps.commit_fix(project)
    right = [q for q, ok in labels.items() if ok][:2]
    write_run(project, "loop", types, {q: False for q in right})  # the re-test: two regressions, net -2
    summary = loop_steps.finish(project, "loop")
    assert summary.startswith("REVERT: net -2")
    subjects = _subjects(project)
    assert subjects[0] == f"round v1: {summary}" and subjects[1].startswith('Revert "fix(v1): Prefer the latest')
    assert _subjects(project, "origin/longmemeval-iter") == subjects
    assert not (project / "memory_system" / "policy.py").exists()
    assert loop_steps.finish(project, "loop") == summary  # run again: committed and pushed, not decided again
    decisions = [json.loads(line) for line in
                 (project / ".longmemeval-benchmarks" / "decisions.jsonl").read_text().splitlines()]
    assert [d["applied"] for d in decisions] == [False, True]  # the decision, then the same one applied
    assert {d["fix_commit"] for d in decisions} == {fix} and decisions[1]["revert_commit"]


def test_status_names_the_step_to_continue_at(loop_project, capsys):
    project, types, labels = loop_project
    loop_state.init(project)

    def step():
        return loop_state.status(project)[-1]

    assert step().startswith("next: step 1 ")
    loop_state.bump(project)  # begin interrupted right after the bump
    assert step().startswith("next: step 4 ")
    loop_steps.begin(project, "loop")
    assert step().startswith("next: step 5 ")
    _write_fix(project)
    loop_steps.commit_fix(project)
    assert step().startswith("next: step 7 ")
    loop_steps.finish(project, "loop")
    assert step().startswith("next: step 1 ")
    (project / ".longmemeval-benchmarks" / "confirmation.json").write_text(
        json.dumps({"status": "pending", "confirm_run_id": "loop-confirm"}))
    assert step().startswith("next: steps 2-3 ")
    assert run_main(rounds.main, ["--project", str(project), "status"]) == 0
    out = capsys.readouterr().out
    assert "round: v1" in out and "decision for v1: " in out and "confirmation: pending (run loop-confirm)" in out


def test_status_fails_with_the_fix_when_the_loop_was_never_set_up(tmp_path, capsys):
    assert run_main(rounds.main, ["--project", str(tmp_path), "status"]) == 2
    assert "check_setup.sh" in capsys.readouterr().err


def _ready_to_finish(root):
    """A loop project whose round v1 has its fix committed and its re-test run written (two regressions: the fix is
    reverted), i.e. just before ``rounds.py finish``."""
    from lme.core.config_defaults import default_config

    project = make_loop_project(root)
    config = project / ".longmemeval-benchmarks" / "config.json"  # the loop improves the project's memory_system/
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(json.dumps({**default_config(), "loop": {"target": "memory_system"}}))
    types = item_ids(12)
    labels = {q: i % 3 != 0 for i, q in enumerate(types)}
    write_run(project, "loop", types, labels)
    measure_noise_floor(project, "loop")
    loop_steps.begin(project, "loop")
    _write_fix(project)
    loop_steps.commit_fix(project)
    write_run(project, "loop", types, {q: False for q in [q for q, ok in labels.items() if ok][:2]})
    return project


def _copy_of(root, dest):
    shutil.copytree(root, dest, symlinks=True)
    git(["remote", "set-url", "origin", str(dest / "remote.git")], dest / "project")
    return dest / "project"


def _finish_killed_after(project, writes: int) -> bool:
    """Run ``finish`` in a forked child that kill -9s itself right after its ``writes``-th durable write (an fsync,
    or a git command: revert, commit, push). True when it was killed, False when it ended before that many."""
    pid = os.fork()
    if pid == 0:  # the child: count, and die where told
        done = 0
        real_fsync, real_run = os.fsync, subprocess.run

        def after_a_write():
            nonlocal done
            done += 1
            if done == writes:
                os.kill(os.getpid(), signal.SIGKILL)

        def fsync(fd):
            real_fsync(fd)
            after_a_write()

        def run(args, *a, **k):
            result = real_run(args, *a, **k)
            if list(args)[:1] == ["git"] and len(args) > 1 and args[1] in ("revert", "commit", "push"):
                after_a_write()
            return result

        os.fsync, subprocess.run = fsync, run
        try:
            with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
                loop_steps.finish(project, "loop")
        except BaseException:  # noqa: BLE001 - the parent checks the state; the child must never return
            os._exit(3)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        assert os.WTERMSIG(status) == signal.SIGKILL
        return True
    assert os.WEXITSTATUS(status) == 0, "finish failed in the child before the kill"
    return False


def _no_shas(text):
    return re.sub(r"\b[0-9a-f]{40}\b", "<sha>", text)  # a revert made at another second has another sha


def _outcome(project):
    history = (project / "history_max_effort.md").read_text().splitlines()
    records = [json.loads(line) for line in (project / ".longmemeval-benchmarks/history.jsonl").read_text().splitlines()]
    decisions = [json.loads(line) for line in
                 (project / ".longmemeval-benchmarks/decisions.jsonl").read_text().splitlines()]
    return {
        "rows": sorted(" | ".join(line.split(" | ")[::6]) for line in history if line.startswith("| v1 |")),
        "records": sorted(r["step"] for r in records if r["round"] == 1),
        "applied": [d["applied"] for d in decisions if d.get("applied")],
        "subjects": [_no_shas(s) for s in _subjects(project)],
        "pushed": [_no_shas(s) for s in _subjects(project, "origin/longmemeval-iter")],
        "labels": {q: r.label for q, r in run_store.load_results(project / ".longmemeval-benchmarks/runs/loop").items()},
    }


@pytest.mark.kill
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_finish_killed_at_any_point_between_its_writes_then_run_again_ends_as_if_never_killed(tmp_path):
    """Issue 25: a crash inside ``rounds.py finish`` between two history rows wrote the re-test row twice on the
    re-run. Here it is killed (-9) after each of its durable writes in turn, then run again."""
    prepared = _ready_to_finish(tmp_path / "prepared").parent
    clean = _copy_of(prepared, tmp_path / "clean")
    summary = loop_steps.finish(clean, "loop")
    expected = _outcome(clean)
    assert expected["rows"] == sorted(["| v1 | baseline of round v1 |", "| v1 | " + next(
        line for line in (clean / "history_max_effort.md").read_text().splitlines() if "| re-test" in line
    ).split(" | ")[-1], "| v1 | decision: revert |", "| v1 | " + next(
        line for line in (clean / "history_max_effort.md").read_text().splitlines() if "| revert of" in line
    ).split(" | ")[-1]])
    points = 0
    for writes in range(1, 200):
        project = _copy_of(prepared, tmp_path / f"killed-{writes}")
        if not _finish_killed_after(project, writes):
            break
        points += 1
        assert _no_shas(loop_steps.finish(project, "loop")) == _no_shas(summary), f"killed after write {writes}"
        assert _outcome(project) == expected, f"killed after write {writes}"
    assert points >= 10  # the pre-record, the revert, the restore, the rescore, the applied record, six rows, commit


def test_a_round_over_rows_an_older_version_flagged_official_finishes_and_the_next_begins(loop_project):
    """Issue 38, 3: the baseline's rows (an older version's) say ``official: true`` although their judge was called
    at the fake server; the re-test's rows (today's) at the same server say ``official: false``. The scorecard calls
    both not official, so finish decides (no "different judges") and the next round begins: no wedge, no bump."""
    project, types, labels = loop_project
    endpoints = {"openai": "http://127.0.0.1:8123/v1"}

    def judged_at_the_fake_server():
        path = project / ".longmemeval-benchmarks" / "runs" / "loop" / "run-meta.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), "endpoints": endpoints}))

    judged_at_the_fake_server()
    measure_noise_floor(project, "loop")
    assert loop_steps.begin(project, "loop") == 1
    _write_fix(project)
    loop_steps.commit_fix(project)
    today = {"official": False, "endpoint_host": "127.0.0.1:8123", "requested_model": "gpt-4o-2024-08-06",
             "request_shape": {"family": "upstream", "max_tokens": 10, "temperature": 0, "n": 1}}
    wrong = [q for q, ok in labels.items() if not ok][:2]
    write_run(project, "loop", types, {q: True for q in wrong},
              rows={q: make_row(q, types[q], True, judgment=today) for q in wrong})
    judged_at_the_fake_server()
    assert loop_steps.finish(project, "loop").startswith("KEEP")
    assert loop_steps.begin(project, "loop") == 2
