"""The verdict archive: official verdicts keyed by the exact judge prompt (sha256) and the judge model.

A hypothesis judged once by the official judge is never re-judged: before a judge call, the judge looks its
prompt's sha256 and model up in the project's archive ``.longmemeval-benchmarks/verdicts.jsonl``; a hit is used
instead of the call and stays official (``judgment.source: "archive"``). So verdicts survive the retirement of
``gpt-4o-2024-08-06`` from the API, and move between machines and teams as one JSONL file:

    python scripts/judge_shim.py export-verdicts --project . --out verdicts.jsonl   # every official verdict here
    python scripts/judge_shim.py import-verdicts verdicts.jsonl --project .          # use them in this project

One line per (prompt_sha256, model); the first verdict for a key is the official one and is never replaced:

    {"schemaVersion": "1.0.0", "prompt_sha256": "<64 hex>", "model": "gpt-4o-2024-08-06", "provider": "openai",
     "official": true, "label": true, "raw": "Yes", "question_id": "e47becba", "question_type": "multi-session",
     "question": "...", "answer": "...", "hypothesis": "...", "template_sha256": "...", "judged_at": "...",
     "source": "run <runId>"}
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any, Iterator

from lme.core import fileio
from lme.store import run_store
from lme.core.errors import UserError
from lme.core.facts import SCHEMA_VERSION, STATE_DIR, VERDICT_ARCHIVE, is_official_judge
from lme.core.run_records import ResultRow

ARCHIVE_NAME = VERDICT_ARCHIVE
_SHA = re.compile(r"^[0-9a-f]{64}$")
Key = tuple[str, str]
"""(prompt sha256, judge model)."""


def archive_path(project: str | Path) -> Path:
    return Path(project) / STATE_DIR / ARCHIVE_NAME


def _check_line(line: Any, where: str) -> dict[str, Any]:
    if not isinstance(line, dict):
        raise UserError(f"{where}: not a JSON object", fix="pass a file written by judge_shim.py export-verdicts")
    problems = []
    if not isinstance(line.get("prompt_sha256"), str) or not _SHA.match(line["prompt_sha256"]):
        problems.append("prompt_sha256 is not 64 hex digits")
    if not isinstance(line.get("model"), str) or not line["model"]:
        problems.append("no model")
    if not isinstance(line.get("label"), bool):
        problems.append("label is not true/false")
    if not isinstance(line.get("raw"), str):
        problems.append("raw is not a string")
    if line.get("official") is not True or not is_official_judge(line.get("provider"), line.get("model")):
        problems.append("not an official verdict (official true, openai/azure gpt-4o-2024-08-06)")
    if problems:
        raise UserError(f"{where}: {'; '.join(problems)}", fix="pass a file written by judge_shim.py export-verdicts")
    return line


def read_archive_file(path: Path) -> list[dict[str, Any]]:
    """Every line of an archive file, checked; a bad line is a UserError naming ``file:line``."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"verdict archive {path} not found", fix="pass the file judge_shim.py export-verdicts wrote")
    lines = []
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise UserError(f"cannot read verdict archive {path} ({err})") from None
    for number, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
        except ValueError as err:
            raise UserError(f"{path}:{number}: not JSON ({err})",
                            fix="pass a file written by judge_shim.py export-verdicts") from None
        lines.append(_check_line(line, f"{path}:{number}"))
    return lines


class VerdictArchive:
    """The project's archive, loaded once; ``lookup`` is thread-safe."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._entries: dict[Key, dict[str, Any]] = {}
        if self.path.is_file():
            for line in read_archive_file(self.path):
                self._entries.setdefault((line["prompt_sha256"], line["model"]), line)

    def __len__(self) -> int:
        return len(self._entries)

    def lookup(self, prompt_sha256: str, model: str) -> dict[str, Any] | None:
        return self._entries.get((prompt_sha256, model))


_OPEN: dict[str, tuple[tuple[int, int], VerdictArchive]] = {}
_OPEN_LOCK = threading.Lock()


def for_project(project: str | Path | None) -> VerdictArchive | None:
    """The project's archive (None when it has none), re-read only when the file changed."""
    if project is None:
        return None
    path = archive_path(project)
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    stamp = (stat.st_mtime_ns, stat.st_size)
    with _OPEN_LOCK:
        cached = _OPEN.get(str(path))
        if cached is None or cached[0] != stamp:
            cached = (stamp, VerdictArchive(path))
            _OPEN[str(path)] = cached
        return cached[1]


def verdict_line(row: ResultRow, source: str) -> dict[str, Any] | None:
    """The archive line for a result row, or None when the row holds no official verdict."""
    verdict = row.judgment
    if not row.judged or verdict is None or verdict.official is not True or not verdict.prompt_sha256:
        return None
    if not is_official_judge(verdict.provider, verdict.model):
        return None
    return {
        "schemaVersion": SCHEMA_VERSION, "prompt_sha256": verdict.prompt_sha256, "model": verdict.model,
        "provider": verdict.provider, "official": True, "label": bool(verdict.label),
        "raw": str(verdict.raw), "question_id": row.question_id,
        "question_type": row.question_type, "question": row.question, "answer": row.answer,
        "hypothesis": row.hypothesis, "template_sha256": verdict.template_sha256,
        "judged_at": row.finished_at, "source": source,
    }


def run_verdicts(runs_dir: Path) -> Iterator[dict[str, Any]]:
    """The official verdicts of every run (and shard) under ``runs_dir``, oldest run first."""
    for run in run_store.runs_with_meta(Path(runs_dir)):
        for row in run_store.iter_rows(run):
            line = verdict_line(row, f"run {run.name}")
            if line is not None:
                yield line


def export(project: Path, runs_dir: Path, out: Path) -> dict[str, int]:
    """Write every official verdict the project holds (its archive, then its runs) to ``out``; one line per key."""
    seen: dict[Key, dict[str, Any]] = {}
    current = archive_path(project)
    for line in (read_archive_file(current) if current.is_file() else []):
        seen.setdefault((line["prompt_sha256"], line["model"]), line)
    from_archive = len(seen)
    for line in run_verdicts(runs_dir):
        seen.setdefault((line["prompt_sha256"], line["model"]), line)
    data = "".join(json.dumps(line, ensure_ascii=False, sort_keys=True) + "\n" for line in seen.values())
    try:
        fileio.write_atomic_bytes(Path(out), data.encode("utf-8"))
    except OSError as err:
        raise UserError(f"cannot write {out}: {err.strerror or err}") from None
    return {"verdicts": len(seen), "from_archive": from_archive, "from_runs": len(seen) - from_archive}


def import_file(project: Path, source: Path) -> dict[str, int]:
    """Add the lines of ``source`` whose key the project's archive lacks; a known key keeps its first verdict."""
    incoming = read_archive_file(source)  # every line checked before anything is written
    target = archive_path(project)
    existing = read_archive_file(target) if target.is_file() else []
    keys = {(line["prompt_sha256"], line["model"]): line for line in existing}
    added = conflicts = already = 0
    new_lines = []
    for line in incoming:
        key = (line["prompt_sha256"], line["model"])
        if key in keys:
            already += 1
            conflicts += keys[key]["label"] != line["label"]
            continue
        keys[key] = line
        new_lines.append(line)
        added += 1
    if new_lines:
        data = "".join(json.dumps(line, ensure_ascii=False, sort_keys=True) + "\n" for line in [*existing, *new_lines])
        fileio.ensure_writable_dir(target.parent)
        fileio.write_atomic_bytes(target, data.encode("utf-8"))
    return {"added": added, "already_present": already, "conflicting_labels_kept_first": conflicts,
            "archive_verdicts": len(keys)}
