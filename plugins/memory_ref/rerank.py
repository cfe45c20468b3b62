"""Optional rerank role: a model reorders the top fused candidates.

It is asked for a JSON list of candidate ids, most relevant first. Ids it drops keep their fused order after the
ones it named; unknown ids are ignored. A reply with no JSON list, or naming none of the candidates, is malformed:
the fused order stands and the debug says so.
"""

from __future__ import annotations

import json
import re
from typing import Any, Sequence

from lme.targets import LLM, ChatRequest

from .stack import Role

SNIPPET_CHARS = 600
MAX_TOKENS = 300


def build_request(role: Role, question: str, question_date: str, candidates: Sequence[tuple[str, str, str]]
                  ) -> ChatRequest:
    """``candidates``: ``(id, date, text)``; the text is cut to ``SNIPPET_CHARS``."""
    blocks = [f"id: {cid}\ndate: {day}\n{' '.join(text.split())[:SNIPPET_CHARS]}" for cid, day, text in candidates]
    prompt = (
        "Rank these past chat sessions by how useful they are for answering the user's question. Reply with only "
        "a JSON list of the session ids, most useful first.\n\n"
        f"Current date: {question_date}\nQuestion: {question}\n\n" + "\n\n".join(blocks) + "\n\nRanked ids:"
    )
    return ChatRequest(provider=role.provider, model=role.model, messages=({"role": "user", "content": prompt},),
                       max_tokens=MAX_TOKENS, temperature=0.0)


def parse_order(text: str, candidate_ids: Sequence[str]) -> list[str] | None:
    """The candidate ids in the model's order (unnamed ones appended in their order); None if malformed."""
    match = re.search(r"\[.*?\]", text or "", re.S)
    if not match:
        return None
    try:
        named = json.loads(match.group(0))
    except ValueError:
        return None
    if not isinstance(named, list):
        return None
    known = set(candidate_ids)
    order: list[str] = []
    for item in named:
        cid = str(item)
        if cid in known and cid not in order:
            order.append(cid)
    if not order:
        return None
    return order + [c for c in candidate_ids if c not in order]


def rerank(role: Role, llm: LLM, question: str, question_date: str,
           candidates: Sequence[tuple[str, str, str]]) -> tuple[list[str], dict[str, Any], dict[str, Any]]:
    """``(ordered ids, debug, call record)``; falls back to the given order on a malformed reply."""
    ids = [c[0] for c in candidates]
    completion = llm.complete(build_request(role, question, question_date, candidates))
    order = parse_order(completion.text, ids)
    debug = {"model": role.spec, "candidates": len(ids), "malformed": order is None}
    if order is None:
        debug["fallback"] = "fused order kept"
        order = ids
    return order, debug, completion.to_dict() | {"role": "rerank"}
