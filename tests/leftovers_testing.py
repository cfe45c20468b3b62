"""Leftovers of killed writes planted in a project (issue 38, finding 9): what a sweep must remove and what it must
leave (a fresh temp a live writer is about to rename, a file of another name, a link and what it points to)."""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

STATE = ".longmemeval-benchmarks"
LONG_AGO = time.time() - 3 * 3600
"""Three hours back: past the sweep's one-hour threshold."""


def _aged(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    os.utime(path, (LONG_AGO, LONG_AGO))
    return path


def _age_tree(folder: Path) -> None:
    for path in [*folder.rglob("*"), folder]:
        os.utime(path, (LONG_AGO, LONG_AGO), follow_symlinks=False)


@dataclass(frozen=True)
class Planted:
    stale: tuple[Path, ...]
    """Temps of killed writes: gone after a sweep."""
    kept: dict[Path, str]
    """Files a sweep must leave as they are (path -> sha256), the fresh temp and the links' targets among them."""
    links: tuple[Path, ...]
    stale_bytes: int

    def kept_now(self) -> dict[Path, str]:
        return {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in self.kept if p.is_file()}


def plant(project: Path, outside: Path, run_folder: str = "runs/other") -> Planted:
    """Stale temps of each kind under the project's state folder, and what must survive beside them."""
    state = project / STATE
    run = state / run_folder
    stale = [
        _aged(run / ".item-results.jsonl.k2j4h6g8.tmp", b"x" * 1000),  # a killed atomic write in a run folder
        _aged(state / ".round.json.ab_cd123.tmp", b"y" * 24),  # ... in the state folder
        _aged(run / "charts" / ".accuracy.svg.0a1b2c3d.tmp", b"z" * 100),  # ... in a run's sub-folder
    ]
    legacy = state / "snapshots" / ".v2.q8w7e6r5"  # a partial loop snapshot, as the snapshot step names it
    _aged(legacy / "item-results.jsonl", b"r" * 2000)
    _aged(legacy / "charts" / "a.svg", b"s" * 50)
    _age_tree(legacy)
    partial = state / "snapshots" / ".v3.m1n2b3v4.tmp"  # ... as fileio.make_temp_dir names it
    _aged(partial / "labels.jsonl", b"l" * 300)
    _age_tree(partial)
    stale += [legacy, partial]
    fresh = run / ".report.html.fr35h999.tmp"  # a live writer's temp, about to be renamed
    fresh.write_bytes(b"being written")
    others = [_aged(run / "notes.tmp.txt", b"mine"), _aged(run / ".backup.tmp", b"mine too"),
              _aged(state / "snapshots" / "v1" / "item-results.jsonl", b"a whole snapshot")]
    target = _aged(outside / ".victim.z9y8x7w6.tmp", b"outside the project")  # named like ours, old
    link = run / ".linked.a1a1a1a1.tmp"
    link.symlink_to(target)
    os.utime(link, (LONG_AGO, LONG_AGO), follow_symlinks=False)
    linked_dir = state / "linked"
    linked_dir.parent.mkdir(parents=True, exist_ok=True)
    linked_dir.symlink_to(outside, target_is_directory=True)
    kept = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in [fresh, *others, target]}
    return Planted(stale=tuple(stale), kept=kept, links=(link, linked_dir), stale_bytes=1000 + 24 + 100 + 2050 + 300)


def assert_swept(planted: Planted) -> None:
    left = [p for p in planted.stale if os.path.lexists(p)]
    assert not left, f"stale temps left: {left}"
    assert planted.kept_now() == planted.kept
    assert all(p.is_symlink() for p in planted.links)
