"""The pacer's figures for people: the status-line text, and ``pacing.json`` for ``run_status.py`` in another process.

The figures are ``rate_pacer.Pacer.pacing()``: one dict per budget key (``openai/gpt-4o``) with the limits, the
achieved and recent requests and tokens per minute, 429s and the time lost waiting (SPEC.md, "Rate limits").
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable, Mapping

from lme.core import fileio
from lme.core.facts import SCHEMA_VERSIONS
from lme.store.run_layout import PACING_FILE


def _amount(value: float) -> str:
    for scale, suffix in ((1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.3g}{suffix}"
    return f"{value:.0f}"


def status_text(pacing: list[Mapping[str, Any]]) -> str:
    """``openai/gpt-4o 291/300 rpm 1.94M/2M tpm throttled 85%``: the live rates against the limits, per key."""
    parts = []
    for entry in pacing:
        if not entry.get("requests"):
            continue
        rpm, tpm = entry.get("rpm_limit"), entry.get("tpm_limit")
        text = (f"{entry['key']} {_amount(entry.get('recent_rpm') or 0)}/{_amount(rpm) if rpm else '?'} rpm "
                f"{_amount(entry.get('recent_tpm') or 0)}/{_amount(tpm) if tpm else '?'} tpm")
        active = float(entry.get("active_s") or 0.0)
        if active > 0 and entry.get("throttled_s"):
            text += f" throttled {min(100.0, 100.0 * float(entry['throttled_s']) / active):.0f}%"
        if entry.get("rate_limited"):
            text += f" 429s {entry['rate_limited']}"
        parts.append(text)
    return "; ".join(parts)


class PacingFile:
    """``pacing.json`` in the run's directory: the pacer's figures while the run runs, for ``run_status.py`` in
    another process. A hint for people, written only once model calls were made (every ``every_s``)."""

    NAME = PACING_FILE

    def __init__(self, directory: Path, source: Callable[[], list[dict[str, Any]]], every_s: float = 5.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.path = Path(directory) / self.NAME
        self._source = source
        self._every_s = every_s
        self._clock = clock
        self._last = clock()

    def tick(self) -> None:
        if self._clock() - self._last >= self._every_s:
            self.write()

    def write(self) -> None:
        self._last = self._clock()
        entries = self._source()
        if not any(e.get("requests") for e in entries):
            return
        # atomic, and a failed write (a full disk) leaves no temporary file behind
        record = {"schemaVersion": SCHEMA_VERSIONS["run-pacing"], "at": time.time(), "pacing": entries}
        fileio.write_atomic_bytes(self.path, (json.dumps(record, indent=1) + "\n").encode("utf-8"))


def read_pacing_file(directory: Path) -> list[dict[str, Any]]:
    """The figures ``PacingFile`` last wrote in ``directory``, or [] (none, or unreadable)."""
    data = fileio.peek_json(Path(directory) / PacingFile.NAME)
    entries = data.get("pacing") if isinstance(data, dict) else None
    return [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []
