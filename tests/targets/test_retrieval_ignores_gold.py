"""The retrievers' rankings do not depend on gold labels: flipping every ``has_answer`` flag and renaming every
session id (evidence ids hold ``answer``) leaves memory-ref's and rag's rankings, by position, unchanged."""

from __future__ import annotations

import copy

import pytest

from lme.targets import generation_driver as gd
from test_targets_common import RecordingLLM, make_raw_item


def _bigger_item() -> dict:
    """``make_raw_item`` plus more sessions, one repeated, so fusion, feedback and de-duplication all take part."""
    raw = make_raw_item(question="Which kitten did I adopt two weeks ago, and what did you suggest for it?")
    extra = [
        ("sharegpt_eee_5", "2023/05/18 (Thu) 11:00", [("user", "My kitten Luna scratches the sofa."),
                                                      ("assistant", "Try a sisal scratching post.")]),
        ("ultrachat_fff_6", "2023/04/02 (Sun) 09:30", [("user", "Best time to visit Kyoto?"),
                                                       ("assistant", "Spring, for the cherry blossoms.")]),
    ]
    for sid, date, turns in extra + [extra[0]]:  # the last one repeats sharegpt_eee_5, as the _s copy does
        raw["haystack_session_ids"].append(sid)
        raw["haystack_dates"].append(date)
        raw["haystack_sessions"].append([{"role": r, "content": c, "has_answer": False} for r, c in turns])
    return raw


def _relabelled(raw: dict) -> dict:
    out = copy.deepcopy(raw)
    renamed = {sid: f"{'answer' if 'answer' not in sid else 'plain'}_{n}"
               for n, sid in enumerate(dict.fromkeys(raw["haystack_session_ids"]))}
    out["haystack_session_ids"] = [renamed[s] for s in raw["haystack_session_ids"]]
    out["answer_session_ids"] = [s for s in out["haystack_session_ids"] if s.startswith("answer")]
    for session in out["haystack_sessions"]:
        for turn in session:
            turn["has_answer"] = not turn.get("has_answer", False)
    return out


def _positions(raw: dict, out: dict) -> list[int]:
    first = {}
    for n, sid in enumerate(raw["haystack_session_ids"]):
        first.setdefault(sid, n)
    return [first[sid] for sid in out["retrieved_session_ids"]]


def _by_position(raw: dict, block: dict) -> dict:
    """A retrieval debug block with every real session id replaced by its first position in the haystack."""
    first: dict[str, int] = {}
    for n, sid in enumerate(raw["haystack_session_ids"]):
        first.setdefault(sid, n)

    def pos(value):
        if isinstance(value, str):
            return first.get(value, value)
        if isinstance(value, list):
            return [pos(v) for v in value]
        if isinstance(value, dict):
            return {k: pos(v) for k, v in value.items()}
        return value
    return {k: pos(v) if k in ("top", "per_source_top", "duplicates_dropped") else v for k, v in block.items()}


@pytest.mark.parametrize("target,options", [
    ("rag", {}),
    ("rag", {"retriever": "plain"}),
    ("rag", {"granularity": "turn"}),
    ("memory-ref", {"use_writer": False}),
])
def test_ranking_is_the_same_when_labels_and_ids_change(target, options):
    raw = _bigger_item()
    flipped = _relabelled(raw)
    before = gd.generate_hypothesis(raw, "openai", "gpt-4o", target=target, llm=RecordingLLM(), options=options)
    after = gd.generate_hypothesis(flipped, "openai", "gpt-4o", target=target, llm=RecordingLLM(), options=options)
    assert _positions(raw, before) == _positions(flipped, after)
    # the debug names real session ids; by position in the haystack nothing else differs
    assert _by_position(raw, before["debug"]["retrieval"]) == _by_position(flipped, after["debug"]["retrieval"])
    ids = before["retrieved_session_ids"]
    assert len(ids) == len(set(ids)) == len(set(raw["haystack_session_ids"]))  # the repeat is returned once
