"""memory_trim: a long run hands freed memory back to the system at most once a second, and does nothing where
the C library has no malloc_trim."""

from __future__ import annotations

import sys

import pytest

from lme.core import memory_trim


def test_trims_at_most_once_per_interval():
    now = [0.0]
    calls = []
    trimmer = memory_trim.Trimmer(1.0, trim=lambda pad: calls.append(pad) or 1, clock=lambda: now[0])
    for t in (0.1, 0.5, 0.99, 1.0, 1.2, 1.9, 2.0, 5.0):
        now[0] = t
        trimmer.maybe()
    assert calls == [0, 0, 0] and trimmer.calls == 3


def test_without_malloc_trim_it_does_nothing(monkeypatch):
    monkeypatch.setattr(memory_trim, "_libc_trim", lambda: None)
    trimmer = memory_trim.Trimmer(0.0)
    trimmer.maybe()
    assert not trimmer.available and trimmer.calls == 0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_glibc_gives_freed_memory_back():
    def rss_mib() -> float:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * 4096 / 2**20

    if memory_trim._libc_trim() is None:
        pytest.skip("no malloc_trim in this C library")
    keep = []
    junk = [bytes(200) + bytes([i % 256]) * 300 for i in range(400_000)]  # ~200 MB of small blocks
    keep += junk[::1000]  # a few survivors pin the heap, as a run's long-lived objects do
    del junk
    before = rss_mib()
    memory_trim.Trimmer(0.0).maybe()
    assert rss_mib() < before - 100 and keep
