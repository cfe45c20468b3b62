"""A tiny factory for LongMemEval-shaped items and result rows in tests (stand-in wording, never real data)."""

from __future__ import annotations

import gzip
import json
import lzma
from pathlib import Path
from typing import Any, Sequence

from factories import result_row
from lme.judge.official import Judged, JudgeRoute, judge_verdict


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
    """A judged row (``factories.result_row``) by a stand-in offline judge ``judge-x``."""
    return result_row(question_id, question_type, label, hypothesis="blue",
                      judge_base={"model": "judge-x", "provider": "offline"})


def error_row(question_id: str, *, stage: str = "generate", kind: str = "timeout") -> dict[str, Any]:
    """An error row (``factories.result_row``): the item gave up after 3 attempts."""
    return result_row(question_id, "multi-session", None, error={"stage": stage, "kind": kind})


def judge_json(question_type: str, question: str, answer: Any, hypothesis: str, longmemeval_root: Any, *,
               question_id: str, **route: Any) -> dict[str, Any]:
    """``judge_verdict`` from plain arguments, as JSON (``route``: ``JudgeRoute``'s fields by name)."""
    return judge_verdict(Judged(question_id, question_type, question, answer, hypothesis),
                         JudgeRoute(longmemeval_root, **route)).to_dict()
