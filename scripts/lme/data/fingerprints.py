"""Recognise a LongMemEval file by its content, not its bytes: one sha256 per item, compared with the releases we
can vouch for (``references/dataset-fingerprints.json``).

The command (its parser, ``main()`` and help text) is ``lme/cli/fingerprints.py``."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, Sequence

from lme.core.facts import FILES

REFERENCE = Path(__file__).resolve().parents[3] / "references" / "dataset-fingerprints.json"
SHOWN_IDS = 10
"""Ids named in a one-line summary; the recognition record lists them all."""


@lru_cache(maxsize=4)
def _load(path: str) -> tuple[dict[str, Any], ...]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return tuple(data["releases"])


def reference_sets(path: Path = REFERENCE) -> tuple[dict[str, Any], ...]:
    """The shipped fingerprint sets: ``{release, variant, file, file_sha256, items, unknown, item_sha256}``."""
    return _load(str(path))


def _compare(hashes: Mapping[str, str], ref: Mapping[str, Any]) -> dict[str, Any]:
    known: Mapping[str, str] = ref["item_sha256"]
    unknown_ids = set(ref.get("unknown") or ())
    matched = sum(1 for qid, sha in hashes.items() if known.get(qid) == sha)
    return {
        "release": ref["release"],
        "variant": ref["variant"],
        "file": ref["file"],
        "items": int(ref["items"]),
        "vouched": len(known),
        "matched": matched,
        "differing": sorted(qid for qid, sha in hashes.items() if qid in known and known[qid] != sha),
        "unknown": sorted(qid for qid in hashes if qid in unknown_ids),
        "missing": sorted(qid for qid in [*known, *unknown_ids] if qid not in hashes),
        "extra": sorted(qid for qid in hashes if qid not in known and qid not in unknown_ids),
    }


def _names(ids: Sequence[str]) -> str:
    shown = ", ".join(ids[:SHOWN_IDS])
    return shown + (f" and {len(ids) - SHOWN_IDS} more" if len(ids) > SHOWN_IDS else "")


def summary(rec: Mapping[str, Any]) -> str:
    """One line for people: which release the file matches, on how many items, and which items differ."""
    if rec.get("release") is None and not rec.get("matched"):
        return f"no item matches a shipped fingerprint ({rec.get('file_items', 0)} items)"
    if rec.get("exact_file"):
        head = f"the published {rec['file']} byte for byte"
    else:
        head = f"matches the {rec['reference_release']} release ({rec['variant']}) on {rec['matched']}/{rec['items']} items"
    parts = [head]
    if rec["differing"]:
        parts.append(f"differs on {len(rec['differing'])}: {_names(rec['differing'])}")
    if rec["unknown"]:
        parts.append(f"no fingerprint shipped for {_names(rec['unknown'])}")
    if rec["missing"]:
        parts.append(f"not in this file: {_names(rec['missing'])}")
    if rec["extra"]:
        parts.append(f"items outside the release: {_names(rec['extra'])}")
    if rec.get("release") and rec["release"] != rec["reference_release"]:
        parts.append(f"recorded as the {rec['release']} release ({rec['release_basis']})")
    return "; ".join(parts)


def recognize(hashes: Mapping[str, str], file_sha256: str | None = None, *, file_name: str | None = None,
              original_names: Sequence[str] = ()) -> dict[str, Any]:
    """Compare a file's ``{question_id: item sha256}`` with every shipped set; the best match, as a record.

    ``release`` is ``cleaned`` when every item with a shipped fingerprint matches (or the whole file is the
    published one); ``original`` when items differ and the file carries an original-release name
    (``original_names``), since no original-release fingerprints are shipped; otherwise None.
    """
    sets = reference_sets()
    compared = [_compare(hashes, ref) for ref in sets]
    exact = [ref for ref in sets if file_sha256 and ref.get("file_sha256") == file_sha256]
    best_index = max(range(len(compared)), key=lambda i: (bool(exact and sets[i] is exact[0]),
                                                          compared[i]["matched"])) if compared else None
    if best_index is None or (compared[best_index]["matched"] == 0 and not exact):
        rec: dict[str, Any] = {"release": None, "release_basis": None, "reference_release": None, "variant": None,
                               "file": None, "items": 0, "vouched": 0, "matched": 0, "differing": [],
                               "unknown": [], "missing": [], "extra": sorted(hashes), "exact_file": False,
                               "file_items": len(hashes)}
        rec["summary"] = summary(rec)
        return rec
    best = compared[best_index]
    exact_file = bool(exact) and sets[best_index] is exact[0]
    clean = not best["differing"] and not best["extra"]
    if exact_file or clean:
        release, basis = best["release"], "published file sha256" if exact_file else "item fingerprints"
    elif file_name and file_name in original_names:
        release, basis = "original", "file name (no original-release fingerprints are shipped)"
    else:
        release, basis = None, None
    rec = {"release": release, "release_basis": basis, "reference_release": best["release"], **{
        k: v for k, v in best.items() if k != "release"}, "exact_file": exact_file, "file_items": len(hashes)}
    if exact_file:  # the published bytes: every item is the release's, fingerprinted or not
        rec["matched"] = rec["items"]
        rec["unknown"] = []
    rec["summary"] = summary(rec)
    return rec


def recognize_file(path: str | Path, hashes: Mapping[str, str], file_sha256: str | None) -> dict[str, Any]:
    """``recognize`` for a dataset file: its name (compression suffix dropped) counts as an original-release name
    only when the original release alone uses it (``longmemeval_s.json``, not ``longmemeval_oracle.json``)."""
    name = Path(path).name
    for suffix in (".xz", ".gz"):
        name = name.removesuffix(suffix)
    original_only = tuple(sorted(set(FILES["original"].values()) - set(FILES["cleaned"].values())))
    return recognize(hashes, file_sha256, file_name=name, original_names=original_only)
