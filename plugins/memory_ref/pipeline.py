"""memory-ref, end to end: writer -> index (+ embed) -> rerank -> symbolic layers -> bypass or reader."""

from __future__ import annotations

import time
from typing import Any

from lme.target_kit import complete_reader
from lme.targets import Hypothesis, PublicItem, TargetContext

from . import bypass, embed_cache, health, index, reader, rerank, resolver, temporal, writer
from .facts import Fact
from .stack import Settings, load_settings

MAX_NOTES = 30


def generate(item: PublicItem, ctx: TargetContext) -> Hypothesis:
    started = time.monotonic()
    settings = load_settings(ctx.options, ctx.provider, ctx.model, ctx.cache_dir)
    calls: list[dict[str, Any]] = []
    debug: dict[str, Any] = {"stack": settings.roles()}

    facts, writer_debug = _write(item, ctx, settings, calls)
    debug["writer"] = writer_debug

    qd = temporal.parse_date(item.question_date)
    symbolic: dict[str, Any] = {}
    notes: list[str] = []
    annotations: dict[str, str] = {}
    describe = None
    if settings.symbolic_temporal and qd is not None:
        resolved = temporal.resolve_expressions(item.question, qd)
        symbolic["temporal"] = {"resolved": [r.to_dict() for r in resolved]}
        notes += [_range_note(r) for r in resolved]
        annotations = {s.session_id: a for s, a in
                       zip(item.sessions, temporal.annotate_sessions([s.date for s in item.sessions],
                                                                      item.question_date)) if a}

        def describe(text: str) -> str | None:
            day = temporal.parse_date(text)
            return temporal.describe_offset(day, qd) if day else None
    else:
        symbolic["temporal"] = {"off": True} if not settings.symbolic_temporal else {"resolved": [],
                                                                                   "error": "question date"}

    current, superseded = facts, []
    if settings.symbolic_resolver:
        current, superseded = resolver.resolve_updates(facts)
        resolver_debug: dict[str, Any] = {"superseded": [s.to_dict() for s in superseded], "deduplicated": 0}
        noun = resolver.counted_noun(item.question)
        if noun and facts:
            items = resolver.facts_in_category(current, noun)
            unique, removed = resolver.deduplicate([f.text for f in items])
            resolver_debug |= {"count_noun": noun, "count": len(unique), "deduplicated": removed}
            if unique:
                notes.append(f"Facts the memory filed under '{noun}' after removing duplicates ({len(unique)}; "
                             f"the list may be incomplete): " + "; ".join(unique))
        symbolic["resolver"] = resolver_debug
    else:
        symbolic["resolver"] = {"off": True}

    decision = bypass.Decision(False, "symbolic_bypass off")
    if settings.symbolic_bypass:
        if not facts:
            decision = bypass.Decision(False, "no extracted facts (writer off or empty)")
        else:
            decision = bypass.decide(item.question, item.question_date, current,
                                     bypass_counts=settings.bypass_counts)
    symbolic["bypass"] = decision.to_dict()
    if not decision.taken and settings.symbolic_temporal and qd is not None:
        notes += _event_notes(decision, qd)
    debug["symbolic"] = symbolic

    ranked, shown, retrieval_debug = _retrieve(item, ctx, settings, facts, calls, rerank_on=not decision.taken)
    debug["retrieval"] = retrieval_debug
    aliases = tuple(item.sessions[i].session_id for i in ranked)

    if decision.taken and decision.answer is not None:
        answer = decision.answer
        debug["reader"] = {"skipped": "bypass"}
    else:
        answer = _read(item, ctx, settings, ranked[:shown], current, superseded, notes, describe, annotations,
                       calls, debug)

    return Hypothesis(
        hypothesis=answer,
        tokensIn=sum(int(c.get("tokensIn", 0)) for c in calls),
        tokensOut=sum(int(c.get("tokensOut", 0)) for c in calls),
        latencyMs=round((time.monotonic() - started) * 1000, 1),
        calls=tuple(calls),
        retrieved_session_ids=aliases,
        debug=debug,
        stages=health.item_stages(debug),
        truncation=health.item_truncation(debug),
        retrieval={"top_k": settings.top_k, "granularity": settings.granularity},
    )


def _write(item: PublicItem, ctx: TargetContext, settings: Settings, calls: list[dict[str, Any]]
           ) -> tuple[list[Fact], dict[str, Any]]:
    if not settings.use_writer or settings.writer is None:
        return [], {"facts": 0, "cache_hits": 0, "off": True}
    cache = writer.FactCache(settings.facts_cache) if settings.facts_cache else None
    facts, stats = writer.extract_facts(item.sessions, settings.writer, ctx.llm, cache, settings.writer_parallel)
    calls.extend(stats.call_records)
    return facts, stats.to_debug() | {"cached_on_disk": cache is not None}


def _retrieve(item: PublicItem, ctx: TargetContext, settings: Settings, facts: list[Fact],
              calls: list[dict[str, Any]], *, rerank_on: bool) -> tuple[list[int], int, dict[str, Any]]:
    """``(ranked session indices, how many the reader sees, debug)``."""
    embed = None
    embed_info: dict[str, Any] = {}
    if settings.embed is not None:
        role = settings.embed

        def embed(texts: list[str]) -> list[list[float]]:
            vectors, computed = embed_cache.cached_embed(ctx.llm, role.spec, texts, ctx.cache_dir)
            embed_info.update(model=role.spec, computed=computed, texts=len(texts))
            return vectors

    result = index.retrieve(item.question, item.sessions, facts, question_date=item.question_date,
                            config=index.config_named(settings.retriever), granularity=settings.granularity,
                            embed=embed)
    ranked = result.ranked
    alias = lambda i: item.sessions[i].session_id  # noqa: E731
    aggregates = result.query is not None and result.query.aggregates
    shown = (index.adaptive_k(result.scores, settings.top_k, min_k=settings.min_k, aggregates=aggregates)
             if settings.adaptive_k else min(settings.top_k, max(len(ranked) - 1, 1)))
    out = result.debug(alias, settings.top_k) | {
        "top_k": settings.top_k, "shown": shown, "adaptive_k": settings.adaptive_k,
        "granularity": settings.granularity, "top_k_covers_all": settings.top_k >= len(item.sessions)}
    if embed_info:
        out["embeddings"] = embed_info
    if settings.rerank is not None and rerank_on and ranked:
        head = ranked[: settings.rerank_candidates]
        candidates = [(alias(i), item.sessions[i].date,
                       " ".join(t.content for t in item.sessions[i].turns if t.role == "user")) for i in head]
        order, rerank_debug, call = rerank.rerank(settings.rerank, ctx.llm, item.question, item.question_date,
                                                  candidates)
        calls.append(call)
        position = {a: i for i, a in enumerate(alias(j) for j in range(len(item.sessions)))}
        ranked = [position[a] for a in order] + ranked[len(head):]
        out["rerank"] = rerank_debug
    return ranked, shown, out


def _read(item: PublicItem, ctx: TargetContext, settings: Settings, ranked: list[int], current: list[Fact],
          superseded: list[resolver.Supersession], notes: list[str], describe: Any, annotations: dict[str, str],
          calls: list[dict[str, Any]], debug: dict[str, Any]) -> str:
    top = [item.sessions[i] for i in ranked]
    top_ids = {s.session_id for s in top}
    superseded_texts = {s.old.text for s in superseded}
    evidence_facts = [f for f in current if f.session_id in top_ids]
    evidence_facts += [s.old for s in superseded if s.old.session_id in top_ids]
    evidence_facts.sort(key=lambda f: (temporal.parse_date(f.session_date) or temporal.date.min))
    for s in superseded:
        if s.old.session_id in top_ids or s.new.session_id in top_ids:
            notes.append(f"'{s.old.subject}' was {s.old.value} on {s.old.session_date}, later {s.new.value} on "
                         f"{s.new.session_date} (the later value is current)")
    facts_text = reader.render_facts(evidence_facts, superseded_texts, describe)
    sessions_text, truncated = reader.render_sessions(top, annotations, settings.max_evidence_chars)
    request = reader.build_request(settings.reader, item.question, item.question_date, notes=notes[:MAX_NOTES],
                                   facts_text=facts_text, sessions_text=sessions_text)
    completion = complete_reader(ctx.llm, request)  # an empty reply after the retries is the answer ""
    calls.append(completion.to_dict() | {"role": "reader"})
    debug["reader"] = {"model": settings.reader.spec, "sessions": len(top) - truncated, "sessions_dropped": truncated,
                       "facts": len(evidence_facts), "notes": len(notes[:MAX_NOTES]),
                       "prompt_chars": len(request.messages[0]["content"]), "reply_chars": len(completion.text)}
    return reader.final_answer(completion.text)


def _range_note(r: temporal.Resolved) -> str:
    if r.start == r.end:
        return f"'{r.expression}' in the question = {temporal.format_day(r.start)}"
    return f"'{r.expression}' in the question = {temporal.format_day(r.start)} to {temporal.format_day(r.end)}"


def _event_notes(decision: bypass.Decision, qd: Any) -> list[str]:
    """Dated events the bypass matched but could not use alone: still useful arithmetic for the reader."""
    out = []
    for event in decision.details.get("events", []):
        day = temporal.parse_date(event.get("date"))
        if day is not None:
            out.append(f"'{event['phrase']}' matches a fact dated {temporal.describe_offset(day, qd)}")
    return out
