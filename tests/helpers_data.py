"""A tiny factory for LongMemEval-shaped items and result rows in tests (stand-in wording, never real data)."""

from __future__ import annotations

import gzip
import json
import lzma
from pathlib import Path
from typing import Any, Sequence


def make_item(
    question_id: str = "q001",
    question_type: str = "single-session-user",
    *,
    answer: str | int = "blue",
    sessions: int = 2,
    evidence_index: int = 0,
) -> dict[str, Any]:
    """One item with ``sessions`` short sessions; session ``evidence_index`` is the evidence one."""
    ids, dates, haystack = [], [], []
    for i in range(sessions):
        evidence = i == evidence_index
        ids.append(f"answer_{question_id}_{i}" if evidence else f"sess_{question_id}_{i}")
        dates.append(f"2023/05/{10 + i:02d} (Wed) 10:00")
        haystack.append(
            [
                {"role": "user", "content": f"My bike is {answer}." if evidence else "Hello there.", "has_answer": evidence},
                {"role": "assistant", "content": "Noted."},
            ]
        )
    return {
        "question_id": question_id,
        "question_type": question_type,
        "question": "What colour is my bike?",
        "answer": answer,
        "question_date": "2023/06/01 (Thu) 09:00",
        "haystack_session_ids": ids,
        "haystack_dates": dates,
        "haystack_sessions": haystack,
        "answer_session_ids": [ids[evidence_index]],
    }


def make_items(n: int, prefix: str = "q") -> list[dict[str, Any]]:
    types = ("single-session-user", "multi-session", "temporal-reasoning", "knowledge-update")
    return [make_item(f"{prefix}{i:03d}", types[i % len(types)]) for i in range(n)]


def write_dataset(path: Path, items: Sequence[Any], *, compression: str | None = None) -> Path:
    """Write ``items`` as one JSON array, plain or ``xz``/``gz`` compressed."""
    data = json.dumps(list(items)).encode("utf-8")
    path = Path(path)
    if compression == "xz":
        path.write_bytes(lzma.compress(data))
    elif compression == "gz":
        path.write_bytes(gzip.compress(data))
    else:
        path.write_bytes(data)
    return path


def judged_row(question_id: str, *, label: bool = True, question_type: str = "multi-session") -> dict[str, Any]:
    return {
        "schemaVersion": "1.0.0",
        "question_id": question_id,
        "question_type": question_type,
        "question": "What colour is my bike?",
        "answer": "blue",
        "abstention": "_abs" in question_id,
        "status": "judged",
        "hypothesis": "blue",
        "judgment": {"model": "judge-x", "provider": "offline", "label": label, "raw": "yes" if label else "no"},
        "latencyMs": 1.0,
        "tokensIn": 1,
        "tokensOut": 1,
        "target": {"name": "t", "provider": "offline", "model": "m", "debug": {}},
        "retrieval": None,
        "cost": None,
        "calls": [],
        "error": None,
        "finished_at": "2026-11-29T19:40:00Z",
    }


def error_row(question_id: str, *, stage: str = "generate", kind: str = "timeout") -> dict[str, Any]:
    row = judged_row(question_id)
    row.update(
        status="error",
        hypothesis=None,
        judgment=None,
        error={"stage": stage, "kind": kind, "message": "gave up", "attempts": 3},
    )
    return row
