"""memory-ref end to end through the generation driver, the real SDKs and the fake model server."""

from __future__ import annotations

import json
import re
from pathlib import Path


from lme.targets import generation_driver
from lme.models import providers
from fake_llm_server import prompt_text
from lme.core.records import Question

WRITER_CUE = "building a memory of a user"
RERANK_CUE = "Rank these past chat sessions"
READER_CUE = "memory retrieved for the user's new question"

FILLER = [
    ("Can you suggest a pasta recipe for dinner?", "Try a simple aglio e olio."),
    ("What are good stretches after running?", "Hamstring and calf stretches help."),
    ("How do I repot a succulent?", "Use well-draining soil and a pot with holes."),
]
SCRIPTED_FACTS = {
    "Holiday Market": [{"fact": "The user attended the Holiday Market downtown.", "speaker": "user",
                        "when": "yesterday"}],
    "Luna": [{"fact": "The user has a cat named Luna.", "speaker": "user"}],
    "1000 followers": [{"fact": "The user has 1000 Instagram followers.", "speaker": "user",
                        "subject": "instagram followers", "value": "1000"}],
    "1300 followers": [{"fact": "The user has 1300 Instagram followers.", "speaker": "user",
                        "subject": "instagram followers", "value": "1300"}],
}


def make_item(question: str, qid: str = "q1", evidence: list[tuple[str, str]] | None = None) -> Question:
    """A small item: three filler sessions and the given evidence sessions ``(date, user text)``."""
    sessions, dates, ids = [], [], []
    for i, (u, a) in enumerate(FILLER):
        sessions.append([{"role": "user", "content": u}, {"role": "assistant", "content": a}])
        dates.append(f"2023/11/0{i + 1} (Wed) 10:00")
        ids.append(f"filler_{i}")
    for j, (day, text) in enumerate(evidence or []):
        sessions.append([{"role": "user", "content": text, "has_answer": True},
                         {"role": "assistant", "content": "Noted!", "has_answer": False}])
        dates.append(day)
        ids.append(f"answer_{j}")
    return Question.from_dict({
        "question_id": qid, "question_type": "temporal-reasoning", "question": question, "answer": "x",
        "question_date": "2023/12/10 (Sun) 19:41", "haystack_session_ids": ids, "haystack_dates": dates,
        "haystack_sessions": sessions, "answer_session_ids": [i for i in ids if i.startswith("answer")],
    })


def scripted(rerank_reply: str = '["session_004"]', reader_reply: str = "Thinking.\nAnswer: Luna"):
    def answer(body):
        prompt = prompt_text(body)
        if WRITER_CUE in prompt:
            session = prompt.split("Session:", 1)[1]
            lines = [json.dumps(f) for cue, facts in SCRIPTED_FACTS.items() if cue in session for f in facts]
            return "\n".join(lines) or "NONE"
        if RERANK_CUE in prompt:
            return rerank_reply
        if READER_CUE in prompt:
            return reader_reply
        return "unexpected"
    return answer


def bodies_with(server, cue: str) -> list[str]:
    out = []
    for r in server.requests:
        body = r.get("body") or r.get("json") or {}
        if isinstance(body, (bytes, str)):
            try:
                body = json.loads(body)
            except ValueError:
                continue
        if isinstance(body, dict) and "messages" in body and cue in prompt_text(body):
            out.append(prompt_text(body))
    return out


def run(q: Question, tmp_path: Path, **options):
    return generation_driver.generate_hypothesis(
        q, "openai", "gpt-4o-mini", target="memory-ref", llm=providers.Gateway(), options=options,
        cache_dir=str(tmp_path / "cache"),
    )


def test_days_ago_question_is_answered_by_the_bypass_without_a_reader_call(fake_llm, tmp_path):
    fake_llm.answer_fn = scripted()
    q = make_item("How many days ago did I attend the Holiday Market?",
                  evidence=[("2023/11/27 (Mon) 09:00", "I went to the Holiday Market yesterday, so fun!")])
    out = run(q, tmp_path)
    assert out["hypothesis"] == "14 days"
    sym = out["debug"]["symbolic"]
    assert sym["bypass"]["taken"] is True
    assert out["debug"]["reader"] == {"skipped": "bypass"}
    assert bodies_with(fake_llm, READER_CUE) == []
    assert len(bodies_with(fake_llm, WRITER_CUE)) == 4
    assert out["retrieved_session_ids"][0] == "answer_0"  # real ids after the driver maps aliases
    assert sorted(out["retrieved_session_ids"]) == sorted(s.session_id for s in q.sessions)
    assert out["debug"]["writer"]["facts"] == 1 and out["debug"]["writer"]["cache_hits"] == 0
    stages = {s["name"]: s for s in out["stages"]}  # the declared stages, not memory-ref's own debug
    assert stages["writer"]["status"] == "ok" and stages["writer"]["detail"].startswith("1 facts from 4 sessions")
    assert stages["retrieval"]["status"] == "ok" and stages["reader"] == {
        "name": "reader", "status": "skipped", "detail": "the symbolic bypass answered"}
    assert stages["bypass"]["detail"].startswith("answered alone: ") and out["truncation"] is None
    assert [c["role"] for c in out["calls"]] == ["writer"] * 4
    assert out["tokensIn"] == sum(c["tokensIn"] for c in out["calls"]) > 0


def test_reader_gets_dated_evidence_facts_and_the_question_then_its_final_line_is_the_answer(fake_llm, tmp_path):
    fake_llm.answer_fn = scripted()
    q = make_item("What is the name of my cat?", evidence=[("2023/11/30 (Thu) 08:00", "My cat Luna loves boxes.")])
    out = run(q, tmp_path)
    assert out["hypothesis"] == "Luna"
    (prompt,) = bodies_with(fake_llm, READER_CUE)
    assert "The user has a cat named Luna." in prompt
    assert "2023/11/30 (Thu), 10 days before the current date" in prompt
    assert prompt.rstrip().endswith("Current date: 2023/12/10 (Sun) 19:41\nQuestion: What is the name of my cat?")
    assert "not enough information" in prompt
    assert "answer_0" not in prompt and "has_answer" not in prompt
    assert out["debug"]["symbolic"]["bypass"] == {"taken": False, "reason": "question shape not handled symbolically"}
    assert out["calls"][-1]["role"] == "reader"


def test_second_item_with_the_same_sessions_reuses_cached_facts(fake_llm, tmp_path):
    fake_llm.answer_fn = scripted()
    q = make_item("What is the name of my cat?", evidence=[("2023/11/30 (Thu) 08:00", "My cat Luna loves boxes.")])
    run(q, tmp_path)
    before = len(bodies_with(fake_llm, WRITER_CUE))
    out = run(q, tmp_path)
    assert len(bodies_with(fake_llm, WRITER_CUE)) == before
    assert out["debug"]["writer"]["cache_hits"] == 4 and out["debug"]["writer"]["calls"] == 0
    assert out["debug"]["writer"]["facts"] == 1


def test_update_question_shows_the_superseded_value_to_the_reader(fake_llm, tmp_path):
    fake_llm.answer_fn = scripted(reader_reply="Answer: 1300")
    q = make_item("How many followers do I have on Instagram now?",
                  evidence=[("2023/10/01 (Sun) 10:00", "I just hit 1000 followers on Instagram!"),
                            ("2023/11/20 (Mon) 10:00", "Now at 1300 followers on Instagram.")])
    out = run(q, tmp_path)
    superseded = out["debug"]["symbolic"]["resolver"]["superseded"]
    assert [(s["old"], s["new"]) for s in superseded] == [("1000", "1300")]
    (prompt,) = bodies_with(fake_llm, READER_CUE)
    assert "[SUPERSEDED by a later value]" in prompt
    assert "later 1300" in prompt


def test_malformed_rerank_reply_keeps_the_fused_order_and_says_so(fake_llm, tmp_path):
    fake_llm.answer_fn = scripted(rerank_reply="I think session four.")
    q = make_item("What is the name of my cat?", evidence=[("2023/11/30 (Thu) 08:00", "My cat Luna loves boxes.")])
    out = run(q, tmp_path, stack={"rerank": "openai:gpt-4o-mini"})
    assert out["debug"]["retrieval"]["rerank"]["malformed"] is True
    assert out["retrieved_session_ids"][0] == "answer_0"
    assert "rerank" in [c["role"] for c in out["calls"]]


def test_rerank_order_is_applied(fake_llm, tmp_path):
    fake_llm.answer_fn = scripted(rerank_reply='["session_002", "session_004"]')
    q = make_item("What is the name of my cat?", evidence=[("2023/11/30 (Thu) 08:00", "My cat Luna loves boxes.")])
    out = run(q, tmp_path, stack={"rerank": "openai:gpt-4o-mini"})
    assert out["retrieved_session_ids"][:2] == ["filler_1", "answer_0"]
    assert out["debug"]["retrieval"]["rerank"]["malformed"] is False


def test_embed_role_adds_a_dense_ranking(fake_llm, tmp_path):
    fake_llm.answer_fn = scripted()
    q = make_item("What is the name of my cat?", evidence=[("2023/11/30 (Thu) 08:00", "My cat Luna loves boxes.")])
    out = run(q, tmp_path, stack={"embed": "openai:text-embedding-3-small"})
    assert "embed" in out["debug"]["retrieval"]["sources"]
    assert out["debug"]["stack"]["embed"] == "openai:text-embedding-3-small"


def test_symbolic_layers_off_are_recorded_and_no_bypass_happens(fake_llm, tmp_path):
    fake_llm.answer_fn = scripted(reader_reply="Answer: two weeks")
    q = make_item("How many days ago did I attend the Holiday Market?",
                  evidence=[("2023/11/27 (Mon) 09:00", "I went to the Holiday Market yesterday, so fun!")])
    out = run(q, tmp_path, symbolic_temporal=False, symbolic_resolver=False, symbolic_bypass=False)
    sym = out["debug"]["symbolic"]
    assert sym["temporal"] == {"off": True} and sym["resolver"] == {"off": True}
    assert sym["bypass"] == {"taken": False, "reason": "symbolic_bypass off"}
    assert out["hypothesis"] == "two weeks"
    (prompt,) = bodies_with(fake_llm, READER_CUE)
    assert "days before the current date" not in prompt


def test_writer_off_makes_no_writer_calls_and_bypass_falls_through(fake_llm, tmp_path):
    fake_llm.answer_fn = scripted(reader_reply="Answer: 14 days")
    q = make_item("How many days ago did I attend the Holiday Market?",
                  evidence=[("2023/11/27 (Mon) 09:00", "I went to the Holiday Market yesterday, so fun!")])
    out = run(q, tmp_path, use_writer=False)
    assert bodies_with(fake_llm, WRITER_CUE) == []
    assert out["debug"]["writer"]["off"] is True
    assert "no extracted facts" in out["debug"]["symbolic"]["bypass"]["reason"]
    assert [c["role"] for c in out["calls"]] == ["reader"]


def test_stack_roles_route_each_call_to_its_model(fake_llm, tmp_path):
    fake_llm.answer_fn = scripted()
    q = make_item("What is the name of my cat?", evidence=[("2023/11/30 (Thu) 08:00", "My cat Luna loves boxes.")])
    out = run(q, tmp_path, stack={"writer": "openai:writer-model", "reader": "anthropic:reader-model"})
    models = {(c["role"], c["provider"], c["model"]) for c in out["calls"]}
    assert models == {("writer", "openai", "writer-model"), ("reader", "anthropic", "reader-model")}


def test_real_oracle_items_run_end_to_end(fake_llm, tmp_path, shared_data):
    fake_llm.answer_fn = scripted(reader_reply="Answer: I don't know.")
    raw = json.loads((shared_data / "longmemeval_oracle.json").read_text())
    wanted = {"temporal-reasoning", "knowledge-update", "single-session-assistant"}
    picked = []
    for item in raw:
        if item["question_type"] in wanted:
            wanted.discard(item["question_type"])
            picked.append(Question.from_dict(item))
    for q in picked:
        out = run(q, tmp_path)
        assert out["hypothesis"]
        assert set(out["retrieved_session_ids"]) == {s.session_id for s in q.sessions}
        assert set(out["debug"]["symbolic"]) == {"temporal", "resolver", "bypass"}
        assert out["debug"]["retrieval"]["top_k_covers_all"] is True
    prompts = bodies_with(fake_llm, READER_CUE)
    assert len(prompts) == len(picked)
    assert not any(re.search(r"answer_[0-9a-f]{6,}|has_answer", p) for p in prompts)


def test_the_reader_never_gets_every_session_and_the_debug_says_how_many_it_got(fake_llm, tmp_path):
    fake_llm.answer_fn = scripted()
    q = make_item("What is the name of my cat?", evidence=[("2023/11/30 (Thu) 08:00", "My cat Luna loves boxes.")])
    out = run(q, tmp_path, top_k=10)
    retrieval = out["debug"]["retrieval"]
    assert retrieval["top_k_covers_all"] is True and retrieval["shown"] == len(q.sessions) - 1
    assert out["debug"]["reader"]["sessions"] == retrieval["shown"]
    assert retrieval["retriever"] == "best" and "cat" in retrieval["query"]["terms"]
    fixed = run(q, tmp_path, top_k=2, adaptive_k=False)["debug"]
    assert fixed["retrieval"]["shown"] == 2 and fixed["reader"]["sessions"] == 2

