"""What memory-ref would ask the models for one item, without calling any: the dry run's view, by role.

- writer: the exact request for every session whose facts are not in the facts cache yet (one per session).
- rerank (when configured): the request over the candidates ranked without the writer's facts.
- reader: the request over the top_k sessions ranked without the writer's facts (they do not exist before the
  run), with a facts block of an assumed size (``ASSUMED_FACT_LINES_PER_SESSION`` lines of
  ``ASSUMED_FACT_LINE_CHARS`` characters per shown session). The bypass may answer without the reader; the
  preview assumes it never does, so the reader is counted for every item.
- embeddings (when configured) are not previewed; they cost a small fraction of a chat call.
"""

from __future__ import annotations


from lme.targets import ChatRequest, PublicItem, TargetContext

from . import index, reader, rerank, writer
from .stack import load_settings

ASSUMED_FACT_LINES_PER_SESSION = 12
ASSUMED_FACT_LINE_CHARS = 110


def requests_by_role(item: PublicItem, ctx: TargetContext) -> dict[str, list[ChatRequest]]:
    settings = load_settings(ctx.options, ctx.provider, ctx.model, ctx.cache_dir)
    out: dict[str, list[ChatRequest]] = {}
    if settings.use_writer and settings.writer is not None:
        role = settings.writer
        keys = [writer.session_key(role, s) for s in item.sessions]
        cached = writer.cached_keys(settings.facts_cache, keys) if settings.facts_cache else set()
        out["writer"] = [writer.build_request(role, s) for s, key in zip(item.sessions, keys) if key not in cached]
    ranked = index.retrieve(item.question, item.sessions, (), granularity=settings.granularity).ranked
    if settings.rerank is not None and ranked:
        head = ranked[: settings.rerank_candidates]
        candidates = [(item.sessions[i].session_id, item.sessions[i].date,
                       " ".join(t.content for t in item.sessions[i].turns if t.role == "user")) for i in head]
        out["rerank"] = [rerank.build_request(settings.rerank, item.question, item.question_date, candidates)]
    top = [item.sessions[i] for i in ranked[: settings.top_k]]
    sessions_text, truncated = reader.render_sessions(top, {}, settings.max_evidence_chars)
    facts_text = _assumed_facts(len(top) - truncated) if settings.use_writer else ""
    out["reader"] = [reader.build_request(settings.reader, item.question, item.question_date, notes=[],
                                          facts_text=facts_text, sessions_text=sessions_text)]
    return out


def _assumed_facts(sessions: int) -> str:
    line = "- [date] (user) a fact the writer will extract".ljust(ASSUMED_FACT_LINE_CHARS, ".")
    return "\n".join([line] * (sessions * ASSUMED_FACT_LINES_PER_SESSION))

