"""Whether a run's scorecard is still current: a fingerprint of everything scoring reads, kept in metrics.json.

Scoring a 500-item run and building its report.html takes seconds (the report streams the dataset); resuming a
finished run changes none of it. The fingerprint covers:

- the run's own files, shards included (size and modification time: the logs only grow), less the outputs and
  the files only people read (``run.log``, ``pacing.json``...); ``run-meta.json`` by content, less the fields every
  invocation rewrites (``VOLATILE_META``);
- the dataset file the run names, and the state files (judge stability, judge agreement, the loop's decisions, the
  config) of the project the run is scored with (``run_store.scoring_project``) and of the command's project, and
  the loop history;
- the scoring code and its reference data, by their bytes (a new plugin version rescores);
- the options that shape the outputs (``--n-total``, variant, run id, charts, PNGs, html).

Each output records the fingerprint it was made from (a page in a stamp, ``stamped``); ``current`` holds only when
every output records that of the inputs as they are now, since a kill between two writes leaves some new and some
old (``references/SPEC.md``, "Rate limits", the paragraph on ``fingerprint``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any, Mapping

from lme.core import fileio
from lme.core.facts import HISTORY_FILE, STATE_DIR
from lme.store import run_store
from lme.store.run_layout import (
    CHARTS_DIR,
    COMPARE_PAGE_PREFIX,
    LOG_FILE,
    META_FILE,
    METRICS_FILE,
    PACING_FILE,
    PER_TYPE_CHART,
    PER_TYPE_SVG,
    REPORT_FILE,
    SCORECARD_FILE,
    WORKER_FILE,
)

SCRIPTS = Path(__file__).resolve().parents[2]
REFERENCES = SCRIPTS.parent / "references"
VOLATILE_META = ("finished_at", "duration_seconds", "invocations", "limiter", "pacing", "retries", "exit_status")
"""run-meta fields a resume rewrites without changing any result (the scorecard shows none of them)."""
OUTPUTS = (METRICS_FILE, SCORECARD_FILE, REPORT_FILE)
NOT_INPUTS = (*OUTPUTS, LOG_FILE, PACING_FILE, WORKER_FILE)
"""Files in a run directory that scoring does not read (besides charts/, compare pages and dot files: the lock,
temporary files)."""
_STAMP = "score-fingerprint"
_STAMPED = re.compile(_STAMP.encode("ascii") + rb": ([0-9a-f]{64})")
_HEAD, _TAIL = 4096, 512


def _stat(path: Path) -> list[Any]:
    path = Path(os.path.abspath(path))  # one name for one file: the run's own scoring and ``--project .`` agree
    try:
        st = path.stat()
    except OSError:
        return [str(path), None]
    return [str(path), st.st_size, st.st_mtime_ns]


def _meta(path: Path) -> Any:
    meta = fileio.peek_json(path)
    if meta is None:
        return _stat(path)
    if not isinstance(meta, dict):
        return _stat(path)
    return {k: v for k, v in meta.items() if k not in VOLATILE_META}


def _run_files(run_dir: Path) -> list[Any]:
    out: list[Any] = []
    for path in sorted(run_dir.rglob("*")):
        rel = path.relative_to(run_dir)
        if not path.is_file() or rel.parts[0] == CHARTS_DIR or path.name.startswith("."):
            continue
        if path.name in NOT_INPUTS or (path.name.startswith(COMPARE_PAGE_PREFIX) and path.suffix == ".html"):
            continue
        out.append([str(rel), _meta(path)] if path.name == META_FILE else _stat(path))
    return out


def _code() -> str:
    digest = hashlib.sha256()
    code = [p for p in SCRIPTS.rglob("*") if p.suffix in (".py", ".js", ".css") and "__pycache__" not in p.parts]
    for path in sorted([*code, *REFERENCES.glob("*.json"), *(REFERENCES / "schemas").glob("*.json")]):
        if path.is_file():
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def fingerprint(run_dir: Path, project: Path | None, options: Mapping[str, Any]) -> str:
    """The sha256 of what scoring ``run_dir`` with ``options`` reads (see the module docstring)."""
    run_dir = Path(run_dir).resolve()
    meta = _meta(run_dir / META_FILE)
    dataset = ((meta.get("dataset") or {}).get("path") if isinstance(meta, dict) else None)
    state_dirs = {(Path(p) / STATE_DIR).resolve() for p in (run_store.scoring_project(run_dir), project)
                  if p is not None}
    state = sorted(_stat(p) for d in state_dirs if d.is_dir() for p in d.iterdir() if p.is_file())
    history = [] if project is None else [_stat(Path(project) / HISTORY_FILE)]
    blob = json.dumps({"run": _run_files(run_dir), "dataset": _stat(Path(dataset)) if dataset else None,
                       "state": state, "history": history, "code": _code(), "options": dict(options)},
                      sort_keys=True, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def stamp(fp: str) -> str:
    """What a page records of the fingerprint ``fp`` of the inputs it was made from."""
    return f"{_STAMP}: {fp}"


def stamped(text: str, fp: str | None) -> str:
    """``text`` (Markdown, HTML or SVG) ending with ``stamp(fp)`` in a comment line; ``text`` itself when ``fp`` is
    None (a scoring that is never reused: ``--history``, ``--compare``)."""
    if fp is None:
        return text
    if not text.endswith("\n"):
        text += "\n"
    return f"{text}<!-- {stamp(fp)} -->\n"


def unstamped(text: str) -> str:
    """``text`` without the stamp ``stamped`` added (what is printed of a page: the stamp is for the files)."""
    body, newline, last = text.rstrip("\n").rpartition("\n")
    return body + newline if last.startswith(f"<!-- {_STAMP}: ") else text


def recorded(path: Path) -> str | None:
    """The fingerprint the page at ``path`` records (None: missing, or it records none). Reads its first 4 KiB (a
    PNG's text chunk) and last 512 bytes (a text page's last line), never the whole page."""
    try:
        with fileio.open_file(path) as page:
            blob = page.read(_HEAD)
            size = os.fstat(page.fileno()).st_size
            if size > _HEAD:
                page.seek(max(_HEAD, size - _TAIL))
                blob += page.read(_TAIL)
    except OSError:
        return None
    found = _STAMPED.findall(blob)  # the last: a page's own stamp comes after anything its text quotes
    return found[-1].decode("ascii") if found else None


def current(run_dir: Path, fp: str, *, html: bool, charts: bool, png: bool = False) -> bool:
    """Every output in ``run_dir`` is still there and was made from inputs with fingerprint ``fp``: metrics.json,
    scorecard.md, and as asked report.html and the per-type charts."""
    run_dir = Path(run_dir)
    written = fileio.peek_json(run_dir / METRICS_FILE)
    if not isinstance(written, dict) or written.get("fingerprint") != fp:
        return False
    pages = [SCORECARD_FILE, *([REPORT_FILE] if html else [])]
    if charts:
        pages += [f"{CHARTS_DIR}/{name}" for name in ((PER_TYPE_SVG, PER_TYPE_CHART) if png else (PER_TYPE_SVG,))]
    return all(recorded(run_dir / page) == fp for page in pages)
