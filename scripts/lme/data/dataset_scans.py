"""Remember a dataset file's scan (manifest, sha256, recognition) so a new run on a file scanned before does not read
it again: the ``_s`` file is 257 MB of JSON and its scan takes about 4 s, once per new run (twice with
``--background``).

An entry is keyed by the file's real path, size and modification time, and by the bytes of the code and reference
data that make a scan (``dataset.py``, ``fingerprints.py``, ``run_state.py``, the item schema, the shipped
fingerprints); anything else is a miss and the file is scanned as before. Entries are written only once a run was
really created from the scan (a refused run writes nothing), under ``<cache_dir>/dataset-scans/``, atomically; an
unreadable entry is a miss.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from lme.core import fileio

SCRIPTS = Path(__file__).resolve().parents[2]
SCANNER = (
    SCRIPTS / "lme" / "data" / "dataset.py",
    SCRIPTS / "lme" / "data" / "fingerprints.py",
    SCRIPTS / "lme" / "run" / "state.py",
    SCRIPTS.parent / "references" / "schemas" / "item.schema.json",
    SCRIPTS.parent / "references" / "dataset-fingerprints.json",
)
FOLDER = "dataset-scans"


def _key(dataset_path: str) -> dict[str, Any] | None:
    try:
        real = os.path.realpath(dataset_path)
        st = os.stat(real)
    except OSError:
        return None
    code = hashlib.sha256()
    for path in SCANNER:
        code.update(path.read_bytes() if path.is_file() else b"-")
    return {"path": real, "given": str(dataset_path), "bytes": st.st_size, "mtime_ns": st.st_mtime_ns,
            "code": code.hexdigest()}


def _entry(cache_dir: str, key: dict[str, Any]) -> Path:
    name = hashlib.sha256(key["path"].encode("utf-8")).hexdigest()[:32]
    return Path(cache_dir) / FOLDER / f"{name}.json"


def load(cache_dir: str, dataset_path: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """``(manifest, dataset description)`` of an earlier scan of this very file, else None."""
    key = _key(dataset_path)
    if key is None:
        return None
    stored = fileio.peek_json(_entry(cache_dir, key))
    if not isinstance(stored, dict) or stored.get("key") != key:
        return None
    manifest, described = stored.get("manifest"), stored.get("dataset")
    if not isinstance(manifest, dict) or not isinstance(described, dict) or not manifest.get("n_total"):
        return None
    return manifest, described


def store(cache_dir: str, dataset_path: str, scanned: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """Keep ``scanned`` (the manifest's JSON form and the dataset's description) for the next run on this file.
    Best effort: a cache that cannot be written is no error."""
    key = _key(dataset_path)
    if key is None:
        return
    manifest, described = scanned
    try:
        path = _entry(cache_dir, key)
        fileio.make_dirs(path.parent)
        fileio.write_atomic_json(path, {"key": key, "manifest": manifest, "dataset": described})
    except (OSError, fileio.SymlinkRefused):
        pass
