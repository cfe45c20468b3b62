"""The verdict archive: official verdicts keyed by the exact judge prompt (sha256) and the judge model.

A hypothesis judged once by the official judge is never re-judged: before a judge call, the judge looks its
prompt's sha256 and model up in the project's archive ``.longmemeval-benchmarks/verdicts.jsonl``; a hit is used
instead of the call and stays official (``judgment.source: "archive"``). So verdicts survive the retirement of
``gpt-4o-2024-08-06`` from the API, and move between machines and teams as one JSONL file:

    python scripts/judge_shim.py export-verdicts --project . --out verdicts.jsonl   # every official verdict here
    python scripts/judge_shim.py import-verdicts verdicts.jsonl --project .          # use them in this project

An archive file starts with a header line, then one line per (prompt_sha256, model):

    {"kind": "longmemeval-verdict-archive", "schemaVersion": "1.1.0", "count": 490, "sha256": "<of the lines below>",
     "upstream_commit": "9e0b455...", "template_sha256": ["..."], "exported_at": "...", "conflicts": [...],
     "skipped_not_official": 10}
    {"schemaVersion": "1.1.0", "prompt_sha256": "<64 hex>", "model": "gpt-4o-2024-08-06", "provider": "openai",
     "official": true, "label": true, "raw": "Yes", "endpoint_host": "api.openai.com",
     "request_shape": {"family": "upstream", "max_tokens": 10, "temperature": 0, "n": 1}, "question_id": "e47becba",
     "question_type": "multi-session", "question": "...", "answer": "...", "hypothesis": "...",
     "template_sha256": "...", "judged_at": "...", "source": "run <runId>"}

Only official verdicts by ``judge_official``'s rule are archived: the snapshot named by the response, upstream's
prompt and request shape, and an official endpoint host (``api.openai.com`` or an Azure OpenAI resource). Export
skips (and counts) the rest and states conflicts (two verdicts on one key with different labels: the first is
kept). Import verifies the header (count and sha256) and every line before anything is written. Files without a
header (older exports) stay readable; their lines carry no ``endpoint_host``, so the verdicts they give are not
official (``lookup`` serves them, ``judge_official`` labels them so): export them again from the project that
judged them, whose runs record the endpoint.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from pathlib import Path
from typing import Any, Iterator, Mapping

from lme.core import fileio
from lme.core.clock import utc_now
from lme.core.endpoint_urls import host_of, is_official_host
from lme.store import run_store
from lme.core.errors import UserError
from lme.core.facts import SCHEMA_VERSION, STATE_DIR, VERDICT_ARCHIVE, is_official_judge
from lme.core.run_records import ResultRow
from lme.judge.request_shapes import is_upstream_shape

ARCHIVE_NAME = VERDICT_ARCHIVE
HEADER_KIND = "longmemeval-verdict-archive"
ARCHIVE_VERSION = "1.1.0"
"""1.1: the header line, ``endpoint_host`` and ``request_shape`` on every line (1.0 files are still read)."""
_SHA = re.compile(r"^[0-9a-f]{64}$")
FIX = "pass a file written by judge_shim.py export-verdicts"
Key = tuple[str, str]
"""(prompt sha256, judge model)."""


def archive_path(project: str | Path) -> Path:
    return Path(project) / STATE_DIR / ARCHIVE_NAME


def _check_line(line: Any, where: str) -> dict[str, Any]:
    if not isinstance(line, dict):
        raise UserError(f"{where}: not a JSON object", fix=FIX)
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
    elif "endpoint_host" in line and not is_official_host(line.get("provider"), line.get("endpoint_host")):
        problems.append(f"not an official verdict (endpoint host {line.get('endpoint_host')!r} is not the official "
                        "judge's: api.openai.com or <resource>.openai.azure.com)")
    elif not is_upstream_shape(line.get("request_shape")):
        problems.append("not an official verdict (its request shape is not upstream's)")
    if problems:
        raise UserError(f"{where}: {'; '.join(problems)}", fix=FIX)
    return line


def _is_header(line: Any) -> bool:
    return isinstance(line, dict) and line.get("kind") == HEADER_KIND


def lines_blob(lines: list[Mapping[str, Any]]) -> bytes:
    """The verdict lines as an archive file holds them (what the header's sha256 covers)."""
    return "".join(json.dumps(line, ensure_ascii=False, sort_keys=True) + "\n" for line in lines).encode("utf-8")


def read_archive(path: Path) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """``(header or None, lines)`` of an archive file, everything checked: a bad line is a UserError naming
    ``file:line``; a header whose count or sha256 does not match the lines is refused."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"verdict archive {path} not found", fix="pass the file judge_shim.py export-verdicts wrote")
    try:
        data = path.read_bytes()
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise UserError(f"cannot read verdict archive {path} ({err})") from None
    header, lines, body_start = None, [], 0
    for number, raw in enumerate(text.splitlines(keepends=True), 1):
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
        except ValueError as err:
            raise UserError(f"{path}:{number}: not JSON ({err})", fix=FIX) from None
        if number == 1 and _is_header(line):
            header, body_start = line, len(raw.encode("utf-8"))
            continue
        lines.append(_check_line(line, f"{path}:{number}"))
    if header is not None:
        _verify(header, data[body_start:], len(lines), path)
    return header, lines


def _verify(header: Mapping[str, Any], body: bytes, count: int, path: Path) -> None:
    digest = hashlib.sha256(body).hexdigest()
    if header.get("count") != count:
        raise UserError(f"{path}: the header says {header.get('count')} verdicts, the file holds {count}: it was "
                        "cut or edited", fix="export the archive again (judge_shim.py export-verdicts)")
    if header.get("sha256") != digest:
        raise UserError(f"{path}: the verdict lines do not match the header's sha256 ({str(header.get('sha256'))[:12]}"
                        f", the lines hash to {digest[:12]}): the file was edited after export",
                        fix="export the archive again (judge_shim.py export-verdicts)")


def read_archive_file(path: Path) -> list[dict[str, Any]]:
    """Every verdict line of an archive file, checked (``read_archive`` without the header)."""
    return read_archive(path)[1]


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


def verdict_line(row: ResultRow, source: str, *, fallback_host: str | None = None) -> dict[str, Any] | None:
    """The archive line for a result row, or None when the row holds no official verdict by the rule above.

    ``fallback_host``: for a row written before verdicts recorded their host, the host its run recorded for the
    judge's provider (run-meta ``endpoints``)."""
    verdict = row.judgment
    if not row.judged or verdict is None or verdict.official is not True or not verdict.prompt_sha256:
        return None
    if not is_official_judge(verdict.provider, verdict.model) or verdict.successor:
        return None
    host = verdict.endpoint_host or fallback_host
    if not is_official_host(verdict.provider, host) or not is_upstream_shape(verdict.request_shape):
        return None
    return {
        "schemaVersion": ARCHIVE_VERSION, "prompt_sha256": verdict.prompt_sha256, "model": verdict.model,
        "provider": verdict.provider, "official": True, "label": bool(verdict.label),
        "raw": str(verdict.raw), "endpoint_host": host,
        "request_shape": dict(verdict.request_shape) if verdict.request_shape else None,
        "question_id": row.question_id,
        "question_type": row.question_type, "question": row.question, "answer": row.answer,
        "hypothesis": row.hypothesis, "template_sha256": verdict.template_sha256,
        "judged_at": row.finished_at, "source": source,
    }


def run_host(run: Path, provider: str | None) -> str | None:
    """The host run-meta recorded for ``provider`` (rows written before verdicts carried one)."""
    meta = run_store.peek_meta(run) or {}
    endpoints = meta.get("endpoints") if isinstance(meta.get("endpoints"), dict) else {}
    url = endpoints.get(provider) if provider else None
    return host_of(url) if isinstance(url, str) and url not in ("default", "unknown") else None


def runs_rows(runs_dir: Path) -> Iterator[tuple[Path, ResultRow]]:
    for run in run_store.runs_with_meta(Path(runs_dir)):
        for row in run_store.iter_rows(run):
            yield run, row


def run_verdicts(runs_dir: Path, skipped: list[int] | None = None) -> Iterator[dict[str, Any]]:
    """The official verdicts of every run (and shard) under ``runs_dir``, oldest run first; ``skipped`` (a one-item
    list) counts the judged rows left out as not official."""
    hosts: dict[tuple[Path, str], str | None] = {}
    for run, row in runs_rows(runs_dir):
        verdict = row.judgment
        if not row.judged or verdict is None:
            continue
        key = (run, verdict.provider)
        if key not in hosts:
            hosts[key] = run_host(run, verdict.provider)
        line = verdict_line(row, f"run {run.name}", fallback_host=hosts[key])
        if line is not None:
            yield line
        elif skipped is not None and verdict.provider != "offline":
            skipped[0] += 1


def _conflict(kept: Mapping[str, Any], other: Mapping[str, Any]) -> dict[str, Any]:
    return {"prompt_sha256": kept["prompt_sha256"], "model": kept["model"], "question_id": kept.get("question_id"),
            "kept": {"label": kept["label"], "source": kept.get("source")},
            "other": {"label": other["label"], "source": other.get("source")}}


def header_for(lines: list[Mapping[str, Any]], *, upstream_commit: str | None, conflicts: list[Mapping[str, Any]],
               skipped: int) -> dict[str, Any]:
    """The header line of an archive holding ``lines``."""
    return {"kind": HEADER_KIND, "schemaVersion": ARCHIVE_VERSION, "count": len(lines),
            "sha256": hashlib.sha256(lines_blob(list(lines))).hexdigest(), "upstream_commit": upstream_commit,
            "template_sha256": sorted({str(x["template_sha256"]) for x in lines if x.get("template_sha256")}),
            "exported_at": utc_now(), "conflicts": list(conflicts), "skipped_not_official": skipped}


def _write(path: Path, header: Mapping[str, Any], lines: list[Mapping[str, Any]]) -> None:
    data = (json.dumps(header, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8") + lines_blob(lines)
    fileio.write_atomic_bytes(path, data)


def export(project: Path, runs_dir: Path, out: Path, *, upstream_commit: str | None = None) -> dict[str, Any]:
    """Write every official verdict the project holds (its archive, then its runs) to ``out``, one line per key,
    after a header; verdicts that are not official are skipped and counted, conflicting labels on one key are
    stated (the first is kept)."""
    seen: dict[Key, dict[str, Any]] = {}
    conflicts: list[dict[str, Any]] = []
    current = archive_path(project)

    def add(line: dict[str, Any]) -> None:
        key = (line["prompt_sha256"], line["model"])
        kept = seen.setdefault(key, line)
        if kept is not line and kept["label"] != line["label"]:
            conflicts.append(_conflict(kept, line))

    for line in (read_archive_file(current) if current.is_file() else []):
        add(line)
    from_archive = len(seen)
    skipped = [0]
    for line in run_verdicts(runs_dir, skipped):
        add(line)
    lines = list(seen.values())
    header = header_for(lines, upstream_commit=upstream_commit, conflicts=conflicts, skipped=skipped[0])
    try:
        _write(Path(out), header, lines)
    except OSError as err:
        raise UserError(f"cannot write {out}: {err.strerror or err}") from None
    return {"verdicts": len(seen), "from_archive": from_archive, "from_runs": len(seen) - from_archive,
            "conflicts": len(conflicts), "conflicting_keys": conflicts[:20], "skipped_not_official": skipped[0],
            "sha256": header["sha256"], "upstream_commit": upstream_commit}


def import_file(project: Path, source: Path) -> dict[str, Any]:
    """Add the lines of ``source`` whose key the project's archive lacks; a known key keeps its first verdict."""
    header, incoming = read_archive(source)  # every line (and the header) checked before anything is written
    target = archive_path(project)
    existing = read_archive_file(target) if target.is_file() else []
    keys = {(line["prompt_sha256"], line["model"]): line for line in existing}
    added = already = 0
    conflicts: list[dict[str, Any]] = []
    new_lines = []
    for line in incoming:
        key = (line["prompt_sha256"], line["model"])
        if key in keys:
            already += 1
            if keys[key]["label"] != line["label"]:
                conflicts.append(_conflict(keys[key], line))
            continue
        keys[key] = line
        new_lines.append(line)
        added += 1
    if new_lines:
        lines = [*existing, *new_lines]
        fileio.ensure_writable_dir(target.parent)
        _write(target, header_for(lines, upstream_commit=(header or {}).get("upstream_commit"), conflicts=[],
                                  skipped=0), lines)
    return {"added": added, "already_present": already, "conflicting_labels_kept_first": len(conflicts),
            "archive_verdicts": len(keys), "verified_header": header is not None,
            "without_endpoint": sum(1 for line in new_lines if not line.get("endpoint_host"))}
