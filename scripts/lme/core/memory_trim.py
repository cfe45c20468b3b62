"""Give the memory a run has freed back to the system while the run goes on (glibc's ``malloc_trim``).

A run frees nearly everything an item allocated (its dataset item, prompts, replies, indexes), but glibc keeps the
freed pages that lie between live blocks until ``malloc_trim`` is called: a full memory-ref ``_s`` run grew to
2.3 GB resident while its live Python objects stayed under 100 MB (``tests/benchmarks/bench_rankers.py``).
``Trimmer.maybe()`` trims at most once per ``every_s`` seconds (the call takes milliseconds); where there is no
``malloc_trim`` (macOS, musl) it does nothing. Standard library only.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import time
from typing import Callable


def _libc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


class Trimmer:

    def __init__(self, every_s: float = 1.0, *, trim: Callable[[int], int] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.every_s = every_s
        self._trim = trim if trim is not None else _libc_trim()
        self._clock = clock
        self._last = clock()
        self.calls = 0

    @property
    def available(self) -> bool:
        return self._trim is not None

    def maybe(self) -> None:
        if self._trim is None:
            return
        now = self._clock()
        if now - self._last >= self.every_s:
            self._last = now
            self.calls += 1
            self._trim(0)
