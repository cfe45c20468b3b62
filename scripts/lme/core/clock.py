"""The toolkit's timestamps, all UTC, each format defined once. Standard library only.

Records carry ``utc_now()`` (``2026-11-29T19:40:00Z``); result rows carry ``utc_now_precise()`` (microseconds:
across the shards of one run the later row wins, so two rows of one second must still be ordered). Backups and
confirmation run ids use the compact ``utc_stamp()``. The loop's session record and snapshots keep the ISO form
with an offset they have always had (``utc_now_iso``).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

RECORD_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
PRECISE_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


def _now() -> datetime:
    return datetime.now(timezone.utc)


def utc_now() -> str:
    """``2026-11-29T19:40:00Z``: run-meta, completed marks, registries, decisions."""
    return _now().strftime(RECORD_FORMAT)


def utc_now_precise() -> str:
    """``2026-11-29T19:40:00.123456Z``: a result row's ``finished_at``."""
    return _now().strftime(PRECISE_FORMAT)


def utc_today() -> str:
    """``2026-11-29``: the date column of the loop's history."""
    return _now().date().isoformat()


def utc_stamp(*, precise: bool = False) -> str:
    """``20261129T194000Z`` (or with microseconds): a timestamp inside a file or run name."""
    return _now().strftime("%Y%m%dT%H%M%S%fZ" if precise else "%Y%m%dT%H%M%SZ")


def utc_now_iso(timespec: str = "auto") -> str:
    """``datetime.isoformat`` with its ``+00:00`` offset (the loop's session record, snapshot.json)."""
    return _now().isoformat(timespec=timespec)


def parse_utc(text: Any) -> float | None:
    """Seconds since the epoch of a ``utc_now`` or ``utc_now_precise`` timestamp; None for anything else."""
    if not text:
        return None
    for fmt in (PRECISE_FORMAT, RECORD_FORMAT):
        try:
            return datetime.strptime(str(text), fmt).replace(tzinfo=timezone.utc).timestamp()
        except ValueError:
            continue
    return None
