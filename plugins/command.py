"""Target ``command``: benchmark your own memory system as a subprocess (any language). See plugins/README.md.

Options:
- ``command``: the program, as an argv list (no shell) or a string split with ``shlex``. Required.
- ``mode``: ``per-item`` (default; one process per item: the item JSON on stdin, one JSON object on stdout)
  or ``jsonl`` (one long-lived process: one JSON line in, one JSON line out per item; restarted after a crash
  or a protocol error; items are sent one at a time).
- ``timeout_s``: seconds per item (default 300). On timeout the whole process group is killed.
- ``cwd``: working directory for the process (default: the current one).

The process receives the public item (``question``, ``question_date``, ``sessions`` with aliased ids; no gold)
and the environment variables ``LONGMEMEVAL_TARGET_PROVIDER``, ``LONGMEMEVAL_TARGET_MODEL`` and
``LONGMEMEVAL_CACHE_DIR``. It answers ``{"hypothesis": str, "tokensIn"?, "tokensOut"?,
"retrieved_session_ids"?, "debug"?}``. A timeout, a non-zero exit, invalid JSON or a missing (or non-string)
``hypothesis`` is a TargetError carrying the last ~2 KB of the process's stderr; never a hang. An empty string is
an answer, judged as upstream judges it.
"""

from __future__ import annotations

import atexit
import json
import os
import selectors
import shlex
import signal
import subprocess
import tempfile
import threading
import time
from typing import IO, Any, Mapping, Sequence

from lme.targets import (
    ChatRequest,
    Hypothesis,
    PublicItem,
    TargetContext,
    TargetError,
    hypothesis_from_response,
)

NAME = "command"
MODES = ("per-item", "jsonl")
STDERR_TAIL_BYTES = 2048


def settings(options: Mapping[str, Any]) -> dict[str, Any]:
    raw = options.get("command")
    if isinstance(raw, str):
        argv = shlex.split(raw)
    elif isinstance(raw, Sequence) and all(isinstance(a, str) for a in raw):
        argv = list(raw)
    else:
        argv = []
    if not argv:
        raise ValueError("the command target needs option command (an argv list or a string), "
                         "e.g. --target-option command='python my_memory.py'")
    mode = str(options.get("mode", "per-item"))
    if mode not in MODES:
        raise ValueError(f"command option mode must be one of {MODES}, got {mode!r}")
    timeout = float(options.get("timeout_s", 300))
    return {"command": argv, "mode": mode, "timeout_s": timeout, "cwd": options.get("cwd") or None}


def describe(options: Mapping[str, Any]) -> dict[str, Any]:
    return {"name": NAME, **settings(options)}


def prepare_requests(item: PublicItem, ctx: TargetContext) -> list[ChatRequest]:
    return []  # the user's process makes its own calls: unknown to a dry run


def _tail(stream: IO[bytes] | None) -> str:
    if stream is None:
        return ""
    try:
        stream.flush()
        size = stream.seek(0, os.SEEK_END)
        stream.seek(max(0, size - STDERR_TAIL_BYTES))
        return stream.read().decode("utf-8", errors="replace").strip()
    except (OSError, ValueError):
        return ""


def _with_tail(message: str, tail: str) -> str:
    return f"{message}; stderr tail:\n{tail}" if tail else f"{message}; stderr was empty"


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


def _environment(ctx: TargetContext, per_item: bool = False) -> dict[str, str]:
    env = dict(os.environ)
    env.update(LONGMEMEVAL_TARGET_PROVIDER=ctx.provider, LONGMEMEVAL_TARGET_MODEL=ctx.model,
               LONGMEMEVAL_CACHE_DIR=ctx.cache_dir or "")
    env.update(ctx.endpoint.env() if per_item and ctx.endpoint is not None else {})  # the item's endpoint URLs
    return env


def _parse_stdout(out: bytes, source: str) -> Any:
    text = out.decode("utf-8", errors="replace").strip()
    if not text:
        raise TargetError(f"{source} printed nothing on stdout (expected one JSON object)")
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    last = text.splitlines()[-1].strip()  # tolerate log lines before the JSON reply
    try:
        return json.loads(last)
    except json.JSONDecodeError as err:
        raise TargetError(f"{source} printed invalid JSON ({err.msg}): {text[:300]!r}") from err


def _spawn(argv: list[str], cwd: str | None, env: Mapping[str, str], stderr: IO[bytes]) -> subprocess.Popen:
    try:
        return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, cwd=cwd,
                                env=dict(env), start_new_session=True, bufsize=0)
    except (FileNotFoundError, PermissionError, NotADirectoryError) as err:
        raise TargetError(f"cannot start command {argv[0]!r}: {err.strerror or err}") from err


# --------------------------------------------------------------------------- per-item


def run_per_item(argv: list[str], payload: bytes, timeout: float, cwd: str | None,
                 env: Mapping[str, str]) -> Any:
    """One process for one item: payload on stdin, the parsed JSON reply from stdout."""
    source = f"command {shlex.join(argv)!r}"
    with tempfile.TemporaryFile() as err:
        proc = _spawn(argv, cwd, env, err)
        try:
            out, _ = proc.communicate(payload, timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            raise TargetError(_with_tail(f"{source} timed out after {timeout:g}s (process group killed)",
                                         _tail(err))) from None
        if proc.returncode != 0:
            raise TargetError(_with_tail(f"{source} exited with status {proc.returncode}", _tail(err)))
        try:
            return _parse_stdout(out, source)
        except TargetError as parse_error:
            raise TargetError(_with_tail(parse_error.message, _tail(err))) from None


# --------------------------------------------------------------------------- jsonl


class JsonlWorker:
    """One long-lived process speaking JSON lines; requests are serialized; restarted when it dies."""

    def __init__(self, argv: list[str], cwd: str | None, env: Mapping[str, str]) -> None:
        self.argv, self.cwd, self.env = argv, cwd, dict(env)
        self.source = f"command {shlex.join(argv)!r} (jsonl)"
        self.lock = threading.Lock()
        self.proc: subprocess.Popen | None = None
        self.stderr: IO[bytes] | None = None
        self.buffer = b""
        self.starts = 0

    def _start(self) -> None:
        self.stop()
        self.stderr = tempfile.TemporaryFile()
        self.proc = _spawn(self.argv, self.cwd, self.env, self.stderr)
        self.buffer = b""
        self.starts += 1

    def stop(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                _kill_group(self.proc)
            for pipe in (self.proc.stdin, self.proc.stdout):
                try:
                    if pipe:
                        pipe.close()
                except OSError:
                    pass
        if self.stderr is not None:
            self.stderr.close()
        self.proc, self.stderr = None, None

    def _fail(self, message: str) -> TargetError:
        """Stop the process (the next item restarts it) and build the error with its stderr tail."""
        tail = _tail(self.stderr)
        self.stop()
        return TargetError(_with_tail(message, tail))

    def _read_line(self, deadline: float) -> bytes:
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in self.buffer:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not sel.select(timeout=remaining):
                    raise self._fail(f"{self.source} gave no reply line within the timeout (process group killed)")
                chunk = os.read(fd, 65536)
                if not chunk:
                    code = self.proc.wait(timeout=5)
                    raise self._fail(f"{self.source} exited (status {code}) before replying")
                self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line

    def request(self, payload: Mapping[str, Any], timeout: float) -> tuple[Any, int]:
        """Send one item, return (parsed reply, process start count)."""
        with self.lock:
            if self.proc is None or self.proc.poll() is not None:
                self._start()
            assert self.proc is not None and self.proc.stdin is not None
            deadline = time.monotonic() + timeout
            try:
                self.proc.stdin.write(json.dumps(payload, ensure_ascii=False).encode("utf-8") + b"\n")
                self.proc.stdin.flush()
            except (BrokenPipeError, OSError):
                raise self._fail(f"{self.source} is not reading its stdin (it exited?)") from None
            line = self._read_line(deadline)
            try:
                return json.loads(line.decode("utf-8", errors="replace")), self.starts
            except json.JSONDecodeError as err:
                raise self._fail(f"{self.source} printed an invalid JSON line ({err.msg}): {line[:300]!r}") from None


_WORKERS: dict[tuple[Any, ...], JsonlWorker] = {}
"""The jsonl processes of this run, one per (argv, cwd); stopped when the interpreter exits."""
_WORKERS_LOCK = threading.Lock()


def _worker(argv: list[str], cwd: str | None, env: Mapping[str, str]) -> JsonlWorker:
    key = (tuple(argv), cwd, env.get("LONGMEMEVAL_TARGET_PROVIDER"), env.get("LONGMEMEVAL_TARGET_MODEL"))
    with _WORKERS_LOCK:
        if key not in _WORKERS:
            _WORKERS[key] = JsonlWorker(argv, cwd, env)
        return _WORKERS[key]


@atexit.register
def stop_workers() -> None:
    """Stop every jsonl process (also for tests between cases)."""
    with _WORKERS_LOCK:
        for worker in _WORKERS.values():
            with worker.lock:
                worker.stop()
        _WORKERS.clear()


# --------------------------------------------------------------------------- target


def generate(item: PublicItem, ctx: TargetContext) -> Hypothesis:
    cfg = settings(ctx.options)
    env = _environment(ctx, per_item=cfg["mode"] == "per-item")
    source = f"command {shlex.join(cfg['command'])!r}"
    t0 = time.monotonic()
    if cfg["mode"] == "per-item":
        payload = json.dumps(item.to_dict(), ensure_ascii=False).encode("utf-8")
        reply = run_per_item(cfg["command"], payload, cfg["timeout_s"], cfg["cwd"], env)
        adapter = {"mode": "per-item"}
    else:
        worker = _worker(cfg["command"], cfg["cwd"], env)
        reply, starts = worker.request(item.to_dict(), cfg["timeout_s"])
        adapter = {"mode": "jsonl", "process_starts": starts}
    hyp = hypothesis_from_response(reply, source)
    elapsed = (time.monotonic() - t0) * 1000.0
    return Hypothesis(
        hypothesis=hyp.hypothesis,
        tokensIn=hyp.tokensIn,
        tokensOut=hyp.tokensOut,
        latencyMs=hyp.latencyMs or round(elapsed, 3),
        retrieved_session_ids=hyp.retrieved_session_ids,
        debug={**hyp.debug, "command_adapter": adapter},
    )
