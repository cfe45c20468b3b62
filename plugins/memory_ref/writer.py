"""The writer: per session, extract dated atomic facts (about the user, and information the assistant gave).

One call per session, cached on disk by sha256 of (writer ``provider:model``, ``PROMPT_VERSION``, session turns).
The session date is deliberately NOT in the key, nor in the prompt: ``_s`` reuses filler sessions across items
under different dates (23,806 sessions, 18,437 distinct contents, every (date, content) pair unique; see
``tests/benchmarks/bench_writer_cache_savings.py``), so a date in the key would save nothing. The writer instead
copies each event's time expression verbatim (``"when": "last Friday"``) and ``temporal`` resolves it against
the session date of the item at hand when facts are read.

The cache is SQLite in WAL mode with a busy timeout, one short-lived connection per operation, so threads and
processes can share it. Cached facts carry no session alias, date or event date; they are re-attached on read. Replies that yield no parseable line are not cached.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from lme.target_kit import cached_keys as keys_in_cache, connect_cache_db
from lme.targets import LLM, ChatRequest

from .facts import Fact, parse_fact_lines, with_session
from .stack import Role

PROMPT_VERSION = "memory-ref-writer-2"
NOTHING = "NONE"
"""The writer's reply for a session with nothing to keep (an empty reply is a provider error)."""
MAX_TOKENS = 2000
CACHE_FILE = "memory_ref_facts.sqlite"

_INSTRUCTIONS = """You are building a memory of a user from one past chat session between the user and an AI assistant.
List every atomic fact worth remembering from the session, one JSON object per line, nothing else:
- facts about the user: events, plans, purchases, possessions, people, places, numbers, preferences, opinions;
- facts the assistant gave the user (recommendations, names, figures, steps), marked "speaker": "assistant".
Keys of each object:
  "fact": one self-contained sentence, in the third person ("The user ..."), keeping names and numbers exact;
  "speaker": "user" or "assistant";
  "when": the words of the session that say when the event happened, copied as written ("today", "yesterday",
    "last Friday", "3 days ago", "March 5"); null when the session does not say;
  "subject": for a value that can change over time (a count, a score, a job, a location, a habit), a short stable
    name such as "instagram followers"; otherwise null;
  "value": the value of that subject at this time, e.g. "1300"; otherwise null;
  "category": for a countable thing the user has, bought, did or attended, a short plural noun such as "bikes" or
    "concerts"; otherwise null.
Skip greetings and general knowledge that says nothing about this user. If nothing is worth keeping, output the single word NONE."""


@dataclass
class WriterStats:
    sessions: int = 0
    calls: int = 0
    cache_hits: int = 0
    malformed_lines: int = 0
    facts: int = 0
    call_records: list[dict[str, Any]] = field(default_factory=list)

    def to_debug(self) -> dict[str, Any]:
        return {"facts": self.facts, "sessions": self.sessions, "calls": self.calls, "cache_hits": self.cache_hits,
                "malformed_lines": self.malformed_lines}


def session_key(role: Role, session: Any) -> str:
    """Cache key: writer model, prompt version and the session's turns (not its alias, not its date)."""
    blob = json.dumps(
        [role.spec, PROMPT_VERSION, [[t.role, t.content] for t in session.turns]],
        ensure_ascii=False, separators=(",", ":"),
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def build_request(role: Role, session: Any) -> ChatRequest:
    lines = [f"[{t.role}] {t.content.strip()}" for t in session.turns]
    prompt = f"{_INSTRUCTIONS}\n\nSession:\n" + "\n\n".join(lines) + "\n\nFacts:"
    return ChatRequest(provider=role.provider, model=role.model, messages=({"role": "user", "content": prompt},),
                       max_tokens=MAX_TOKENS, temperature=0.0)


class FactCache:
    """SQLite store ``key -> JSON list of fact dicts`` (without session alias/date)."""

    def __init__(self, directory: str | Path) -> None:
        self.path = Path(directory) / CACHE_FILE
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS facts (key TEXT PRIMARY KEY, writer TEXT NOT NULL, "
                "prompt_version TEXT NOT NULL, payload TEXT NOT NULL, created_at REAL NOT NULL)"
            )

    def _connect(self) -> sqlite3.Connection:
            return connect_cache_db(self.path)

    def get(self, key: str) -> list[dict[str, Any]] | None:
        conn = self._connect()
        try:
            row = conn.execute("SELECT payload FROM facts WHERE key = ?", (key,)).fetchone()
        finally:
            conn.close()
        return None if row is None else json.loads(row[0])

    def put(self, key: str, writer: str, facts: Sequence[Fact]) -> None:
        payload = json.dumps(
            [{k: v for k, v in f.to_dict().items() if k not in {"session_id", "session_date", "event_date"}}
             for f in facts],
            ensure_ascii=False,
        )
        conn = self._connect()
        try:
            conn.execute("INSERT OR REPLACE INTO facts VALUES (?, ?, ?, ?, ?)",
                         (key, writer, PROMPT_VERSION, payload, time.time()))
        finally:
            conn.close()

    def __len__(self) -> int:
        conn = self._connect()
        try:
            return int(conn.execute("SELECT COUNT(*) FROM facts").fetchone()[0])
        finally:
            conn.close()


def cached_keys(directory: str | Path, keys: Sequence[str]) -> set[str]:
    """Which of ``keys`` the facts cache in ``directory`` holds, read-only (nothing is created): for dry runs."""
    return keys_in_cache(Path(directory) / CACHE_FILE, "facts", keys)


def _one_session(role: Role, session: Any, llm: LLM, cache: FactCache | None) -> tuple[list[Fact], dict[str, Any]]:
    key = session_key(role, session)
    if cache is not None:
        cached = cache.get(key)
        if cached is not None:
            facts = [with_session(d, session.session_id, session.date) for d in cached]
            return facts, {"cache_hit": True, "malformed": 0}
    completion = llm.complete(build_request(role, session))
    facts, malformed = parse_fact_lines(completion.text, session.session_id, session.date)
    nothing = completion.text.strip().strip("`").strip().upper() == NOTHING
    if nothing:
        malformed = 0
    if cache is not None and (facts or nothing):
        cache.put(key, role.spec, facts)
    return facts, {"cache_hit": False, "malformed": malformed, "call": completion.to_dict() | {"role": "writer"}}


def extract_facts(sessions: Sequence[Any], role: Role, llm: LLM, cache: FactCache | None,
                  parallel: int = 4) -> tuple[list[Fact], WriterStats]:
    """Facts of every session, in history order (session order, then the writer's order), and the stats.

    A provider error on any session propagates: the item fails visibly rather than being answered from a
    partial memory.
    """
    stats = WriterStats(sessions=len(sessions))
    with ThreadPoolExecutor(max_workers=max(1, parallel)) as pool:
        results = list(pool.map(lambda s: _one_session(role, s, llm, cache), sessions))
    facts: list[Fact] = []
    for session_facts, info in results:
        facts.extend(session_facts)
        stats.malformed_lines += info["malformed"]
        if info["cache_hit"]:
            stats.cache_hits += 1
        else:
            stats.calls += 1
            stats.call_records.append(info["call"])
    stats.facts = len(facts)
    return facts, stats
