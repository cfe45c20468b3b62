"""One pure computation on the machine's other core while this process imports: ``fn(*args)`` in a forked child.

A run's start is CPU-bound work in one interpreter: importing the provider SDK (about 0.65 s for openai) and the
cost gate's estimate over the dataset (0.15-0.3 s) cannot overlap in threads (they share the interpreter's lock).
Forked before the import, the child computes the estimate while the parent imports, and the parent reads the result
when it needs it. The child writes nothing of its own: what it would print is captured and printed by the parent at
``result()``, in the order the parent would have printed it.

A fork is only made where it is safe and pays: on Linux, and only while this process has a single thread (a child
forked beside other threads can block forever on a lock one of them held). Everywhere else, and whenever the child
does not deliver a value (it raised, its value does not pickle, it was killed), ``result()`` computes ``fn(*args)``
here, so an error is raised exactly as without the fork and the value is the one this process would compute."""

from __future__ import annotations

import io
import os
import pickle
import signal
import sys
import threading
from typing import Any, Callable, Generic, TypeVar

T = TypeVar("T")


def can_fork() -> bool:
    """A fork without exec is safe here: Linux, and no other thread in this process."""
    return sys.platform.startswith("linux") and hasattr(os, "fork") and threading.active_count() == 1


class ForkedCall(Generic[T]):
    """``fn(*args)``, started in a forked child when ``can_fork()``; ``result()`` is its value (computed here when
    the child could not deliver one); ``close()`` (also on leaving a ``with``) waits for a child never read."""

    def __init__(self, fn: Callable[..., T], *args: Any) -> None:
        self._fn, self._args = fn, args
        self._pid: int | None = None
        self._read: int | None = None
        if can_fork():
            self._start()

    def _start(self) -> None:
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: compute, hand over (value, captured output), never return into the caller's code
            os.close(read)
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to report, once
            payload = b""
            try:
                out, err = io.StringIO(), io.StringIO()
                sys.stdout, sys.stderr = out, err
                value = self._fn(*self._args)
                payload = pickle.dumps((value, out.getvalue(), err.getvalue()), protocol=pickle.HIGHEST_PROTOCOL)
            except BaseException:  # the parent computes it again and raises it as it would have
                payload = b""
            finally:
                try:
                    with os.fdopen(write, "wb") as pipe:
                        pipe.write(payload)
                finally:
                    os._exit(0)
        os.close(write)
        self._pid, self._read = pid, read

    def result(self) -> T:
        delivered = self._collect()
        if delivered is None:
            return self._fn(*self._args)
        value, out, err = delivered
        if out:
            sys.stdout.write(out)
        if err:
            sys.stderr.write(err)
        return value

    def _collect(self) -> tuple[T, str, str] | None:
        if self._read is None:
            return None
        try:
            with os.fdopen(self._read, "rb") as pipe:
                payload = pipe.read()
        finally:
            self._read = None
            self._reap()
        if not payload:
            return None
        try:
            return pickle.loads(payload)
        except Exception:
            return None

    def _reap(self) -> None:
        if self._pid is not None:
            try:
                os.waitpid(self._pid, 0)
            except ChildProcessError:
                pass
            self._pid = None

    def close(self) -> None:
        """A child whose result is not wanted (the probe refused first): waited for, not killed, so that a file it
        writes (the dataset scan's cache entry) is never left half-written; its value is dropped."""
        if self._read is not None:
            os.close(self._read)
            self._read = None
        self._reap()

    def __enter__(self) -> ForkedCall[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
