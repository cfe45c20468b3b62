"""Runs entry scripts the way ``python scripts/<name>.py`` runs them, minus the interpreter's start and the imports.

A bad input's refusal costs its command ~0.05 s of work and ~0.4 s of CPU to start Python and import the toolkit
and the SDKs. This process (run with the project's venv python and the cases' environment) imports, once, the
modules every entry script imports, then serves requests on a Unix socket: for each, it forks the command's
process and reports its pid and then its exit status. The command's process is what a fresh
``python scripts/<name>.py ARGS`` would be after its imports, as ``subprocess.Popen(..., start_new_session=True,
stdin=DEVNULL)`` starts it: a new session, stdin from /dev/null, stdout and stderr into the files the request names,
no other descriptor, the request's working folder, environment and ``sys.argv``, the script's folder first on
``sys.path``; the script runs as ``__main__`` (``runpy.run_path``), and its end is the interpreter's: an exit code
from ``SystemExit``, an uncaught exception's traceback and exit 1, non-daemon threads joined, exit handlers run,
streams flushed.

What this cannot stand in for, tests/cli/test_bad_inputs.py runs as a real subprocess: a python without our
packages (the venv check), resource limits and user namespaces, the controls, and one case of each script (so
the real entry path of each stays proven), and it checks that those give the same outcome here.

Usage: ``python tests/script_forker.py SOCKET SCRIPTS_DIR``; prints ``ready`` when it serves. A request is one line
of JSON, ``{"argv": [script, args...], "cwd": ..., "env": {...}, "stdout": path, "stderr": path}``; the answers are
the lines ``{"pid": N}`` and ``{"code": N}`` (negative: the signal that ended it, as ``Popen.returncode``). The line
``stop`` ends the server once its commands have ended. The test's side is ``Forker``.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import json
import os
import re
import runpy
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import traceback
from pathlib import Path
from typing import Mapping, Sequence

LME_IMPORT = re.compile(r"^from (lme(?:\.\w+)+) import ", re.M)
SDKS = ("openai", "anthropic")
"""Imported by a command when it makes its clients (the paid cases): the largest part of their start-up."""


def preload(scripts_dir: Path) -> None:
    """Import what the entry scripts import at their top (``from lme.... import``) and the model SDKs."""
    sys.path[0] = str(scripts_dir)  # as for a script there (this file's folder is not on a command's path)
    names = sorted({m for script in scripts_dir.glob("*.py") for m in LME_IMPORT.findall(script.read_text())})
    for name in [*names, *SDKS]:
        importlib.import_module(name)
    gc.freeze()  # what was imported stays out of the commands' collections: they would copy every page of it
    if threading.active_count() != 1:  # a fork copies only the forking thread: the imports must not start any
        raise RuntimeError(f"the imports started threads: {threading.enumerate()}")


def _exit_code(code: object) -> int:
    """What the interpreter makes of ``SystemExit(code)``."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def run_command(request: dict, conn: socket.socket) -> None:
    """In the command's process: become it, run the script, end as the interpreter ends. Never returns."""
    conn.close()
    os.setsid()
    null = os.open(os.devnull, os.O_RDONLY)
    out = os.open(request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    err = os.open(request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    for fd, target in ((null, 0), (out, 1), (err, 2)):
        os.dup2(fd, target)
    for fd in map(int, os.listdir("/proc/self/fd")):  # close_fds: only 0, 1 and 2 (listdir's own fd is gone)
        if fd > 2:
            try:
                os.close(fd)
            except OSError:
                pass
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    script = request["argv"][0]
    sys.argv = list(request["argv"])
    sys.path[0] = os.path.dirname(os.path.realpath(script))
    code = 1
    try:
        runpy.run_path(script, run_name="__main__")
        code = 0
    except SystemExit as exc:
        code = _exit_code(exc.code)
    except BaseException:  # noqa: BLE001 - the interpreter prints it and exits 1
        sys.excepthook(*sys.exc_info())
    finally:
        try:  # the interpreter's end: join non-daemon threads, run the exit handlers, collect what is garbage (an
            threading._shutdown()  # type: ignore[attr-defined]  # SQLite connection in a cycle closes), flush
            atexit._run_exitfuncs()
            gc.collect()
        except BaseException:  # noqa: BLE001
            traceback.print_exc()
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.flush()
        os._exit(code)


def serve(socket_path: str) -> None:
    """Serve requests until ``stop``, then wait for the commands still running (their CPU time is counted). This
    process forks each command itself and reports its end when its pidfd is readable: a handler process between
    them would cost a second fork of this ~100 MB process (~5 ms of CPU a command)."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(socket_path)
    listener.listen(64)
    ready = selectors.DefaultSelector()
    ready.register(listener, selectors.EVENT_READ)
    print("ready", flush=True)
    stopping = False
    while not stopping or ready.get_map():
        for key, _ in ready.select():
            if key.fileobj is listener:
                conn, _ = listener.accept()
                if conn.recv(1, socket.MSG_PEEK) == b"s":  # "stop"
                    stopping = True
                    conn.close()
                    ready.unregister(listener)
                    continue
                _start(conn, listener, ready)
            else:
                _report(key, ready)
    listener.close()


def _start(conn: socket.socket, listener: socket.socket, ready: selectors.BaseSelector) -> None:
    """Read a request, fork its command, report the pid; the command's end is reported by ``_report``."""
    try:
        with conn.makefile("r", encoding="utf-8") as reader:
            request = json.loads(reader.readline())
        pid = os.fork()
        if pid == 0:
            try:  # never back into the server's loop
                for key in list(ready.get_map().values()):  # the other commands' connections and pidfds
                    if key.data is not None:
                        key.data[1].close()
                        os.close(key.fd)
                ready.close()
                listener.close()
                run_command(request, conn)
            finally:
                os._exit(1)
        conn.sendall((json.dumps({"pid": pid}) + "\n").encode())
        ready.register(os.pidfd_open(pid), selectors.EVENT_READ, (pid, conn))
    except Exception:  # noqa: BLE001 - the client sees the connection close without a code
        traceback.print_exc()
        conn.close()


def _report(key: selectors.SelectorKey, ready: selectors.BaseSelector) -> None:
    pid, conn = key.data
    ready.unregister(key.fd)
    os.close(key.fd)
    _, status = os.waitpid(pid, 0)
    try:
        conn.sendall((json.dumps({"code": os.waitstatus_to_exitcode(status)}) + "\n").encode())
    except OSError:
        traceback.print_exc()
    finally:
        conn.close()


class Forker:
    """The test's side: starts the server with ``python`` and ``env`` (the interpreter and the environment at the
    commands' start), runs commands through it, stops it."""

    def __init__(self, python: str, scripts_dir: Path, env: Mapping[str, str]) -> None:
        self._folder = Path(tempfile.mkdtemp(prefix="forker-"))  # short: a socket's path has at most 107 bytes
        self._socket = str(self._folder / "socket")
        self._log = open(self._folder / "log", "wb")
        self._proc = subprocess.Popen([python, __file__, self._socket, str(scripts_dir)], env=dict(env),
                                      stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self._log, text=True)
        if self._proc.stdout.readline().strip() != "ready":
            self.stop()
            raise RuntimeError(f"the script forker did not start:\n{self._folder.joinpath('log').read_text()}")

    def run(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str], stdout: Path, stderr: Path,
            timeout: float) -> int | None:
        """Run ``argv`` (an entry script and its arguments) with its output into ``stdout`` and ``stderr``; its exit
        code (as ``Popen.returncode``), or None when it ran past ``timeout`` seconds (its session was killed)."""
        request = {"argv": list(argv), "cwd": str(cwd), "env": dict(env), "stdout": str(stdout),
                   "stderr": str(stderr)}
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(self._socket)
            conn.sendall((json.dumps(request) + "\n").encode())
            with conn.makefile("r", encoding="utf-8") as answers:
                pid = json.loads(answers.readline())["pid"]
                expired = threading.Event()
                killer = threading.Timer(timeout, _kill_session, (pid, expired))
                killer.start()
                try:
                    line = answers.readline()
                finally:
                    killer.cancel()
        if not line:
            raise RuntimeError(f"the script forker's handler failed:\n{self._folder.joinpath('log').read_text()}")
        return None if expired.is_set() else json.loads(line)["code"]

    def stop(self) -> None:
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
                conn.connect(self._socket)
                conn.sendall(b"stop\n")
            self._proc.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            self._proc.kill()
            self._proc.wait()
        self._proc.stdout.close()
        self._log.close()
        shutil.rmtree(self._folder, ignore_errors=True)


def _kill_session(pid: int, expired: threading.Event) -> None:
    expired.set()
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


if __name__ == "__main__":
    preload(Path(sys.argv[2]))
    serve(sys.argv[1])
