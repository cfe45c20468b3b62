"""Builders shared by the target tests (generated items in the LongMemEval shape) and a recording LLM.

GOLD is a marker placed ONLY in gold fields (answer, evidence session ids); the gold-never-leaks test asserts it
never reaches a model or a subprocess.
"""

from __future__ import annotations

import threading
from typing import Any, Sequence

from lme.core.records import ChatRequest, Completion

GOLD = "ZQGOLDMARKQZ"


def make_raw_item(
    question_id: str = "gen_001",
    question: str = "What is the name of my cat?",
    answer: str = f"Luna {GOLD}",
    question_type: str = "single-session-user",
) -> dict[str, Any]:
    """Five sessions, dates out of order, one evidence session (real id holds ``answer`` and the marker)."""
    sessions = [
        ("sharegpt_aaa_0", "2023/05/21 (Sun) 10:00",
         [("user", "Can you suggest a pasta recipe with mushrooms?"), ("assistant", "Try a creamy mushroom pasta.")]),
        (f"answer_{GOLD}_1", "2023/05/25 (Thu) 18:30",
         [("user", "I just adopted a kitten and named my cat Luna. Any tips on litter training?"),
          ("assistant", "Congratulations on adopting Luna! Start with a shallow litter box.")]),
        ("ultrachat_bbb_2", "2023/05/20 (Sat) 08:15",
         [("user", "How do I fix a flat bicycle tire?"), ("assistant", "Remove the wheel and find the puncture.")]),
        ("sharegpt_ccc_3", "2023/05/28 (Sun) 09:00",
         [("user", "Plan a weekend trip to Denver for me."), ("assistant", "Visit Red Rocks and Union Station.")]),
        ("ultrachat_ddd_4", "2023/05/25 (Thu) 07:45",
         [("user", "What are good stretches after running?"), ("assistant", "Hamstring and calf stretches help.")]),
    ]
    return {
        "question_id": question_id,
        "question_type": question_type,
        "question": question,
        "answer": answer,
        "question_date": "2023/06/01 (Thu) 12:00",
        "haystack_session_ids": [sid for sid, _, _ in sessions],
        "haystack_dates": [date for _, date, _ in sessions],
        "haystack_sessions": [
            [{"role": r, "content": c, "has_answer": sid.startswith("answer_") and r == "user"} for r, c in turns]
            for sid, _, turns in sessions
        ],
        "answer_session_ids": [sid for sid, _, _ in sessions if sid.startswith("answer_")],
    }


class RecordingLLM:
    """An in-process LLM: records each request and answers with ``reply`` (thread-safe)."""

    def __init__(self, reply: str = "Your cat is named Luna.") -> None:
        self.reply = reply
        self.requests: list[ChatRequest] = []
        self.embedded: list[str] = []
        self._lock = threading.Lock()

    def complete(self, request: ChatRequest) -> Completion:
        with self._lock:
            self.requests.append(request)
        return Completion(text=self.reply, tokensIn=100, tokensOut=7, latencyMs=12.5, provider=request.provider,
                          model=request.model)

    def embed(self, provider: str, model: str, texts: Sequence[str]) -> list[list[float]]:
        with self._lock:
            self.embedded.extend(texts)
        return [[float(len(t) % 7), float(("cat" in t.lower())), 1.0] for t in texts]


def prompt_of(request: ChatRequest) -> str:
    return "\n".join(m["content"] for m in request.messages)


def test_generated_item_has_one_evidence_session_with_a_gold_user_turn():
    from lme.core.records import Question

    q = Question.from_dict(make_raw_item())
    assert q.gold_session_ids() == (f"answer_{GOLD}_1",)
    assert GOLD not in repr(q.public())
