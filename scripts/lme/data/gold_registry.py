"""The known-defect registry (``references/known-gold-errors.json``): items whose gold or haystack was reported
defective upstream, each with its issue numbers, a status and the variants (and releases) it applies to.

Statuses: ``wrong`` (left out of the scorecard's second figure), ``disputed`` (listed, never left out),
``fixed-in-cleaned`` (wrong in the original release only: left out on an original-release file), ``structural``
(a haystack defect such as a session listed twice, #54: listed, never left out). The official figure always counts
every item; the data is never edited.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Mapping, Sequence

REGISTRY = Path(__file__).resolve().parents[3] / "references" / "known-gold-errors.json"
STATUSES = ("wrong", "disputed", "fixed-in-cleaned", "structural")
VARIANTS = ("_oracle", "_s", "_m")


def load(path: Path = REGISTRY) -> list[dict[str, Any]]:
    """Every entry of the registry file (see ``normalize``)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return normalize(data.get("items", data) if isinstance(data, dict) else data, where=str(path))


def normalize(items: Sequence[Any], where: str = "known-gold-errors") -> list[dict[str, Any]]:
    """Entries with every field; one of an older registry (no status, no variants) reads as ``wrong`` in every
    variant. An unknown status is a ValueError naming the entry."""
    out = []
    for raw in items:
        entry = dict(raw) if isinstance(raw, Mapping) else {"question_id": str(raw)}
        entry.setdefault("issues", [])
        entry.setdefault("status", "wrong")
        entry.setdefault("variants", list(VARIANTS))
        if entry["status"] not in STATUSES:
            raise ValueError(f"{where}: {entry.get('question_id')}: unknown status {entry['status']!r}")
        out.append(entry)
    return out


def applies(entry: Mapping[str, Any], variant: str | None, release: str | None) -> bool:
    """Whether the entry concerns a run of ``variant`` on a file of ``release`` (None = unknown: it may)."""
    if variant is not None and variant not in entry.get("variants", VARIANTS):
        return False
    releases = entry.get("releases")
    return not (releases and release is not None and release not in releases)


def excluded(entries: Sequence[Mapping[str, Any]], variant: str | None, release: str | None
             ) -> dict[str, Mapping[str, Any]]:
    """The entries the second figure leaves out: ``wrong`` ones, and ``fixed-in-cleaned`` ones on an
    original-release file, that apply to the run."""
    out = {}
    for entry in entries:
        if not applies(entry, variant, release):
            continue
        status = entry["status"]
        if status == "wrong" or (status == "fixed-in-cleaned" and release == "original"):
            out[str(entry["question_id"])] = entry
    return out


def listed(entries: Sequence[Mapping[str, Any]], variant: str | None, release: str | None,
           statuses: Sequence[str] = STATUSES) -> dict[str, Mapping[str, Any]]:
    """Entries of the given statuses that apply to the run, by question id."""
    return {str(e["question_id"]): e for e in entries if e["status"] in statuses and applies(e, variant, release)}


def identity(entries: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Which registry a figure used: the sha256 of its normalized entries (key order and file layout aside) and
    how many it has; metrics.json records it so a rescore with another registry can say the figure moved."""
    blob = json.dumps(sorted((dict(e) for e in entries), key=lambda e: str(e.get("question_id"))), sort_keys=True,
                      separators=(",", ":"), ensure_ascii=False)
    return {"sha256": hashlib.sha256(blob.encode("utf-8")).hexdigest(), "items": len(entries)}
