"""The verdict archive: official verdicts keyed by the exact judge prompt (sha256) and the judge model.

A hypothesis the official judge judged once is never re-judged, so verdicts outlive ``gpt-4o-2024-08-06``'s
retirement and travel as one JSONL file. SPEC.md "Judge continuity" holds the contract: what is archived and when,
the line format and ``origin``, conflicts (scored by the majority, a tie not correct), exports and imports.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from lme.core import fileio, migrations, schemas
from lme.core.clock import utc_now, utc_now_precise
from lme.core.endpoint_urls import is_official_host
from lme.core.errors import UserError
from lme.core.facts import SCHEMA_VERSIONS, STATE_DIR, VERDICT_ARCHIVE, is_official_judge
from lme.core.run_records import ResultRow
from lme.judge import verdict_sources
from lme.judge.request_shapes import is_upstream_shape
from lme.store import run_store

LOCK_NAME = ".verdicts.lock"
BACKFILL_MARK = ".verdicts-backfilled"
HEADER_KIND = "longmemeval-verdict-archive"
ARCHIVE_VERSION = SCHEMA_VERSIONS["verdict-archive"]
"""1.2: ``verdict_id`` and ``origin`` on every line, ``raw`` null for a label-only verdict, the project's archive
appended to by every run; 1.1: the header line, ``endpoint_host`` and ``request_shape`` (1.0 and 1.1 are read)."""
CONFLICT_RULE = "majority of the official verdicts; a tie is not correct"
_SHA = re.compile(r"^[0-9a-f]{64}$")
FIX = "pass a file written by judge_shim.py export-verdicts, or upstream's *.eval-results-gpt-4o file"
Key = tuple[str, str]
"""(prompt sha256, judge model)."""


def archive_path(project: str | Path) -> Path:
    return Path(project) / STATE_DIR / VERDICT_ARCHIVE


# --------------------------------------------------------------------------- lines


def verdict_id(line: Mapping[str, Any]) -> str:
    """The act of judging a line records: its own ``verdict_id``, else one computed from what it says."""
    given = line.get("verdict_id")
    if isinstance(given, str) and _SHA.match(given):
        return given
    parts = [line.get(k) for k in ("prompt_sha256", "model", "label", "raw", "judged_at", "source")]
    return hashlib.sha256(json.dumps(parts, ensure_ascii=False).encode("utf-8")).hexdigest()


def origin_of(line: Mapping[str, Any]) -> dict[str, Any]:
    """The line's ``origin`` (an older line's is set by ``migrations`` as the archive is read)."""
    return dict(line["origin"])


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
    origin = line.get("origin") if isinstance(line.get("origin"), Mapping) else {}
    if not (isinstance(line.get("raw"), str) or (line.get("raw") is None and origin.get("label_only"))):
        problems.append("raw is not a string")
    if line.get("official") is not True or not is_official_judge(line.get("provider"), line.get("model")):
        problems.append("not an official verdict (official true, openai/azure gpt-4o-2024-08-06)")
    elif line.get("endpoint_host") is not None and not is_official_host(line.get("provider"), line["endpoint_host"]):
        problems.append(f"not an official verdict (endpoint host {line.get('endpoint_host')!r} is not the official "
                        "judge's: api.openai.com or <resource>.openai.azure.com)")
    elif not is_upstream_shape(line.get("request_shape")):
        problems.append("not an official verdict (its request shape is not upstream's)")
    if problems and schemas.from_newer_version(line, ARCHIVE_VERSION):
        raise schemas.newer_version_error(where, line["schemaVersion"], ARCHIVE_VERSION)
    if problems:
        raise UserError(f"{where}: {'; '.join(problems)}", fix=FIX)
    return line


def _is_header(line: Any) -> bool:
    return isinstance(line, dict) and line.get("kind") == HEADER_KIND


def lines_blob(lines: Iterable[Mapping[str, Any]]) -> bytes:
    """The verdict lines as an archive file holds them (what an export header's sha256 covers)."""
    return "".join(json.dumps(line, ensure_ascii=False, sort_keys=True) + "\n" for line in lines).encode("utf-8")


def read_archive(path: Path) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """``(header or None, lines)`` of an archive file, everything checked: a bad line is a UserError naming
    ``file:line``; a header whose count or sha256 does not match the lines is refused."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"verdict archive {path} not found", fix="pass the file judge_shim.py export-verdicts wrote")
    try:
        data = fileio.read_bytes(path, follow_symlinks=True)  # a file the user names
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


# --------------------------------------------------------------------------- the project's archive


@dataclass
class _Votes:
    """The verdicts the archive holds for one key: a count per label and the first line of each label (a line
    made here preferred: it is the one a lookup shows)."""

    yes: int = 0
    no: int = 0
    first: dict[bool, dict[str, Any]] = field(default_factory=dict)

    def add(self, line: dict[str, Any]) -> None:
        label = bool(line["label"])
        if label:
            self.yes += 1
        else:
            self.no += 1
        kept = self.first.get(label)
        if kept is None or (origin_of(kept)["kind"] != "made" and origin_of(line)["kind"] == "made"):
            self.first[label] = line

    @property
    def label(self) -> bool:
        """The majority label; a tie is not correct."""
        return self.yes > self.no

    def verdict(self) -> dict[str, Any]:
        """The line a lookup serves: the majority label's, with ``conflict`` when both labels were given."""
        line = dict(self.first[self.label])
        if self.yes and self.no:
            line["conflict"] = {"yes": self.yes, "no": self.no, "rule": CONFLICT_RULE}
        return line


class VerdictArchive:
    """The project's archive, read incrementally (what other processes appended is read at the next lookup) and
    appended to under its lock. Thread-safe."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._votes: dict[Key, _Votes] = {}
        self._ids: set[str] = set()
        self._offset = 0
        self._identity: tuple[int, int] | None = None
        self._has_header = False
        with self._lock:
            self._catch_up()

    # ------------------------------------------------------------------ reading

    def _catch_up(self) -> None:
        """Read what was appended since the last read (a replaced or shortened file is read again whole)."""
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            self._reset(None)
            return
        identity = (stat.st_dev, stat.st_ino)
        if identity != self._identity or stat.st_size < self._offset:
            self._reset(identity)
        if stat.st_size == self._offset:
            return
        with fileio.open_file(self.path, "rb") as fh:
            fh.seek(self._offset)
            data = fh.read()
        end = data.rfind(b"\n") + 1  # a torn last line (a crash mid-append) is read once it is whole
        number = self._lines_read
        for raw in data[:end].splitlines():
            number += 1
            if not raw.strip():
                continue
            try:
                line = json.loads(raw)
            except ValueError as err:
                raise UserError(f"{self.path}:{number}: not JSON ({err})",
                                fix="restore the file from a copy, or delete that line") from None
            if number == 1 and _is_header(line):
                self._has_header = True
                continue
            self._add(migrations.upgrade("verdict-archive", _check_line(line, f"{self.path}:{number}")))
        self._lines_read = number
        self._offset += end

    def _reset(self, identity: tuple[int, int] | None) -> None:
        self._votes, self._ids, self._offset, self._lines_read = {}, set(), 0, 0
        self._identity, self._has_header = identity, False

    def _add(self, line: dict[str, Any]) -> bool:
        vid = verdict_id(line)
        if vid in self._ids:
            return False
        self._ids.add(vid)
        self._votes.setdefault((line["prompt_sha256"], line["model"]), _Votes()).add(line)
        return True

    def __len__(self) -> int:
        with self._lock:
            self._catch_up()
            return len(self._votes)

    def lookup(self, prompt_sha256: str, model: str) -> dict[str, Any] | None:
        """The verdict the archive gives this prompt (see ``_Votes.verdict``), or None."""
        with self._lock:
            self._catch_up()
            votes = self._votes.get((prompt_sha256, model))
            return None if votes is None else votes.verdict()

    def conflicts(self) -> list[dict[str, Any]]:
        """The prompts with official verdicts of both labels: ``{prompt_sha256, model, question_id, yes, no}``."""
        with self._lock:
            self._catch_up()
            return [{"prompt_sha256": key[0], "model": key[1],
                     "question_id": next(iter(votes.first.values())).get("question_id"),
                     "yes": votes.yes, "no": votes.no}
                    for key, votes in self._votes.items() if votes.yes and votes.no]

    def origins(self) -> dict[str, Any]:
        """How many prompts each origin gives a verdict for: ``{made: N, imported: {file name: N}}``."""
        made, imported = 0, {}
        with self._lock:
            self._catch_up()
            for votes in self._votes.values():
                origin = origin_of(votes.verdict())
                if origin["kind"] == "made":
                    made += 1
                else:
                    name = str(origin.get("file") or "an earlier import")
                    imported[name] = imported.get(name, 0) + 1
        return {"made": made, "imported": dict(sorted(imported.items()))}

    # ------------------------------------------------------------------ writing

    def add_made(self, line: dict[str, Any]) -> bool:
        """Archive a verdict this project's judge made (``made_line``), unless the archive holds its prompt with
        the same label already; True when it was appended."""
        return self.add_made_lines([line]) == 1

    def add_made_lines(self, lines: Iterable[dict[str, Any]]) -> int:
        """``add_made`` for many lines in one append (the lock is taken only when some line is new); -> added."""
        lines = list(lines)
        with self._lock:
            self._catch_up()
            if not self._new_made(lines):
                return 0
            with self._write_lock():
                self._catch_up()  # another process may have appended since
                new = self._new_made(lines)
                if new:
                    self._append(new)
                return len(new)

    def _new_made(self, lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The lines whose prompt the archive (or an earlier line of ``lines``) lacks with their label."""
        seen: set[tuple[str, str, bool]] = set()
        new = []
        for line in lines:
            key = (line["prompt_sha256"], line["model"], bool(line["label"]))
            votes = self._votes.get(key[:2])
            if key in seen or (votes is not None and (votes.yes if key[2] else votes.no)):
                continue
            seen.add(key)
            new.append(line)
        return new

    def add_lines(self, lines: Iterable[dict[str, Any]]) -> tuple[int, int]:
        """Append the lines whose act of judging the archive lacks -> (added, already present)."""
        with self._lock, self._write_lock():
            self._catch_up()
            new, pending, already = [], set(), 0
            for line in lines:
                vid = verdict_id(line)
                if vid in self._ids or vid in pending:
                    already += 1
                    continue
                pending.add(vid)
                new.append({**line, "verdict_id": vid})
            if new:
                self._append(new)
            return len(new), already

    def _write_lock(self) -> fileio.FileLock:
        return fileio.FileLock(self.path.parent, LOCK_NAME, wait=True)

    def _append(self, lines: list[dict[str, Any]]) -> None:
        if self._has_header:
            self._drop_header()
        data = b"".join(fileio.json_line({**line, "verdict_id": verdict_id(line)}) for line in lines)
        fileio.append_bytes(self.path, data, repair=fileio.repair_tail)
        for line in lines:
            self._add({**line, "verdict_id": verdict_id(line)})
        self._offset = os.stat(self.path).st_size
        self._lines_read += len(lines)

    def _drop_header(self) -> None:
        """An archive an older version wrote whole (header + lines) becomes append-only: its lines without the
        header, replaced atomically (the header's sha256 could not hold once a line is appended)."""
        _, lines = read_archive(self.path)
        fileio.write_atomic_bytes(self.path, b"".join(fileio.json_line(line) for line in lines))
        fileio.APPENDS.forget(self.path)
        stat = os.stat(self.path)
        self._reset((stat.st_dev, stat.st_ino))
        self._catch_up()


_OPEN: dict[str, VerdictArchive] = {}
_OPEN_LOCK = threading.Lock()


def for_project(project: str | Path | None) -> VerdictArchive | None:
    """The project's archive (empty when it has no file yet; None without a project), one object per path in a
    process, kept current by reading what was appended."""
    if project is None:
        return None
    path = archive_path(project)
    with _OPEN_LOCK:
        archive = _OPEN.get(str(path))
        if archive is None:
            archive = VerdictArchive(path)
            _OPEN[str(path)] = archive
        return archive


def refuse_if_newer(project: str | Path | None) -> None:
    """Refuse (``schemas.NewerVersionError``, one line) a project archive with a line a newer version wrote that
    this one cannot read, before a run writes anything: every item would meet it. Any other fault of the archive
    is left to the reads that meet it, as before."""
    archive = for_project(project)
    try:
        len(archive or ())
    except schemas.NewerVersionError:
        raise
    except UserError:
        pass


# --------------------------------------------------------------------------- verdicts made here


def made_line(item: Any, verdict: Any, by: str) -> dict[str, Any] | None:
    """The archive line of an official verdict this project's judge just made (``item``: the judged question and
    hypothesis, ``judge_official.Judged``; ``by``: ``run <runId>`` or ``judge_shim <file>``), or None when the
    verdict is not an official one made by a call (or served by the call cache)."""
    if verdict.official is not True or verdict.successor or verdict.source not in ("call", "cache"):
        return None
    if not verdict.prompt_sha256 or not is_official_host(verdict.provider, verdict.endpoint_host):
        return None
    return _line(verdict, item, raw=str(verdict.raw), host=verdict.endpoint_host, judged_at=utc_now_precise(),
                 source=by, origin={"kind": "made", "by": by}, act=hashlib.sha256(os.urandom(32)).hexdigest())


def verdict_line(row: ResultRow, source: str, *, endpoints: Mapping[str, Any] | None = None
                 ) -> dict[str, Any] | None:
    """The archive line for a result row, or None when the row holds no official verdict, by the scorecard's rule
    (``verdict_sources.classify``: never the row's stored flag alone), or none made where its run recorded.

    ``endpoints``: the run's run-meta ``endpoints``, the host of a row written before verdicts recorded theirs. A
    row with no host anywhere stays out (unlike the scorecard, which trusts it: the archive serves its lines as
    official to later runs); one whose verdict came from the archive keeps that line's origin (it made none)."""
    verdict = row.judgment
    if not row.judged or verdict is None or not verdict.prompt_sha256:
        return None
    host, why = verdict_sources.classify(verdict, endpoints)
    archived = verdict.source == "archive"
    if why is not None or (host is None and not archived):
        return None
    origin = dict(verdict.origin) if archived and verdict.origin else {"kind": "made", "by": source}
    return _line(verdict, row, raw=verdict.raw, host=host, judged_at=row.finished_at, source=source, origin=origin)


def _line(verdict: Any, item: Any, *, raw: str | None, host: str | None, judged_at: str, source: str,
          origin: Mapping[str, Any], act: str | None = None) -> dict[str, Any]:
    """An archive line: the verdict's facts and the judged item's (a ``Judged`` or a ``ResultRow``); ``act``: the
    ``verdict_id`` of a verdict made by a call (one act of judging)."""
    return {
        "schemaVersion": ARCHIVE_VERSION, **({"verdict_id": act} if act else {}),
        "prompt_sha256": verdict.prompt_sha256, "model": verdict.model,
        "provider": verdict.provider, "official": True, "label": bool(verdict.label), "raw": raw,
        "endpoint_host": host, "request_shape": dict(verdict.request_shape) if verdict.request_shape else None,
        "question_id": item.question_id, "question_type": item.question_type, "question": item.question,
        "answer": item.answer, "hypothesis": item.hypothesis, "template_sha256": verdict.template_sha256,
        "judged_at": judged_at, "source": source, "origin": dict(origin),
    }


def run_endpoints(run: Path) -> Mapping[str, Any] | None:
    """The endpoints run-meta recorded (``verdict_line``'s ``endpoints``), None when it recorded none."""
    meta = run_store.peek_meta(run) or {}
    return meta.get("endpoints") if isinstance(meta.get("endpoints"), dict) else None


def runs_rows(runs_dir: Path, only: set[str] | None = None) -> Iterator[tuple[Path, ResultRow]]:
    """Every row of every run (and shard) under ``runs_dir``, oldest run first (``only``: these run ids)."""
    for run in run_store.runs_with_meta(Path(runs_dir)):
        if only is None or run.name in only:
            for row in run_store.iter_rows(run):
                yield run, row


def run_verdicts(runs_dir: Path, skipped: list[int] | None = None, *, made_only: bool = False,
                 only: set[str] | None = None) -> Iterator[dict[str, Any]]:
    """The official verdicts of every run (and shard) under ``runs_dir``, oldest run first; ``skipped`` (a one-item
    list) counts the judged rows left out as not official. ``made_only``: without the rows that took their verdict
    from the archive (they made none)."""
    endpoints: dict[Path, Mapping[str, Any] | None] = {}
    for run, row in runs_rows(runs_dir, only):
        verdict = row.judgment
        if not row.judged or verdict is None or (made_only and verdict.source == "archive"):
            continue
        if run not in endpoints:
            endpoints[run] = run_endpoints(run)
        line = verdict_line(row, f"run {run.name}", endpoints=endpoints[run])
        if line is not None:
            yield line
        elif skipped is not None and verdict.provider != "offline":
            skipped[0] += 1


def backfill(project: Path, *, starting: Path | None = None) -> int:
    """Archive the official verdicts of the project's runs that no run archived as it made them (runs of versions
    before verdicts were archived by default); each run is read once (its id is remembered in
    ``.verdicts-backfilled``). ``starting``: the directory of a run this process is starting; with no row yet,
    every verdict it makes will be archived as made, so it is remembered unread. Returns how many were added."""
    project = Path(project)
    runs_dir = run_store.runs_dir(project)
    mark = project / STATE_DIR / BACKFILL_MARK
    done = _backfilled(mark)
    todo = {run.name for run in run_store.runs_with_meta(runs_dir)} - done
    fresh = set()
    if starting is not None and starting.name not in done and next(run_store.iter_rows(starting), None) is None:
        fresh, todo = {starting.name}, todo - {starting.name}
    if not todo and not fresh:
        return 0
    archive = for_project(project)
    assert archive is not None
    added = archive.add_made_lines(run_verdicts(runs_dir, made_only=True, only=todo)) if todo else 0
    fileio.write_atomic_json(mark, {"schemaVersion": ARCHIVE_VERSION, "runs": sorted(done | todo | fresh)})
    return added


def _backfilled(mark: Path) -> set[str]:
    try:
        data = json.loads(fileio.read_text(mark, max_bytes=16 << 20))
    except (OSError, ValueError, UserError):
        return set()
    runs = data.get("runs") if isinstance(data, dict) else None
    return {str(r) for r in runs} if isinstance(runs, list) else set()


# --------------------------------------------------------------------------- export and import


def export(project: Path, runs_dir: Path, out: Path, *, upstream_commit: str | None = None) -> dict[str, Any]:
    """Write every official verdict the project holds to ``out`` after a header: the archive's lines (the runs'
    verdicts are archived first, ``backfill``), each with its origin; conflicting prompts are kept and named."""
    backfill(project)
    current = archive_path(project)
    lines = read_archive(current)[1] if current.is_file() else []
    skipped = [0]
    for _ in run_verdicts(runs_dir, skipped):
        pass
    archive = VerdictArchive(current)
    conflicts = archive.conflicts()
    body = lines_blob(lines)
    header = {"kind": HEADER_KIND, "schemaVersion": ARCHIVE_VERSION, "count": len(lines),
              "sha256": hashlib.sha256(body).hexdigest(), "upstream_commit": upstream_commit,
              "template_sha256": sorted({str(x["template_sha256"]) for x in lines if x.get("template_sha256")}),
              "exported_at": utc_now(), "conflicts": conflicts, "skipped_not_official": skipped[0]}
    try:
        fileio.write_atomic_bytes(Path(out), lines_blob([header]) + body)
    except OSError as err:
        raise UserError(f"cannot write {out}: {err.strerror or err}") from None
    origins = archive.origins()
    return {"verdicts": len(lines), "prompts": len(archive), "made_here": origins["made"],
            "imported": origins["imported"], "conflicts": len(conflicts), "conflicting_keys": conflicts[:20],
            "skipped_not_official": skipped[0], "sha256": header["sha256"], "upstream_commit": upstream_commit}


def imported(lines: Iterable[Mapping[str, Any]], source: Path, data_sha256: str, fmt: str) -> list[dict[str, Any]]:
    """The lines of a file as this project's archive keeps them: their origin becomes ``imported`` (the file
    named), the origin they stated is kept as ``claimed``."""
    now = utc_now()
    out = []
    for line in lines:
        origin = {"kind": "imported", "file": Path(source).name, "file_sha256": data_sha256, "format": fmt,
                  "imported_at": now}
        stated = line.get("origin")
        if isinstance(stated, Mapping):
            origin["claimed"] = dict(stated.get("claimed") or stated)
        if line.get("raw") is None:
            origin["label_only"] = True
        out.append({**line, "verdict_id": verdict_id(line), "schemaVersion": ARCHIVE_VERSION, "origin": origin})
    return out


def import_lines(project: Path, lines: list[dict[str, Any]]) -> dict[str, Any]:
    """Add ``lines`` (``imported``'s) to the project's archive: every act of judging once; conflicts kept."""
    archive = for_project(project)
    assert archive is not None
    before = {(c["prompt_sha256"], c["model"]) for c in archive.conflicts()}
    added, already = archive.add_lines(lines)
    conflicts = [c for c in archive.conflicts() if (c["prompt_sha256"], c["model"]) not in before]
    return {"added": added, "already_present": already, "new_conflicts": len(conflicts),
            "conflicting_keys": conflicts[:20], "archive_prompts": len(archive),
            "label_only": sum(1 for line in lines if line.get("raw") is None),
            "without_endpoint": sum(1 for line in lines if not line.get("endpoint_host"))}


def import_file(project: Path, source: Path) -> dict[str, Any]:
    """Add the verdicts of an exported archive file (header and lines verified first) to the project's archive."""
    header, incoming = read_archive(source)  # every line (and the header) checked before anything is written
    sha = fileio.sha256_file(source, follow_symlinks=True)
    fileio.ensure_writable_dir(archive_path(project).parent)
    result = import_lines(project, imported(incoming, source, sha, "archive"))
    return {**result, "format": "archive", "verified_header": header is not None, "file_sha256": sha}
