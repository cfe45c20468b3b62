"""The content fingerprint of one LongMemEval item, in its own stdlib-only module: setup (run by the bare system
python that makes the venv) checks a ``--dataset`` file with it, and ``dataset`` (which needs the venv's packages)
uses the same definition while it streams a file."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Mapping


def item_sha256(item: Mapping[str, Any]) -> str:
    """The content fingerprint of one dataset item (key order and spacing do not matter; every value does)."""
    blob = json.dumps(item, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode("ascii")).hexdigest()
