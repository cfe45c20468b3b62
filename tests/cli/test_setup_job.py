"""Setup in the background (``setup_project.py --background`` / ``--wait``): it prints what the foreground prints
and exits with its status when it ends in time, says where it stands (exit 4) and how to follow it when not, and
never loses how it ended. tests/claude_code/test_claude_code_names.py proves it under the real CLI with a slow pip install."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lme.cli import setup_job, setup_project
from lme.core import process_life
from lme.core.errors import UserError, run_main

SETUP = Path(setup_project.__file__).resolve().parents[2] / "setup_project.py"


def run_setup(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SETUP), "--project", str(project), *args], capture_output=True,
                          text=True, timeout=120, cwd=project)


def test_a_background_setup_that_ends_in_time_prints_what_the_foreground_prints(tmp_path):
    here, there = tmp_path / "fg", tmp_path / "bg"
    for project in (here, there):
        project.mkdir()
    foreground = run_setup(here, "--sample", "--skip-venv")
    background = run_setup(there, "--background", "--sample", "--skip-venv")
    assert (foreground.returncode, background.returncode) == (0, 0), background.stderr
    assert background.stdout.replace(str(there), "P") == foreground.stdout.replace(str(here), "P")
    assert json.loads((there / setup_job.JOB_DIR / setup_job.EXIT_FILE).read_text())["exit_status"] == 0
    again = run_setup(there, "--wait", "1")  # a later --wait shows the same result again
    assert again.returncode == 0 and again.stdout == background.stdout


def test_a_background_setup_that_fails_exits_with_its_error_line(tmp_path):
    done = run_setup(tmp_path, "--background", "--skip-venv", "--download", "_s", "--offline")
    assert done.returncode == 2 and done.stderr.count("error:") == 1 and "--offline" in done.stderr


def test_what_the_child_printed_is_in_its_files_when_its_exit_is_recorded(tmp_path):
    """The follower prints out.txt as soon as exit.json appears; the child's stdout (a file: block-buffered) used to
    reach out.txt only at the child's exit, after exit.json: under load a setup that succeeded printed nothing."""
    folder = tmp_path / setup_job.JOB_DIR
    folder.mkdir(parents=True)
    child = ("import os, sys; from pathlib import Path; from lme.cli import setup_job; "
             "print('next: /longmemeval-run --max 3'); print('a warning', file=sys.stderr); "
             "setup_job.child_exit(Path(sys.argv[1]), 0); os._exit(0)")  # os._exit: the moment exit.json is there
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # a user's shell rarely sets it
    with open(folder / setup_job.OUT_FILE, "wb") as out, open(folder / setup_job.ERR_FILE, "wb") as err:
        subprocess.run([sys.executable, "-c", child, str(tmp_path)], stdout=out, stderr=err, check=True, timeout=60,
                       cwd=SETUP.parent, env=env)
    assert json.loads((folder / setup_job.EXIT_FILE).read_text())["exit_status"] == 0
    assert (folder / setup_job.OUT_FILE).read_text() == "next: /longmemeval-run --max 3\n"
    assert (folder / setup_job.ERR_FILE).read_text() == "a warning\n"


def _fake_job(project: Path, pid: int, argv: list[str]) -> None:
    folder = project / setup_job.JOB_DIR
    folder.mkdir(parents=True, exist_ok=True)
    (folder / setup_job.JOB_FILE).write_text(json.dumps({**process_life.identity(pid), "started": 0, "argv": argv}))
    (folder / setup_job.ERR_FILE).write_text("creating .longmemeval-venv ...\ninstalling requirements.txt ...\n")
    (folder / setup_job.OUT_FILE).write_text("")


def test_a_setup_still_running_says_where_it_stands_and_how_to_follow_it(tmp_path, capsys):
    with subprocess.Popen(["sleep", "30"]) as sleeper:
        try:
            _fake_job(tmp_path, sleeper.pid, ["--sample"])
            assert setup_job.follow(tmp_path, 0.3) == setup_job.EXIT_RUNNING
            out = capsys.readouterr().out.splitlines()
            assert out[0].startswith(f"setup: still running in the background (pid {sleeper.pid}, ")
            assert out[0].endswith("installing requirements.txt ...")
            assert out[1] == f'wait: python3 "{SETUP}" --wait 100' + (f' --project "{tmp_path}"'
                                                                    if Path.cwd() != tmp_path else "")
            # the same command again follows it; another one is refused while it runs
            assert setup_job.start(tmp_path, ["--sample"])["pid"] == sleeper.pid
            with pytest.raises(UserError, match="a setup with other options is running"):
                setup_job.start(tmp_path, ["--download", "_s"])
            folder = tmp_path / setup_job.JOB_DIR
            (folder / setup_job.OUT_FILE).write_text("venv      created\nnext: /longmemeval-run --max 3\n")
            setup_job.record_exit(tmp_path, 0)
            assert setup_job.follow(tmp_path, 5) == 0
            assert capsys.readouterr().out == "venv      created\nnext: /longmemeval-run --max 3\n"
        finally:
            sleeper.kill()


def test_a_setup_process_that_died_without_a_result_is_said_and_its_output_shown(tmp_path, capsys):
    _fake_job(tmp_path, 2 ** 22 + 4321, ["--sample"])  # no such pid
    with pytest.raises(UserError, match="ended without a result"):
        setup_job.follow(tmp_path, 1)
    assert "installing requirements.txt" in capsys.readouterr().err


def test_the_background_child_records_an_unexpected_failure_as_exit_1(tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(setup_project, "setup", broken)
    with pytest.raises(RuntimeError):
        run_main(setup_project.main, ["--project", str(tmp_path), "--sample", setup_job.JOB_FLAG])
    assert json.loads((tmp_path / setup_job.JOB_DIR / setup_job.EXIT_FILE).read_text())["exit_status"] == 1
