"""Probes that passed a moment ago: the next run on the same endpoint, key and model skips its start-up round trip.

A run's probe (``provider_probe``) costs one request per model before the first call: a second or more on a real
API, paid again by every short run the loop makes. A probe that got an answer is remembered here for ``TTL_S``
seconds, in ``<cache_dir>/probes.json``, under a fingerprint of everything that decides where the request goes and
who makes it: the SDK route (``openai``, ``anthropic``, ``azure``), the base URL (none: the SDK's default host), the
Azure deployment and API version, the model, and the API key. The fingerprint is one sha256 over all of them, so
the file holds neither a key nor a hash of a key alone, and a change of any one is another fingerprint: a probe is
never reused across endpoints, keys or models.

Only a probe that was answered is remembered; one that failed, even with a fault the run itself would retry, is
not. With the official judge's probe goes what its model-list entry said in the same moment (``Passed.listed``:
its ``shutdown_date``, or none), so the next run within ``TTL_S`` prints the countdown without reading the list
again (``listing``): a warm run starts with no round trip at all. From a day before the judge's shutdown date on,
``judge_entry`` does not use it: around the retirement every run reads the list and probes for itself.

The record is written once the run really started (``run_driver.execute``'s ``on_start``), so a run refused after
its probe leaves nothing behind. An unreadable, oversized or future-dated record is a miss.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from lme.core import fileio

TTL_S = 600.0
"""How long a passed probe stands for the next run (10 minutes: the loop's re-test runs follow each other closely;
a key revoked within that window still fails the run's first calls, as a probe would have)."""
FILE = "probes.json"
MAX_BYTES = 64 * 1024
KEEP = 64
"""At most this many fingerprints are kept (the newest)."""
_VERSION = 1


@dataclass(frozen=True)
class Passed:
    """A probe that was answered: its fingerprint and when (seconds since the epoch)."""

    fingerprint: str
    at: float
    listed: bool = False
    """The model list was read in the same moment and answered (not gone): ``shutdown_date`` is what it said."""
    shutdown_date: str | None = None


def fingerprint(kind: str, base_url: str | None, api_key: str, model: str,
                azure: tuple[str, str] | None = None) -> str:
    """One sha256 over what decides where a probe went and who sent it (see the module docstring)."""
    blob = json.dumps([_VERSION, kind, base_url, api_key, model, list(azure) if azure else None])
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _path(cache_dir: str | os.PathLike[str]) -> Path:
    return Path(cache_dir) / FILE


def _read(cache_dir: str | os.PathLike[str]) -> tuple[dict[str, float], dict[str, str | None]]:
    """``(probes: {fingerprint: at}, listed: {fingerprint: shutdown_date})``; both empty for an unusable file."""
    path = _path(cache_dir)
    try:
        if path.is_symlink() or path.stat().st_size > MAX_BYTES:
            return {}, {}
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}, {}
    probes = data.get("probes") if isinstance(data, dict) and data.get("version") == _VERSION else None
    if not isinstance(probes, dict):
        return {}, {}
    listed = data.get("listed")
    return ({k: float(v) for k, v in probes.items()
             if isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool)},
            {k: v for k, v in (listed.items() if isinstance(listed, dict) else ())
             if isinstance(k, str) and (v is None or _is_date(v))})


def _is_date(value: object) -> bool:
    """A remembered ``shutdown_date`` is a ``YYYY-MM-DD`` date or it is not used (the countdown line parses it)."""
    if not isinstance(value, str) or len(value) != 10:
        return False
    try:
        dt.date.fromisoformat(value)
    except ValueError:
        return False
    return True


def _fresh(at: float, now: float) -> bool:
    return now - TTL_S < at <= now + 5.0  # a stamp from the future (a clock set back) is no proof


def recent(cache_dir: str | os.PathLike[str] | None, fp: str, now: float | None = None) -> bool:
    """A probe with fingerprint ``fp`` passed within the last ``TTL_S`` seconds."""
    if cache_dir is None:
        return False
    at = _read(cache_dir)[0].get(fp)
    return at is not None and _fresh(at, time.time() if now is None else now)


def listing(cache_dir: str | os.PathLike[str] | None, fp: str, now: float | None = None) -> tuple[bool, str | None]:
    """``(found, shutdown_date)``: whether the probe with fingerprint ``fp`` passed within ``TTL_S`` with its model
    list read in the same moment, and the ``shutdown_date`` the list gave (None: it gave none)."""
    if cache_dir is None:
        return False, None
    probes, listed = _read(cache_dir)
    at = probes.get(fp)
    if at is None or fp not in listed or not _fresh(at, time.time() if now is None else now):
        return False, None
    return True, listed[fp]


def remember(cache_dir: str | os.PathLike[str] | None, passed: Iterable[Passed]) -> None:
    """Add ``passed`` to the record (expired entries dropped). Best effort: a cache that cannot be written is no
    error, and nothing is written when there is nothing new."""
    passed = list(passed)
    if cache_dir is None or not passed:
        return
    now = time.time()
    probes, listed = _read(cache_dir)
    kept = {k: v for k, v in probes.items() if _fresh(v, now)}
    for p in passed:
        if _fresh(p.at, now):
            kept[p.fingerprint] = p.at
            listed.pop(p.fingerprint, None)  # a new probe replaces what the list said with its own moment's
            if p.listed:
                listed[p.fingerprint] = p.shutdown_date
    newest = dict(sorted(kept.items(), key=lambda kv: kv[1])[-KEEP:])
    try:
        Path(cache_dir).mkdir(parents=True, exist_ok=True)
        fileio.write_atomic_json(_path(cache_dir), {"version": _VERSION, "probes": newest,
                                                    "listed": {k: v for k, v in listed.items() if k in newest}})
    except OSError:
        pass

