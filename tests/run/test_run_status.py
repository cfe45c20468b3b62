"""run_status.py: one line per run, the exit status of its state, a dead writer is never "running"."""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import sys
import time

import pytest

from lme.run import background
from lme.core import clock, process_life
from lme.store import run_store
from lme.core import command_names
from lme.cli import run_benchmark
from lme.run import status as run_status
from lme.cli import run_status as run_status_cli
from run_project import SAMPLE, make_project, run_dir

N_SAMPLE = len(json.loads(SAMPLE.read_text()))


def offline_run(project, run_id, *args):
    assert run_benchmark.main(["--project", str(project), "--progress", "quiet", "--no-scorecard", "--offline",
                               "--run-id", run_id, *args]) == 0


def status(project, *args):
    code = run_status_cli.main(["--project", str(project), *args])
    return code


def set_meta(project, run_id, **fields):
    path = run_dir(project, run_id) / "run-meta.json"
    meta = json.loads(path.read_text())
    meta.update(fields)
    run_store.write_atomic_json(path, meta)


def test_a_completed_run_is_one_line_with_its_counts_and_exit_0(tmp_path, capsys):
    project = make_project(tmp_path / "p")
    offline_run(project, "done")
    assert status(project, "--run-id", "done") == 0
    line = capsys.readouterr().out.splitlines()[0]
    assert line.startswith("completed") and f"{N_SAMPLE}/{N_SAMPLE} done ({N_SAMPLE} judged, 0 errors)" in line
    assert "acc " in line and "$0.0000" in line and line.endswith("run done")


def test_json_has_the_same_facts(tmp_path, capsys):
    project = make_project(tmp_path / "p")
    offline_run(project, "j")
    capsys.readouterr()
    assert status(project, "--run-id", "j", "--json") == 0
    facts = json.loads(capsys.readouterr().out)
    assert (facts["state"], facts["done"], facts["total"], facts["judged"], facts["errors"]) == (
        "completed", N_SAMPLE, N_SAMPLE, N_SAMPLE, 0)
    assert facts["exit_status"] == 0 and facts["spent_usd"] == 0.0 and 0 <= facts["accuracy"] <= 1
    assert facts["items_per_min"] > 0 and facts["resume"] == []


@pytest.mark.parametrize("meta_status, exit_status, expected", [
    ({"status": "failed", "exit_status": 1, "error": "2 item error(s)"}, 1, "failed"),
    ({"status": "failed", "exit_status": 3, "error": "blocked on API billing: quota"}, 3, "blocked"),
    ({"status": "interrupted", "exit_status": 130}, 130, "interrupted"),
    ({"status": "paused", "exit_status": 6, "error": "cost cap reached"}, 6, "paused"),
    ({"status": "paused", "exit_status": 7, "error": "batch b1 cancelled"}, 7, "paused"),  # run_benchmark.py's 7
    ({"status": "paused", "exit_status": 8, "error": "memsys.py changed"}, 8, "paused"),  # and its 8
    ({"status": "running", "finished_at": None}, 1, "dead"),
])
def test_each_state_has_its_exit_status_and_the_resumable_ones_print_the_resume(tmp_path, capsys, meta_status,
                                                                                exit_status, expected):
    project = make_project(tmp_path / "p")
    offline_run(project, "s", "--max", "5")
    set_meta(project, "s", **meta_status)
    capsys.readouterr()
    assert status(project, "--run-id", "s") == exit_status
    out = capsys.readouterr().out
    assert out.startswith(expected)
    assert f"in Claude Code: {command_names.RUN} --run-id s" in out
    assert "resume with: " in out and "--run-id s" in out
    if expected == "dead":
        assert "no process writes the run" in out
    if expected == "paused":
        assert ("--max-cost <a higher USD>" in out) == (exit_status == 6)  # 7, 8: resume as it is


def test_a_max_run_is_complete_at_its_items_and_an_older_cut_run_says_how_to_finish_it(tmp_path, capsys):
    project = make_project(tmp_path / "p")
    offline_run(project, "cut", "--max", "5")
    capsys.readouterr()
    assert status(project, "--run-id", "cut") == 0
    out = capsys.readouterr().out
    assert out.startswith("completed  5/5 done") and "resume" not in out and "finish" not in out
    # a run made before a run's items were fixed at its start listed the whole dataset, --max cut each invocation
    items = [{"question_id": it["question_id"], "question_type": it["question_type"]}
             for it in json.loads(SAMPLE.read_text())]
    (run_dir(project, "cut") / "manifest.json").write_text(json.dumps(
        {"schemaVersion": "1.0.0", "n_total": N_SAMPLE, "items": items}))
    assert status(project, "--run-id", "cut") == 0
    out = capsys.readouterr().out
    assert f"{N_SAMPLE - 5} items not run yet; finish with: " in out
    command = out.split("finish with: ", 1)[1].splitlines()[0]
    assert subprocess.run(shlex.split(command) + ["--progress", "quiet", "--no-scorecard"],
                          capture_output=True, text=True).returncode == 0
    assert len(run_store.load_completed(run_dir(project, "cut"))) == N_SAMPLE


def test_a_live_worker_is_running_and_a_reused_pid_is_not(tmp_path, capsys):
    project = make_project(tmp_path / "p")
    offline_run(project, "w", "--max", "2")
    root = run_dir(project, "w")
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        info = {"pid": sleeper.pid, "started_at": clock.utc_now(), "hostname": socket.gethostname(),
                "log": str(root / "run.log"), "boot_id": process_life.boot_id(),
                "proc_start": process_life.proc_start(sleeper.pid)}
        run_store.write_atomic_json(root / "worker.json", info)
        set_meta(project, "w", status="running", finished_at=None)
        assert status(project, "--run-id", "w") == 4
        assert capsys.readouterr().out.startswith("running")
        if info["proc_start"] is not None:  # Linux: a pid now held by another process is not the worker
            run_store.write_atomic_json(root / "worker.json", {**info, "proc_start": "1"})
            assert status(project, "--run-id", "w") == 1
            assert capsys.readouterr().out.startswith("dead")
        run_store.write_atomic_json(root / "worker.json", {**info, "boot_id": "another-boot"})
        assert status(project, "--run-id", "w") == 1  # written before the machine restarted
    finally:
        sleeper.kill()
        sleeper.wait()
    run_store.write_atomic_json(root / "worker.json", info)
    assert status(project, "--run-id", "w") == 1 and "dead" in capsys.readouterr().out


def test_a_worker_that_died_before_running_is_dead_with_its_last_log_line(tmp_path, capsys):
    project = make_project(tmp_path / "p")
    root = run_dir(project, "early")
    root.mkdir(parents=True)
    (root / "run.log").write_text("=== started\nerror: something the worker refused\n")
    run_store.write_atomic_json(root / "worker.json", {"pid": 2 ** 22 + 12345, "started_at": clock.utc_now(),
                                                           "hostname": socket.gethostname(),
                                                           "log": str(root / "run.log")})
    assert status(project, "--run-id", "early") == 1
    out = capsys.readouterr().out
    assert out.startswith("dead") and "error: something the worker refused" in out


def test_wait_on_a_finished_run_returns_at_once(tmp_path, capsys):
    project = make_project(tmp_path / "p")
    offline_run(project, "f")
    t0 = time.monotonic()
    assert status(project, "--run-id", "f", "--wait", "30") == 0
    assert time.monotonic() - t0 < 5


def test_latest_is_the_most_recently_started_run(tmp_path, capsys):
    project = make_project(tmp_path / "p")
    offline_run(project, "older", "--max", "1")
    time.sleep(1.1)  # run-meta times have one-second resolution
    offline_run(project, "newer", "--max", "1")
    capsys.readouterr()
    assert status(project, "--latest", "--json") == 0
    assert json.loads(capsys.readouterr().out)["run_id"] == "newer"


@pytest.mark.parametrize("args, needle", [
    (["--run-id", "nope"], "no run nope under"),
    (["--run-id", "../x"], "run id"),
    (["--run-id", "x", "--wait", "-1"], "--wait -1 is negative"),
])
def test_mistakes_are_one_line_and_exit_2(tmp_path, capsys, args, needle):
    project = make_project(tmp_path / "p")
    from lme.core.errors import run_main

    assert run_main(run_status_cli.main, ["--project", str(project), *args]) == 2
    err = capsys.readouterr().err
    assert needle in err and len(err.strip().splitlines()) == 1


def test_the_script_runs_from_the_shell_with_its_exit_status(tmp_path):
    project = make_project(tmp_path / "p")
    offline_run(project, "sh", "--max", "3")
    done = subprocess.run([sys.executable, str(run_status.SCRIPTS / "run_status.py"), "--run-id", "sh"], cwd=project,
                          capture_output=True, text=True, env={**os.environ})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("completed  3/")
    none = subprocess.run([sys.executable, str(run_status.SCRIPTS / "run_status.py")], cwd=project,
                          capture_output=True, text=True)
    assert none.returncode == 2 and "Traceback" not in none.stderr


@pytest.mark.parametrize("content", ["", "{not json"])
def test_a_completed_run_whose_run_meta_is_broken_is_broken_never_never_started_and_has_no_resume_line(
        tmp_path, capsys, content):
    project = make_project(tmp_path / "p")
    offline_run(project, "b")
    meta_path = run_dir(project, "b") / "run-meta.json"
    meta_path.write_text(content)
    capsys.readouterr()
    assert status(project, "--run-id", "b") == 1
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("broken") and f"{N_SAMPLE}/{N_SAMPLE} done" in lines[0], out
    assert len(lines) == 2 and "metadata is broken" in lines[1] and str(meta_path) in lines[1], out
    assert "never started" not in out and "run_benchmark.py" not in out and "/longmemeval:" not in out
    assert "delete" not in out.lower()
