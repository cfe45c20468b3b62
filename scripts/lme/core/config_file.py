"""Where the project's config lives and the one reader of its JSON (stdlib only: setup runs it on the system
python that makes the venv).

``config.load_config`` validates what ``read_object`` reads; the commands that edit the file or read one block of
it (setup, the loop's stack and target, the loop's rules) read it raw here, each in its own words for a bad file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from lme.core import bounded_json
from lme.core import command_names
from lme.core import fileio
from lme.core.errors import UserError
from lme.core.facts import CONFIG_FILE, STATE_DIR


def config_path(project: Path) -> Path:
    """``<project>/.longmemeval-benchmarks/config.json``."""
    return Path(project) / STATE_DIR / CONFIG_FILE


def read_object(path: Path, *, fix: str, not_object: str, not_object_fix: str,
                limits: bounded_json.Limits = bounded_json.STATE) -> dict[str, Any] | None:
    """The config file's JSON object as written, or None when there is no file. Each failure is one UserError
    line: a directory or an unreadable file (in these words for every caller), a file that is not JSON (``fix``),
    one that holds no object (``not_object``, formatted with ``path`` and ``kind``, the JSON type it holds)."""
    path = Path(path)
    if not os.path.lexists(path):
        return None
    try:
        data = fileio.read_bytes(path, max_bytes=limits.document_bytes)
    except FileNotFoundError:  # removed meanwhile
        return None
    except IsADirectoryError:
        raise UserError(f"no config at {path}: it is a directory", fix=f"move it away, then run {command_names.SETUP}") \
            from None
    except OSError as e:
        raise UserError(f"cannot read {path} ({e.strerror or e})", fix=f"fix the file or re-run {command_names.SETUP}") \
            from None
    raw = bounded_json.loads(data, str(path), limits=limits, fix=fix)
    if not isinstance(raw, dict):
        raise UserError(not_object.format(path=path, kind=type(raw).__name__), fix=not_object_fix)
    return raw
