"""Runs of a user's own memory system, written here from plugins/README.md alone (a Python file, a command): a hung
item is a timeout row and the run goes on, Ctrl-C still stops it, a failed item says why on its terminal line and
on the page, ``--target PATH`` is the one way to name it, and its paths are stored resolved against the project."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lme.cli import run_benchmark
from lme.core.errors import run_main
from run_project import REPO, SAMPLE, make_project, run_dir
from test_user_system_processes import _stop_workers, memsys  # noqa: F401  (the fixture: workers stopped after each test)

ITEMS = json.loads(SAMPLE.read_text())
FIRST = ITEMS[0]




HANGS_ON_FIRST = (f"def generate(item, ctx):\n"
                  f"    if item['question'] == {FIRST['question']!r}:\n"
                  f"        open(os.environ.get('HANG_MARK', os.devnull), 'w').write(str(os.getpid()))\n"
                  f"        time.sleep(600)\n"
                  f"    return {{'hypothesis': 'I do not know'}}\n")


OFFLINE = {"targetProvider": "offline", "targetModel": "mine", "judgeProvider": "offline",
           "judgeModel": "offline-containment-v1"}
"""A config whose runs need no network (``--offline`` would also replace the config's target)."""


def run(project: Path, *args: str) -> int:
    return run_main(run_benchmark.main, ["--project", str(project), "--progress", "lines", "--no-scorecard", *args])


def rows(project: Path, run_id: str) -> dict[str, dict]:
    path = run_dir(project, run_id) / "item-results.jsonl"
    return {r["question_id"]: r for r in map(json.loads, path.read_text().splitlines())}


def test_a_python_item_that_hangs_is_a_timeout_row_and_the_run_goes_on(tmp_path):
    project = make_project(tmp_path / "p")
    memsys(project, HANGS_ON_FIRST)
    t0 = time.monotonic()
    assert run(project, "--offline", "--target", "memsys.py", "--target-option", "timeout_s=2",
               "--run-id", "h", "--max", "6", "--error-threshold", "5") == 0
    assert time.monotonic() - t0 < 60
    got = rows(project, "h")
    hung = got[FIRST["question_id"]]
    assert hung["status"] == "error" and hung["error"]["kind"] == "timeout" and hung["error"]["stage"] == "generate"
    assert sum(r["status"] == "judged" for r in got.values()) == 5


def _started_run(project: Path, tmp_path: Path, timeout_s: int) -> tuple[subprocess.Popen, int]:
    """``run_benchmark.py`` in its own process on the hanging system; returns it and the hung worker's pid."""
    mark = tmp_path / "hung.pid"
    env = {**os.environ, "HANG_MARK": str(mark)}
    proc = subprocess.Popen([sys.executable, str(REPO / "scripts" / "run_benchmark.py"), "--project", str(project),
                             "--offline", "--target", "memsys.py", "--target-option", f"timeout_s={timeout_s}",
                             "--run-id", "c", "--concurrency", "2", "--error-threshold", "30", "--progress",
                             "lines", "--no-scorecard"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.monotonic() + 60
    while not (mark.is_file() and mark.read_text()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert mark.is_file(), proc.communicate(timeout=5)
    return proc, int(mark.read_text())


def _gone(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError, IndexError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.2)
    return False


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc for the worker's state")
def test_ctrl_c_twice_abandons_the_run_and_its_hung_worker_dies_with_it(tmp_path):
    project = make_project(tmp_path / "p")
    memsys(project, HANGS_ON_FIRST)
    proc, worker = _started_run(project, tmp_path, timeout_s=600)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "--run-id c" in err  # the resume line
    assert _gone(worker), "the hung worker outlived the run"


def test_ctrl_c_once_finishes_the_items_in_flight_the_hung_one_at_its_timeout(tmp_path):
    project = make_project(tmp_path / "p")
    memsys(project, HANGS_ON_FIRST)
    proc, _ = _started_run(project, tmp_path, timeout_s=4)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert rows(project, "c")[FIRST["question_id"]]["error"]["kind"] == "timeout"
    assert f"{FIRST['question_id']} [{FIRST['question_type']}] -> ERROR timeout: python target memsys.py" in err


def test_a_failed_items_terminal_line_gives_its_cause_and_its_row_and_page_the_traceback(tmp_path, capsys):
    project = make_project(tmp_path / "p")
    memsys(project, "def check(question):\n"
                    "    raise ValueError('index is empty for ' + question[:5] + ' ' + 'x' * 3000)\n"
                    "def generate(item, ctx):\n    return check(item['question'])\n")
    assert run_main(run_benchmark.main, ["--project", str(project), "--progress", "lines", "--offline", "--target",
                                         "memsys.py", "--run-id", "e", "--max", "1"]) == 1
    err = capsys.readouterr().err
    (line,) = [x for x in err.splitlines() if " -> ERROR" in x]
    assert line.startswith(f"{FIRST['question_id']} [{FIRST['question_type']}] -> ERROR target: python target "
                           "memsys.py: ValueError: index is empty for ")
    assert len(line) < 300
    message = rows(project, "e")[FIRST["question_id"]]["error"]["message"]
    assert "Traceback (most recent call last)" in message and "in check" in message and len(message) <= 2000
    page = (run_dir(project, "e") / "report.html").read_text()
    assert "in check" in page and "ValueError: index is empty" in page


def test_a_failing_commands_terminal_line_names_the_last_line_of_its_stderr(tmp_path, capsys):
    project = make_project(tmp_path / "p")
    (project / "memsys_cmd.py").write_text("import sys, json\njson.loads(sys.stdin.read())\n"
                                           "raise RuntimeError('no index built yet')\n")
    assert run(project, "--offline", "--target", "command", "--target-option",
               f"command={sys.executable} memsys_cmd.py", "--run-id", "c", "--max", "1") == 1
    (line,) = [x for x in capsys.readouterr().err.splitlines() if " -> ERROR" in x]
    assert "-> ERROR target: command" in line and line.endswith("RuntimeError: no index built yet")


# --------------------------------------------------------------------------- one way to name your system


def test_a_py_path_as_target_runs_the_users_dict_contract_from_the_flag_and_the_config(tmp_path):
    project = make_project(tmp_path / "p")
    memsys(project, "def generate(item, ctx):\n"
                    "    assert isinstance(item, dict) and isinstance(ctx, dict)\n"
                    "    return {'hypothesis': 'sessions ' + str(len(item['sessions']))}\n")
    assert run(project, "--offline", "--target", "memsys.py", "--run-id", "flag", "--max", "2") == 0
    config = project / ".longmemeval-benchmarks" / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), **OFFLINE, "target": "memsys.py"}))
    assert run(project, "--run-id", "cfg", "--max", "2") == 0
    for run_id in ("flag", "cfg"):
        got = rows(project, run_id)
        assert [r["status"] for r in got.values()] == ["judged", "judged"]
        assert all(r["hypothesis"].startswith("sessions ") for r in got.values())


def test_an_executable_path_as_target_runs_the_command_contract(tmp_path):
    project = make_project(tmp_path / "p")
    exe = project / "memsys"
    exe.write_text(f"#!{sys.executable}\nimport json, sys\nitem = json.loads(sys.stdin.read())\n"
                   "print(json.dumps({'hypothesis': 'asked: ' + item['question']}))\n")
    exe.chmod(0o755)
    assert run(project, "--offline", "--target", "./memsys", "--run-id", "x", "--max", "2") == 0
    assert all(r["hypothesis"].startswith("asked: ") for r in rows(project, "x").values())


@pytest.mark.parametrize("args, needle", [
    (["--target", "python"], "needs option path"),
    (["--target", "command"], "needs option command"),
    (["--target", "python", "--target-option", "path=memsy.py"], "did you mean"),
    (["--target", "memsy.py"], "did you mean"),
    (["--target", "memsys"], "--target memsys.py"),
    (["--target", "command", "--target-option", "command=pythn memsys.py"], "'pythn' is not on PATH"),
])
def test_a_users_system_that_cannot_run_is_refused_in_one_line_before_anything_is_written(tmp_path, capsys, args,
                                                                                         needle):
    project = make_project(tmp_path / "p")
    memsys(project, "def generate(item, ctx):\n    return {'hypothesis': 'x'}\n")
    assert run(project, "--offline", *args) == 2
    err = capsys.readouterr().err
    assert needle in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (project / ".longmemeval-benchmarks" / "runs").exists()


def test_an_unquoted_command_gets_the_hint_to_quote_it(tmp_path, capsys):
    project = make_project(tmp_path / "p")
    with pytest.raises(SystemExit) as exit_:
        run(project, "--offline", "--target", "command", "--target-option", "command=python", "memsys_cmd.py")
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert "quote it, --target-option 'command=python memsys_cmd.py'" in err and "--run-id" not in err


def test_relative_paths_are_stored_resolved_so_the_resume_line_works_from_another_folder(tmp_path, monkeypatch,
                                                                                        capsys):
    project = make_project(tmp_path / "p")
    memsys(project, "def generate(item, ctx):\n    return {'hypothesis': 'ok'}\n")
    (project / "memsys_cmd.py").write_text("import json, sys\njson.loads(sys.stdin.read())\n"
                                           "print(json.dumps({'hypothesis': 'ok'}))\n")
    monkeypatch.chdir(project)
    assert run(project, "--offline", "--target", "python", "--target-option", "path=memsys.py", "--run-id", "py",
               "--max", "1") == 0
    assert run(project, "--offline", "--target", "command", "--target-option",
               f"command={sys.executable} memsys_cmd.py", "--run-id", "cmd", "--max", "1") == 0
    assert run(project, "--offline", "--target", "memsys.py", "--run-id", "path", "--max", "1") == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    capsys.readouterr()
    for run_id in ("py", "cmd", "path"):  # the printed resume line: --project P --run-id R
        assert run_main(run_benchmark.main, ["--project", str(project), "--run-id", run_id, "--progress", "quiet",
                                             "--no-scorecard"]) == 0, capsys.readouterr().err
        assert {r["status"] for r in rows(project, run_id).values()} == {"judged"}
    meta = json.loads((run_dir(project, "py") / "run-meta.json").read_text())
    assert meta["target"]["options"]["path"] == str((project / "memsys.py").resolve())
    meta = json.loads((run_dir(project, "cmd") / "run-meta.json").read_text())
    assert meta["target"]["options"]["cwd"] == str(project.resolve())


def test_a_loop_session_accepts_the_users_system_the_config_names_by_relative_paths(tmp_path, monkeypatch, capsys):
    project = make_project(tmp_path / "p", target="python", targetOptions={"path": "memsys.py"})
    memsys(project, "def generate(item, ctx):\n    return {'hypothesis': 'ok'}\n")
    monkeypatch.chdir(project)
    monkeypatch.setenv("CLAUDE_CODE_SESSION_ID", "a-loop-session")
    assert run_main(run_benchmark.main, ["--project", str(project), "--loop", "--dry-run", "--offline"]) == 0
    config = project / ".longmemeval-benchmarks" / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "target": "command",
                                  "targetOptions": {"command": "python memsys_cmd.py"}}))
    assert run_main(run_benchmark.main, ["--project", str(project), "--loop", "--dry-run", "--offline"]) == 0
    assert "in a loop session" not in capsys.readouterr().err
