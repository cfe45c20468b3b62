"""run_benchmark.py --background: a detached worker that outlives its caller, seen and resumed with run_status.py.

Real SDKs against the fake server (tests/fake_llm_server.py, in this process); the drivers run as subprocesses, as
a user's shell or Claude Code's Bash tool starts them. Every worker a test starts is killed by pid at its end.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lme.core import command_names
from lme.core import process_life
from lme.core.facts import SCHEMA_VERSIONS
from lme.run import status as run_status
from lme.cli import run_status as run_status_cli
from run_project import REPO, SAMPLE, judged_rows, make_project, register_answers, run_dir
from test_hypotheses_run import write_hypotheses

N_SAMPLE = len(json.loads(SAMPLE.read_text()))
DRIVER = REPO / "scripts" / "run_benchmark.py"
STATUS = REPO / "scripts" / "run_status.py"


@pytest.fixture
def workers():
    """Pids of the workers a test started; each still alive at the end is killed (by its pid only)."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        if process_life.pid_alive(pid):
            os.kill(pid, signal.SIGKILL)


def start(project: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(DRIVER), "--project", str(project), "--background", *args],
                          capture_output=True, text=True, timeout=60)


def worker_of(project: Path, run_id: str) -> dict:
    return json.loads((run_dir(project, run_id) / "worker.json").read_text())


def status(project: Path, run_id: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(STATUS), "--project", str(project), "--run-id", run_id, *args],
                          capture_output=True, text=True, timeout=200)


def rows_of(project: Path, run_id: str) -> list[dict]:
    path = run_dir(project, run_id) / "item-results.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


def wait_for_rows(project: Path, run_id: str, n: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while len(rows_of(project, run_id)) < n:
        assert time.monotonic() < deadline, f"fewer than {n} rows after {timeout} s"
        time.sleep(0.1)


@pytest.mark.background
def test_background_returns_at_once_and_the_worker_completes_the_run(tmp_path, fake_llm, workers):
    register_answers(fake_llm)
    fake_llm.latency = 0.05
    project = make_project(tmp_path / "p", concurrency=2)
    done = start(project, "--run-id", "bg")
    assert done.returncode == 0, done.stderr
    info = worker_of(project, "bg")
    workers.append(info["pid"])
    first, second = done.stdout.splitlines()[:2]
    assert first == (f"run bg started in the background (pid {info['pid']}); log: "
                     f"{run_dir(project, 'bg') / 'run.log'}")
    assert second == f'wait: bash "{REPO / "scripts" / "venv_run.sh"}" run_status.py --run-id bg --wait 100'
    assert {"pid", "started_at", "hostname", "log"} <= set(info) <= {"pid", "started_at", "hostname", "log",
                                                                     "boot_id", "proc_start", "schemaVersion"}
    assert info["schemaVersion"] == SCHEMA_VERSIONS["run-worker"]
    t0 = time.monotonic()
    waited = status(project, "bg", "--wait", "100")
    assert waited.returncode == 0, waited.stdout + waited.stderr
    assert time.monotonic() - t0 < 90  # returned when the run ended, not at the bound
    assert waited.stdout.startswith(f"completed  {N_SAMPLE}/{N_SAMPLE} done")
    rows = judged_rows(project, "bg")
    assert len(rows) == N_SAMPLE == len({r["question_id"] for r in rows})
    log = (run_dir(project, "bg") / "run.log").read_text()
    assert f"completed  {N_SAMPLE}/{N_SAMPLE} done ({N_SAMPLE} judged, 0 errors)" in log  # --progress status
    assert "# LongMemEval scorecard" in log  # the worker wrote the scorecard
    for path in run_dir(project, "bg").rglob("*"):
        if path.is_file():
            assert b"DUMMY-openai-key" not in path.read_bytes(), path


@pytest.mark.background
def test_a_live_run_is_refused_a_second_worker_and_a_foreground_writer(tmp_path, fake_llm, workers):
    register_answers(fake_llm)
    fake_llm.latency = 0.3
    project = make_project(tmp_path / "p", concurrency=1, cacheEnabled=False)
    assert start(project, "--run-id", "one").returncode == 0
    pid = worker_of(project, "one")["pid"]
    workers.append(pid)
    again = start(project, "--run-id", "one")
    assert again.returncode == 2 and f"already running (pid {pid})" in again.stderr
    assert worker_of(project, "one")["pid"] == pid  # the record still names the live worker
    fore = subprocess.run([sys.executable, str(DRIVER), "--project", str(project), "--run-id", "one"],
                          capture_output=True, text=True, timeout=60)
    assert fore.returncode == 2 and f"already running (pid {pid})" in fore.stderr
    assert status(project, "one").returncode == 4


@pytest.mark.background
@pytest.mark.kill
def test_a_killed_worker_is_dead_with_exit_1_and_its_printed_resume_completes_the_run(tmp_path, fake_llm, workers):
    """kill -9 of the worker mid-run: the status says dead, the printed command (no file named: the run's own
    settings) resumes it to one judged row per question, none twice. The run judges a hypotheses file, so this one
    kill also holds the hypotheses run's resume (once its own kill test: the same writer, the same crash point)."""
    register_answers(fake_llm)
    fake_llm.latency = 0.2
    project = make_project(tmp_path / "p", concurrency=2, cacheEnabled=False)
    hyps = write_hypotheses(tmp_path / "hyps.jsonl", skip=())
    assert start(project, "--run-id", "k", "--hypotheses", str(tmp_path / "hyps.jsonl")).returncode == 0
    pid = worker_of(project, "k")["pid"]
    workers.append(pid)
    wait_for_rows(project, "k", 3)
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while process_life.pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert 3 <= len(rows_of(project, "k")) < N_SAMPLE, "the kill did not land mid-run"
    seen = status(project, "k")
    assert seen.returncode == 1, seen.stdout
    assert seen.stdout.startswith("dead") and "no process writes the run" in seen.stdout
    assert f"in Claude Code: {command_names.RUN} --run-id k" in seen.stdout
    resume = seen.stdout.split("resume with: ", 1)[1].splitlines()[0]
    assert "hyps.jsonl" not in resume
    fake_llm.latency = 0.0
    finish = subprocess.run(shlex.split(resume) + ["--progress", "quiet", "--no-scorecard"],
                            capture_output=True, text=True, timeout=120)
    assert finish.returncode == 0, finish.stderr
    rows = rows_of(project, "k")
    assert sorted(r["question_id"] for r in rows) == sorted(hyps) and len(hyps) == N_SAMPLE
    assert all(r["status"] == "judged" for r in rows)
    assert status(project, "k").returncode == 0


@pytest.mark.background
@pytest.mark.kill
def test_the_worker_survives_the_death_of_the_session_that_started_it(tmp_path, fake_llm, workers):
    """As when Claude Code kills a Bash tool call's process group: the starter's whole group dies, the run goes on."""
    register_answers(fake_llm)
    fake_llm.latency = 0.02
    project = make_project(tmp_path / "p", concurrency=2, cacheEnabled=False)
    starter_cmd = (f"{shlex.quote(sys.executable)} {shlex.quote(str(DRIVER))} --project {shlex.quote(str(project))} "
                   "--background --run-id orphan && sleep 60")
    starter = subprocess.Popen(["bash", "-c", starter_cmd], start_new_session=True, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    line = starter.stdout.readline()
    assert line.startswith("run orphan started in the background"), line + starter.stderr.read()
    pid = worker_of(project, "orphan")["pid"]
    workers.append(pid)
    assert os.getsid(pid) != os.getsid(starter.pid) and os.getpgid(pid) != starter.pid
    os.killpg(starter.pid, signal.SIGKILL)  # the starter's whole process group (its session)
    starter.wait(timeout=10)
    starter.stdout.close()
    starter.stderr.close()
    waited = status(project, "orphan", "--wait", "100")
    assert waited.returncode == 0, waited.stdout
    rows = judged_rows(project, "orphan")
    assert len(rows) == N_SAMPLE == len({r["question_id"] for r in rows})


@pytest.mark.background
def test_wait_blocks_no_longer_than_its_bound_plus_one_poll(tmp_path, fake_llm, workers):
    register_answers(fake_llm)
    fake_llm.latency = 0.5
    project = make_project(tmp_path / "p", concurrency=1, cacheEnabled=False)
    assert start(project, "--run-id", "slow").returncode == 0
    workers.append(worker_of(project, "slow")["pid"])
    t0 = time.monotonic()
    code = run_status_cli.main(["--project", str(project), "--run-id", "slow", "--wait", "1.5"])
    elapsed = time.monotonic() - t0
    assert code == 4
    assert 1.5 <= elapsed <= 1.5 + run_status.POLL_S + 1.0  # one poll, plus reading the rows once


@pytest.mark.parametrize("args, needle", [
    (["--target", "nope"], "unknown target"),
    (["--max", "-1"], "--max -1 is negative"),
    (["--run-id", "../up"], "run id"),
])
def test_background_mistakes_are_refused_by_the_caller_with_nothing_written(tmp_path, args, needle):
    project = make_project(tmp_path / "p")
    done = start(project, *args)
    assert done.returncode == 2 and needle in done.stderr and "Traceback" not in done.stderr
    assert not (project / ".longmemeval-benchmarks" / "runs").exists()
    assert not (project / ".longmemeval-benchmarks" / "cache").exists()


@pytest.mark.background
def test_the_loops_full_run_in_the_background_and_the_reentrant_confirmation(tmp_path, fake_llm, workers):
    import markdown_harness as harness
    from upstream_standin import make_upstream_tree

    project, env = harness.prepare_project(tmp_path, sys.executable, os.environ,
                                           longmemeval_root=make_upstream_tree(tmp_path / "upstream"))
    harness.SETUPS["loop-at-target"](project, env, fake_llm)
    script = REPO / "scripts" / "parallel_longmemeval.sh"

    def loop(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", str(script), "8", "133", "500", *args], cwd=project, env=env,
                              capture_output=True, text=True, timeout=200)

    full = loop("--background")
    assert full.returncode == 0, full.stderr
    assert full.stdout.startswith("run longmemeval-iter started in the background")
    workers.append(worker_of(project, "longmemeval-iter")["pid"])
    assert status(project, "longmemeval-iter", "--wait", "100").returncode == 0

    fake_llm.latency = 1.0  # the rerun must outlast the start and the status checks on a loaded machine (0 below)
    first = loop("--confirm", "--wait", "0")
    assert first.returncode == 4, first.stdout + first.stderr
    confirm_id = json.loads((project / ".longmemeval-benchmarks" / "confirmation.json").read_text())["confirm_run_id"]
    pid = worker_of(project, confirm_id)["pid"]
    workers.append(pid)
    assert "in the background" in first.stderr
    assert any(line.startswith("running ") and line.endswith(f"run {confirm_id}") for line in first.stdout.splitlines())
    assert f"confirmation rerun {confirm_id} is still running" in first.stdout
    again = loop("--confirm", "--wait", "0")  # re-entrant: the running rerun is waited for, not started twice
    assert again.returncode == 4 and worker_of(project, confirm_id)["pid"] == pid
    fake_llm.latency = 0.0
    last = loop("--confirm", "--wait", "100")
    assert last.returncode == 0, last.stdout + last.stderr
    assert "CONFIRMED: the loop ends here" in last.stderr
    meta = json.loads((run_dir(project, confirm_id) / "run-meta.json").read_text())
    assert meta["settings"]["cache_read"] is False and meta["status"] == "completed"
    assert loop("--confirm", "--no-cache").returncode == 2


@pytest.mark.background
def test_two_shards_run_in_the_background_side_by_side(tmp_path, fake_llm, workers):
    register_answers(fake_llm)
    fake_llm.latency = 1.0  # shard 1 must still run when it is started again (each start also probes the models)
    project = make_project(tmp_path / "p", concurrency=2, cacheEnabled=False)
    for shard in ("1/2", "2/2"):
        done = start(project, "--run-id", "sh", "--shard", shard)
        assert done.returncode == 0, done.stderr
        i = shard[0]
        workers.append(json.loads((run_dir(project, "sh") / f"shard-{i}of2" / "worker.json").read_text())["pid"])
        assert f"shard-{i}of2" in done.stdout.splitlines()[0]  # each shard has its own log
    again = start(project, "--run-id", "sh", "--shard", "1/2")
    assert again.returncode == 2 and "already running" in again.stderr
    fake_llm.latency = 0.0  # the rest of the shards' calls: fast
    assert status(project, "sh", "--wait", "100").returncode in (0, 4)
    for pid in workers:
        deadline = time.monotonic() + 100
        while process_life.pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
    assert status(project, "sh").returncode == 0
    import factories

    rows = factories.load_rows(run_dir(project, "sh"))
    assert len(rows) == N_SAMPLE and all(r["status"] == "judged" for r in rows.values())
