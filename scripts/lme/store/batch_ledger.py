"""The Batch API ledger of a run directory: ``batches.jsonl``, append-only, one fsynced line per event.

A batch is planned, uploaded (OpenAI's input file), submitted, polled, collected and closed; each step is one
event (``v``, ``t``, ``event``, ``chunk``), written before the next step starts, so any process that holds the run
directory (a resume after kill -9, another machine, a later session) picks the batch up where it stood: a
``submitted`` batch is polled, never created again; a ``collected`` one is read from its local results file
(``batches/<chunk>.results.jsonl``), never downloaded again. The ledger maps each ``custom_id`` to its request
(question id, stage, sub, attempt, ``ChatRequest.key()``): results are routed through it, never by parsing ids.
``references/SPEC.md`` ("Batch APIs") lists the events and their fields, all but ``abandoned`` (an adopted batch
whose custom_ids are not the chunk's: not ours, never used again).
"""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping

from lme.core import fileio
from lme.core.clock import utc_now
from lme.store.run_layout import BATCHES_DIR, BATCHES_FILE

VERSION = 1
EVENTS = ("planned", "uploaded", "submitted", "adopted", "abandoned", "status", "collected", "closed")
STAGE_CODES = {"generate": "g", "judge": "j", "writer": "w"}
_PLAIN_QID = re.compile(r"[a-z0-9_]{1,24}")
CUSTOM_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")
"""Anthropic's rule for a custom_id; OpenAI asks only for uniqueness within a batch: one encoder serves both."""


def ledger_path(work: Path) -> Path:
    return Path(work) / BATCHES_FILE


def batches_dir(work: Path) -> Path:
    return Path(work) / BATCHES_DIR


def run_tag(run_id: str) -> str:
    """``r`` + 8 hex of sha256(run id): run ids may be 80 characters, too long to embed in a custom_id."""
    return "r" + hashlib.sha256(run_id.encode("utf-8")).hexdigest()[:8]


def stage_code(stage: str) -> str:
    """One letter: ``g`` generation, ``j`` judge, ``w`` writer; another role of a target: its first letter."""
    return STAGE_CODES.get(stage) or (re.sub(r"[^a-z]", "", stage.lower())[:1] or "x")


def custom_id(run_id: str, stage: str, question_id: str, sub: int = 0, attempt: int = 0) -> str:
    """``<tag>-<stage>-<qid>-<sub>-a<attempt>`` (e.g. ``r3f9a0c1e-j-gpt4_93159ced_abs-0-a0``), at most 64
    characters of ``[a-zA-Z0-9_-]``. A question id outside ``[a-z0-9_]{1,24}`` becomes ``h`` + 16 hex of its
    sha256 (real LongMemEval ids never do: at most 17 characters of that set)."""
    code = stage_code(stage)
    qid = question_id if _PLAIN_QID.fullmatch(question_id) else "h" + hashlib.sha256(
        question_id.encode("utf-8")).hexdigest()[:16]
    made = f"{run_tag(run_id)}-{code}-{qid}-{int(sub)}-a{int(attempt)}"
    assert CUSTOM_ID.fullmatch(made), made
    return made


@dataclass
class Chunk:
    """One batch as the ledger knows it (replayed from its events)."""

    name: str
    provider: str
    model: str
    stage: str
    requests: list[dict[str, Any]]
    """``{custom_id, qid, sub, attempt, key}`` per request, in input order."""
    input_path: str | None
    planned_t: float
    file_id: str | None = None
    batch_id: str | None = None
    adopted: bool = False
    status: str | None = None
    counts: dict[str, Any] = field(default_factory=dict)
    polled_at: str | None = None
    results_path: str | None = None
    outcomes: dict[str, str] | None = None
    """custom_id -> ``ok`` or an error kind, once collected."""
    closed: bool = False

    @property
    def collected(self) -> bool:
        return self.outcomes is not None

    @property
    def phase(self) -> str:
        if self.closed:
            return "closed"
        if self.collected:
            return "collected"
        if self.batch_id:
            return "submitted"
        return "uploaded" if self.file_id else "planned"

    def keys(self) -> dict[str, str]:
        """custom_id -> request key."""
        return {r["custom_id"]: r["key"] for r in self.requests}


class Ledger:
    """The ledger of one run (shard) directory: its chunks, replayed from the file, and the appends."""

    def __init__(self, work: Path) -> None:
        self.work = Path(work)
        self.path = ledger_path(work)
        self.chunks: dict[str, Chunk] = {}
        self.foreign: set[str] = set()
        """Batch ids adopted by mistake and abandoned: recovery never adopts them again."""
        for _, event in fileio.iter_jsonl(self.path):  # a torn last line (a crash mid-append) is skipped
            if event.get("event") in EVENTS:
                self._apply(event)

    # ------------------------------------------------------------------ reading

    def __iter__(self) -> Iterator[Chunk]:
        return iter(self.chunks.values())

    def next_name(self, stage: str) -> str:
        return f"{stage_code(stage)}{len(self.chunks) + 1:04d}"

    def by_key(self) -> dict[str, list[Chunk]]:
        """request key -> the chunks that carried it, in planning order."""
        found: dict[str, list[Chunk]] = {}
        for chunk in self.chunks.values():
            for request in chunk.requests:
                found.setdefault(request["key"], []).append(chunk)
        return found

    def known_batch_ids(self) -> set[str]:
        return {c.batch_id for c in self.chunks.values() if c.batch_id} | self.foreign

    # ------------------------------------------------------------------ writing

    def append(self, event: str, chunk: str, **fields: Any) -> None:
        assert event in EVENTS, event
        record = {"v": VERSION, "t": round(time.time(), 3), "at": utc_now(), "event": event, "chunk": chunk,
                  **fields}
        fileio.append_jsonl(self.path, record)
        self._apply(record)

    def _apply(self, e: Mapping[str, Any]) -> None:
        name, event = str(e.get("chunk")), e.get("event")
        if event == "planned":
            self.chunks[name] = Chunk(name=name, provider=str(e["provider"]), model=str(e["model"]),
                                      stage=str(e["stage"]), requests=[dict(r) for r in e["requests"]],
                                      input_path=e.get("input"), planned_t=float(e.get("t") or 0.0))
            return
        chunk = self.chunks.get(name)
        if chunk is None:  # an event of a chunk whose planned line was torn off: nothing was sent for it
            return
        if event == "uploaded":
            chunk.file_id = e.get("file_id")
        elif event in ("submitted", "adopted"):
            chunk.batch_id = e.get("batch_id")
            chunk.adopted = event == "adopted"
        elif event == "abandoned":
            self.foreign.add(str(e.get("batch_id")))
            chunk.batch_id, chunk.adopted, chunk.status, chunk.counts = None, False, None, {}
        elif event == "status":
            chunk.status, chunk.counts, chunk.polled_at = e.get("status"), dict(e.get("counts") or {}), e.get("at")
        elif event == "collected":
            chunk.status = e.get("status", chunk.status)
            chunk.results_path, chunk.outcomes = e.get("results"), dict(e.get("outcomes") or {})
        elif event == "closed":
            chunk.closed = True


def progress(work: Path) -> dict[str, Any] | None:
    """What run_status shows, from the ledger only (no API call, no key): per batch and totals; None when the run
    used no batch."""
    if not ledger_path(work).is_file():
        return None
    ledger = Ledger(work)
    batches, totals = [], {"batches": 0, "submitted": 0, "in_progress": 0, "completed": 0, "failed": 0,
                           "pending": 0}
    for chunk in ledger:
        n = len(chunk.requests)
        totals["batches"] += 1
        failed = sum(1 for o in (chunk.outcomes or {}).values() if o != "ok")
        if chunk.batch_id:
            totals["submitted"] += n
        if chunk.collected:
            totals["completed"] += n - failed
            totals["failed"] += failed
        elif chunk.batch_id:
            totals["in_progress"] += n
        else:
            totals["pending"] += n
        batches.append({"chunk": chunk.name, "provider": chunk.provider, "model": chunk.model,
                        "stage": chunk.stage, "batch_id": chunk.batch_id, "phase": chunk.phase,
                        "status": chunk.status, "requests": n, "counts": chunk.counts,
                        "last_poll": chunk.polled_at, "failed": failed if chunk.collected else None})
    return {"totals": totals, "batches": batches}
