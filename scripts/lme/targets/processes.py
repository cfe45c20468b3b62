"""The user's memory system as processes (the ``command`` and ``python`` adapters): one process per item, or
long-lived workers that speak JSON lines, one item at a time each. A pool grows to the number of items in flight
(the run's concurrency); the run's pools are stopped when the interpreter exits.

Every process starts in its own session (a timeout kills its whole process group; the terminal's Ctrl-C goes to
the run, which finishes or abandons its items). A failure is a ``TargetError`` carrying the last ~2 KB of the
process's stderr, its first line the cause; a timeout is one of kind ``timeout``.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import selectors
import shlex
import signal
import subprocess
import tempfile
import threading
import time
from typing import IO, TYPE_CHECKING, Any, Callable, Iterator, Mapping

from lme.core.records import TargetContext
from lme.targets.targets import TargetError

if TYPE_CHECKING:  # what a worker needs of the item's scope beyond TargetEndpointScope: its endpoint, release, settle
    from lme.models.target_endpoint import ItemScope, TargetEndpoint

STDERR_TAIL_BYTES = 2048
QUOTED_CHARS = 300
"""How much of a bad reply (or of a stderr line) an error's first line quotes."""
MESSAGE_CHARS = 2000
"""The most an error message holds: what a result row keeps of it (``RowError.message``)."""
TIMEOUT = "timeout"
"""The error kind of an item its system did not answer in time."""
DEFAULT_TIMEOUT_S = 300.0
"""Seconds a user's system has per item (option ``timeout_s``), for the python and the command adapter alike."""


def timeout_option(options: Mapping[str, Any]) -> float:
    """Option ``timeout_s`` (default ``DEFAULT_TIMEOUT_S``); ValueError for anything but a number > 0."""
    try:
        timeout = float(options.get("timeout_s", DEFAULT_TIMEOUT_S))
    except (TypeError, ValueError):
        timeout = -1.0
    if not timeout > 0:
        raise ValueError(f"option timeout_s must be a number of seconds > 0, got {options.get('timeout_s')!r}")
    return timeout


def environment(ctx: TargetContext, token: str | None = None) -> dict[str, str]:
    """The environment of a user process: ours (the user's keys and settings), plus the run's model
    (``LONGMEMEVAL_TARGET_PROVIDER`` / ``_MODEL``), a cache folder (``LONGMEMEVAL_CACHE_DIR``) and, during a run,
    the base URLs of the run's target endpoint (``ctx.endpoint``).

    ``token``: a long-lived worker process's own token of the endpoint (``Worker``: one per process start, bound to
    the item it serves now), whose URLs it gets; without one, a process for one item gets the item's own URLs.
    Outside a run (no endpoint) no URL is set."""
    env = dict(os.environ)
    env.update(LONGMEMEVAL_TARGET_PROVIDER=ctx.provider, LONGMEMEVAL_TARGET_MODEL=ctx.model,
               LONGMEMEVAL_CACHE_DIR=ctx.cache_dir or "")
    if ctx.endpoint is not None:
        env.update(ctx.endpoint.env() if token is None else ctx.endpoint.endpoint.worker_env(token))
    return env


def settle(scope: "ItemScope | None") -> None:
    """Wait (a bounded time) for the calls still in flight under an item that ended, so that they land in its row
    (``ItemScope.settle``): called once its process is gone or its worker released."""
    if scope is not None:
        scope.settle()


# --------------------------------------------------------------------------- process life


def spawn(argv: list[str], cwd: str | None, env: Mapping[str, str], stderr: IO[bytes]) -> subprocess.Popen:
    """Start ``argv`` in a session of its own, stdin and stdout piped, stderr into ``stderr``."""
    try:
        return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, cwd=cwd,
                                env=dict(env), start_new_session=True, bufsize=0)
    except (FileNotFoundError, PermissionError, NotADirectoryError) as err:
        where = f" in {cwd}" if cwd else ""
        raise TargetError(f"cannot start command {argv[0]!r}{where}: {err.strerror or err}") from err


def kill_group(proc: subprocess.Popen) -> None:
    """Kill the process and everything it started (its session's group), and reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


def tail(stream: IO[bytes] | None) -> str:
    """The last ``STDERR_TAIL_BYTES`` of a process's stderr file."""
    if stream is None:
        return ""
    try:
        stream.flush()
        size = stream.seek(0, os.SEEK_END)
        stream.seek(max(0, size - STDERR_TAIL_BYTES))
        return stream.read().decode("utf-8", errors="replace").strip()
    except (OSError, ValueError):
        return ""


def with_tail(message: str, stderr_tail: str) -> str:
    """``message`` with the stderr tail: its first line names the tail's last line (usually the cause: an
    exception's last line), the tail follows on the next lines."""
    if not stderr_tail:
        return f"{message}; stderr was empty"
    headline = f"{_quoted(message, QUOTED_CHARS)}: {_quoted(stderr_tail.splitlines()[-1].strip(), 200)}"
    room = MESSAGE_CHARS - len(headline) - len("\nstderr tail:\n…")
    kept = stderr_tail if len(stderr_tail) <= room else "…" + stderr_tail[-room:]
    return f"{headline}\nstderr tail:\n{kept}"


def _quoted(text: str, limit: int = QUOTED_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def error(message: str, stderr: IO[bytes] | None, kind: str | None = None) -> TargetError:
    return TargetError(with_tail(message, tail(stderr)), kind=kind)


# --------------------------------------------------------------------------- replies


def parse_reply(out: bytes, source: str) -> Any:
    """The JSON reply in a process's stdout: the whole text, else the last line that is a JSON object naming
    ``hypothesis``, else the last JSON object line (log lines before or after it are tolerated). Otherwise a
    TargetError quoting the relevant part: a line that looks like JSON and why it does not parse, or the end of
    the output."""
    text = out.decode("utf-8", errors="replace").strip()
    if not text:
        raise TargetError(f"{source} printed nothing on stdout (expected one JSON object)")
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    objects, broken = [], None
    for line in (raw.strip() for raw in text.splitlines()):
        if not line.startswith("{"):
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as err:
            broken = f"invalid JSON ({err.msg} at column {err.colno}): {_quoted(line)!r}"
            continue
        if isinstance(value, dict):
            objects.append(value)
    named = [o for o in objects if "hypothesis" in o]
    if named or objects:
        return (named or objects)[-1]
    if broken is not None:
        raise TargetError(f"{source} printed {broken}")
    last = text.splitlines()[-1].strip()
    raise TargetError(f"{source} printed no JSON object line (its last line: {_quoted(last)!r}); print the reply "
                      "as one JSON object on one line, logs to stderr")


# --------------------------------------------------------------------------- one process per item


def run_once(argv: list[str], payload: bytes, timeout: float, cwd: str | None, env: Mapping[str, str]) -> Any:
    """One process for one item: ``payload`` on stdin, the parsed reply from stdout."""
    source = f"command {shlex.join(argv)!r}"
    with tempfile.TemporaryFile() as err:
        proc = spawn(argv, cwd, env, err)
        try:
            out, _ = proc.communicate(payload, timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            raise error(f"{source} timed out after {timeout:g}s (process group killed)", err, TIMEOUT) from None
        if proc.returncode != 0:
            raise error(f"{source} exited with status {proc.returncode}", err)
        try:
            return parse_reply(out, source)
        except TargetError as bad:
            raise error(bad.message, err) from None


# --------------------------------------------------------------------------- long-lived workers


class Worker:
    """One long-lived process speaking JSON lines: one request line in, one reply line out. It serves one item at
    a time (its pool hands it to one caller at a time); a timeout, a crash or a bad line kills it, and the next
    item starts it again.

    During a run each process it starts gets a token of the run's target endpoint of its own (in its environment,
    ``environment(ctx, token)``), bound to the item it serves while it serves it (its import too,
    when that item started it) and released when the item ends (answered, timed out, crashed); a killed process's
    token is retired (refused for good). An item of another run (another endpoint) or of none restarts it: a worker
    never holds a stopped endpoint's URLs, and it is stopped when its endpoint stops.

    ``ready``: the process first prints one line of its own (the python worker: its import of the user's file)
    before it reads any request; ``ready(line)`` checks it (raising the TargetError to report)."""

    def __init__(self, argv: list[str], cwd: str | None, source: str, *, slot: int = 0,
                 ready: Callable[[Any], None] | None = None, no_reply: str = "gave no reply line",
                 no_start: str = "printed no first line") -> None:
        self.argv, self.cwd, self.source = argv, cwd, source
        self.no_reply, self.no_start = no_reply, no_start
        """What the timeout error says the process did not do: answer an item; start (its ``ready`` line)."""
        self.slot = slot
        self.ready = ready
        self.proc: subprocess.Popen | None = None
        self.stderr: IO[bytes] | None = None
        self.buffer = b""
        self.starts = 0
        self.endpoint: TargetEndpoint | None = None
        """The run's target endpoint its process calls (None: outside a run)."""
        self.token: str | None = None
        """Its process's token of ``endpoint`` (None when there is no process or no endpoint)."""
        self.scope: ItemScope | None = None
        """The item's scope its token is bound to while it serves that item."""

    def _start(self, timeout: float, ctx: TargetContext) -> None:
        self.stop()
        if self.endpoint is not None:
            self.token = self.endpoint.worker_token()
            if self.scope is not None:  # bound before it starts: calls made at its import are this item's
                self.scope.bind(self.token)
        self.stderr = tempfile.TemporaryFile()
        self.proc = spawn(self.argv, self.cwd, environment(ctx, self.token), self.stderr)
        self.buffer = b""
        self.starts += 1
        if self.ready is not None:
            try:
                self.ready(self._reply(timeout, self.no_start))
            except TargetError:
                self.stop()
                raise

    def stop(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                kill_group(self.proc)
            for pipe in (self.proc.stdin, self.proc.stdout):
                try:
                    if pipe:
                        pipe.close()
                except OSError:
                    pass
        if self.stderr is not None:
            self.stderr.close()
        self.proc, self.stderr = None, None
        if self.token is not None and self.endpoint is not None:
            self.endpoint.retire(self.token)  # its process is gone: a call with its token is refused for good
        self.token = None

    def _adopt(self, endpoint: "TargetEndpoint | None") -> None:
        """Serve items of ``endpoint`` (the item's run's; None outside a run): a process started for another one
        is stopped (the next request starts one with this one's URLs), and this one's stop stops it."""
        if endpoint is self.endpoint:
            return
        self.stop()
        self.endpoint = endpoint
        if endpoint is not None:
            endpoint.when_stopped(lambda: self.stop() if self.endpoint is endpoint else None)

    @contextlib.contextmanager
    def _serving(self, scope: "ItemScope | None") -> Iterator[None]:
        """Its token bound to the item's ``scope`` while it serves it; released (and the calls still in flight
        waited for, ``settle``) when the item ends, before the worker goes back to its pool."""
        self.scope = scope
        if scope is not None and self.token is not None:
            scope.bind(self.token)
        try:
            yield
        finally:
            scope, self.scope = self.scope, None
            if scope is not None and self.token is not None:
                scope.release(self.token)
            settle(scope)

    def fail(self, message: str, kind: str | None = None) -> TargetError:
        """Stop the process (the next item restarts it) and build the error with its stderr tail."""
        failure = error(message, self.stderr, kind)
        self.stop()
        return failure

    def _read_line(self, timeout: float, missing: str) -> bytes:
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in self.buffer:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not sel.select(timeout=remaining):
                    raise self.fail(f"{self.source} {missing} within {timeout:g}s (process group killed)", TIMEOUT)
                chunk = os.read(fd, 65536)
                if not chunk:
                    code = self.proc.wait(timeout=5)
                    raise self.fail(f"{self.source} exited (status {code}) before replying")
                self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line

    def _reply(self, timeout: float, missing: str) -> Any:
        line = self._read_line(timeout, missing)
        try:
            return json.loads(line.decode("utf-8", errors="replace"))
        except json.JSONDecodeError as err:
            raise self.fail(f"{self.source} printed an invalid JSON line ({err.msg}): "
                            f"{_quoted(line.decode('utf-8', errors='replace'))!r}") from None

    def request(self, payload: Mapping[str, Any], timeout: float, ctx: TargetContext) -> Any:
        """Send one item (``ctx``: its context), return the parsed reply line. Starts the process when it is not
        running, or runs for another endpoint than the item's."""
        scope: ItemScope | None = ctx.endpoint  # type: ignore[assignment]  # the run's ItemScope
        self._adopt(None if scope is None else scope.endpoint)
        with self._serving(scope):
            if self.proc is None or self.proc.poll() is not None:
                self._start(timeout, ctx)
            assert self.proc is not None and self.proc.stdin is not None
            try:
                self.proc.stdin.write(json.dumps(payload, ensure_ascii=False).encode("utf-8") + b"\n")
                self.proc.stdin.flush()
            except (BrokenPipeError, OSError):
                raise self.fail(f"{self.source} is not reading its stdin (it exited?)") from None
            return self._reply(timeout, self.no_reply)


class WorkerPool:
    """The workers of one system. ``checkout()`` lends one worker to one caller (an idle one, else a new one while
    there are fewer than ``limit``, else it waits): a worker never serves two items at once."""

    def __init__(self, make: Callable[[int], Worker], limit: int | None = None) -> None:
        self.make, self.limit = make, limit
        self.version: Any = None
        """What the pool's processes were started from (``pool(version=...)``)."""
        self.workers: list[Worker] = []
        self.idle: list[Worker] = []
        self.changed = threading.Condition()

    @contextlib.contextmanager
    def checkout(self) -> Iterator[Worker]:
        with self.changed:
            while not self.idle and self.limit is not None and len(self.workers) >= self.limit:
                self.changed.wait()
            if self.idle:
                worker = self.idle.pop()
            else:
                worker = self.make(len(self.workers))
                self.workers.append(worker)
        try:
            yield worker
        finally:
            with self.changed:
                self.idle.append(worker)
                self.changed.notify()

    def stop(self) -> None:
        with self.changed:
            for worker in self.workers:
                worker.stop()


_POOLS: dict[tuple[Any, ...], WorkerPool] = {}
"""The worker pools of this run, one per system (its key); stopped when the interpreter exits."""
_POOLS_LOCK = threading.Lock()


def pool(key: tuple[Any, ...], factory: Callable[[], WorkerPool], version: Any = None) -> WorkerPool:
    """The pool for ``key``, made by ``factory`` on first use, and made again (the old one stopped) when
    ``version`` changed (the user's file was edited)."""
    with _POOLS_LOCK:
        found = _POOLS.get(key)
        if found is not None and found.version != version:
            found.stop()
            found = None
        if found is None:
            found = _POOLS[key] = factory()
            found.version = version
        return found


@atexit.register
def stop_pools() -> None:
    """Stop every worker of every pool (also for tests between cases)."""
    with _POOLS_LOCK:
        for each in _POOLS.values():
            each.stop()
        _POOLS.clear()
