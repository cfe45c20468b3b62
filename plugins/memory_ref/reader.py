"""memory-ref's reader prompt: evidence (notes from the symbolic layers, facts, sessions with dates), then the
current date and the question. Session text is rendered by ``scripts/lme/target_kit/reader.py``'s ``render_history``.
"""

from __future__ import annotations

from typing import Any, Sequence

from lme.target_kit import render_history, sort_by_date
from lme.targets import ChatRequest

from .facts import Fact
from .stack import Role

MAX_TOKENS = 800

_INSTRUCTIONS = (
    "You are an assistant with a memory of your past conversations with this user. Below is the evidence your "
    "memory retrieved for the user's new question: notes computed from dates, facts extracted from the "
    "conversations, and the conversations themselves with their dates (oldest first). When facts conflict, the "
    "more recent one is the current truth. Resolve relative dates against the date of the conversation they were "
    "said in. Think briefly, then give the answer on a final line starting with 'Answer:'. If the evidence does "
    "not answer the question, say that there is not enough information to answer it."
)


def render_facts(facts: Sequence[Fact], superseded_texts: set[str], describe: Any = None) -> str:
    """One line per fact; ``describe(event_date) -> str | None`` annotates event dates (temporal layer)."""
    lines = []
    for f in facts:
        described = describe(f.event_date) if (describe and f.event_date) else None
        when = f" (event date {described or f.event_date})" if f.event_date else ""
        who = "assistant said" if f.speaker == "assistant" else "user"
        flag = " [SUPERSEDED by a later value]" if f.text in superseded_texts else ""
        lines.append(f"- [{f.session_date}] ({who}) {f.text}{when}{flag}")
    return "\n".join(lines)


def render_sessions(sessions: Sequence[Any], annotations: dict[str, str], max_chars: int) -> tuple[str, int]:
    """Sessions (best-ranked first get the budget), shown oldest first; ``(text, sessions truncated)``."""
    kept: list[Any] = []
    budget = max_chars
    truncated = 0
    for s in sessions:
        size = sum(len(t.content) for t in s.turns) + 40 * len(s.turns)
        if size > budget:
            truncated += 1
            continue
        budget -= size
        kept.append(s)
    blocks = []
    for s in sort_by_date(kept):
        body = render_history([s], fmt="nl").split("\n", 1)[-1]
        when = annotations.get(s.session_id) or s.date
        blocks.append(f"=== {s.session_id} | date: {when} ===\n{body}")
    return "\n\n".join(blocks), truncated


def build_request(role: Role, question: str, question_date: str, *, notes: Sequence[str], facts_text: str,
                  sessions_text: str) -> ChatRequest:
    parts = [_INSTRUCTIONS]
    if notes:
        parts.append("Notes computed from dates and facts:\n" + "\n".join(f"- {n}" for n in notes))
    if facts_text:
        parts.append("Facts from the retrieved conversations:\n" + facts_text)
    if sessions_text:
        parts.append("Retrieved conversations:\n\n" + sessions_text)
    parts.append(f"Current date: {question_date}\nQuestion: {question}")
    return ChatRequest(provider=role.provider, model=role.model,
                       messages=({"role": "user", "content": "\n\n".join(parts)},),
                       max_tokens=MAX_TOKENS, temperature=0.0)


def final_answer(text: str) -> str:
    """The text after the last 'Answer:' line, or the whole reply when there is none."""
    marker = text.rfind("Answer:")
    answer = text[marker + len("Answer:"):].strip() if marker >= 0 else text.strip()
    return answer or text.strip()
