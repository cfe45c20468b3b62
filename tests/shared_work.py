"""Work one test process does for all of them when pytest-xdist runs the suite in several (tests/run_tests.sh).

A session fixture that does a large piece of work for many tests at once (the bad inputs' cases, the long Claude
Code sessions) would otherwise do it in every worker that gets one of those tests. Here the first worker to get
there claims the work (a file created with O_EXCL in the run's shared temporary folder), does it and publishes
what came of it (a pickle, written atomically); the others wait for that file. Outside xdist there is one process
and nothing is shared.
"""

from __future__ import annotations

import os
import pickle
import time
import traceback
from pathlib import Path
from typing import Any, Callable, TypeVar

import pytest

T = TypeVar("T")


def shared_folder(tmp_path_factory: pytest.TempPathFactory) -> Path | None:
    """The temporary folder every worker of this run sees (xdist gives each worker one inside it); None outside
    xdist."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return None
    folder = tmp_path_factory.getbasetemp().parent / "shared-work"
    folder.mkdir(exist_ok=True)
    return folder


def claim(folder: Path, name: str) -> bool:
    """True for the first worker to claim ``name`` in ``folder``; False for every other."""
    try:
        os.close(os.open(folder / f"{name}.claimed", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


def publish(path: Path, value: Any) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_bytes(pickle.dumps(value))
    os.replace(partial, path)


def wait_for(path: Path, what: str, timeout: float) -> Any:
    """What ``publish`` wrote at ``path``, once it is there."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}, done in another test process, did not end within {timeout:g} s (no {path})")
        time.sleep(0.2)
    return pickle.loads(path.read_bytes())


def once(tmp_path_factory: pytest.TempPathFactory, name: str, compute: Callable[[], T], timeout: float) -> T:
    """``compute()``, done by one test process of the run and shared with the others (or done here, outside
    xdist); what failed in it is raised in every process that waited for it."""
    folder = shared_folder(tmp_path_factory)
    if folder is None:
        return compute()
    result = folder / f"{name}.pickle"
    if not claim(folder, name):
        failed, value = wait_for(result, name, timeout)
        if failed:
            raise RuntimeError(f"{name}, done in another test process, failed:\n{value}")
        return value
    try:
        value = compute()
    except BaseException as err:
        publish(result, (True, "".join(traceback.format_exception(err))))
        raise
    publish(result, (False, value))
    return value
