"""ForkedCall: the cost gate's estimate computed on the other core while a run imports its SDK, with the same value,
output and errors as computed in-process."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from lme.run import forked_call
from lme.run.forked_call import ForkedCall

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
LINUX = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the fork is made on Linux only")


def _pid_and_talk() -> int:
    print("said on stdout")
    print("said on stderr", file=sys.stderr)
    return os.getpid()


def _refuse(message: str) -> None:
    raise ValueError(message)


def _unpicklable() -> object:
    return lambda: None


def _single_threaded(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(SCRIPTS)})
    assert done.returncode == 0, done.stderr
    return done.stdout


@LINUX
def test_a_single_threaded_process_computes_in_a_child_and_prints_its_output_at_result():
    out = _single_threaded(
        "import os, sys\n"
        "from lme.run.forked_call import ForkedCall, can_fork\n"
        "def work():\n"
        "    print('from the child')\n"
        "    return os.getpid()\n"
        "assert can_fork()\n"
        "call = ForkedCall(work)\n"
        "print('parent first')\n"
        "pid = call.result()\n"
        "print('child pid differs:', pid != os.getpid())\n")
    assert out.splitlines() == ["parent first", "from the child", "child pid differs: True"]


def test_the_value_and_output_are_those_of_the_function(capfd):
    with ForkedCall(_pid_and_talk) as call:
        pid = call.result()
    assert isinstance(pid, int)
    out, err = capfd.readouterr()
    assert out == "said on stdout\n" and err == "said on stderr\n"


def test_an_error_in_the_function_is_raised_here_as_without_the_fork():
    with pytest.raises(ValueError, match="^bad dataset$"):
        with ForkedCall(_refuse, "bad dataset") as call:
            call.result()


def test_a_value_that_does_not_pickle_is_computed_here():
    with ForkedCall(_unpicklable) as call:
        assert callable(call.result())


def test_no_fork_beside_another_thread():
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert not forked_call.can_fork()
        call = ForkedCall(os.getpid)
        assert call.result() == os.getpid()  # computed here, at result()
    finally:
        stop.set()
        other.join()


@LINUX
def test_a_child_never_read_finishes_what_it_writes_and_is_reaped(tmp_path):
    out = _single_threaded(
        "import os, sys, time\n"
        "from pathlib import Path\n"
        "from lme.run.forked_call import ForkedCall\n"
        "def write_late(path):\n"
        "    time.sleep(0.5)\n"
        "    Path(path).write_text('whole')\n"
        f"call = ForkedCall(write_late, {str(tmp_path / 'entry')!r})\n"
        "pid = call._pid\n"
        "call.close()\n"
        "try:\n"
        "    os.kill(pid, 0); print('alive')\n"
        "except ProcessLookupError:\n"
        "    print('gone')\n")
    assert out.strip() == "gone"
    assert (tmp_path / "entry").read_text() == "whole"
