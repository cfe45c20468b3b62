"""A tiny but real memory system: keyword search over what the user said, answering with the best match.

Use it with the ``python`` target (``--target python --target-option path=plugins/examples/echo_memory.py``)
or, through ``echo_memory_cmd.py``, with the ``command`` target. It needs nothing from the toolkit: plain dicts
in, a plain dict out. It is a template to copy, not a good system.
"""

from __future__ import annotations

import re
from typing import Any

NOT_ENOUGH = "The information provided is not enough to answer this question."
COMMON_WORDS = {"the", "a", "an", "and", "or", "of", "to", "in", "on", "for", "is", "are", "was", "were", "i",
                "my", "me", "you", "your", "what", "which", "who", "when", "where", "how", "did", "do", "does"}


def words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in COMMON_WORDS}


def generate(item: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
    """Score every user turn by shared words with the question; answer with the best one."""
    query = words(item["question"])
    scored = []  # (overlap, session_id, turn text)
    for session in item["sessions"]:
        for turn in session["turns"]:
            if turn["role"] == "user":
                scored.append((len(query & words(turn["content"])), session["session_id"], turn["content"]))
    scored.sort(key=lambda s: -s[0])  # stable: earlier turns win ties
    ranked_sessions = list(dict.fromkeys(sid for _, sid, _ in scored))
    best = scored[0] if scored and scored[0][0] > 0 else None
    return {
        "hypothesis": best[2].strip()[:300] if best else NOT_ENOUGH,
        "retrieved_session_ids": ranked_sessions,
        "debug": {"best_overlap": best[0] if best else 0, "turns_searched": len(scored)},
    }
