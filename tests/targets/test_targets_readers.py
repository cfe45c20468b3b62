"""full-context, oracle and rag end to end: the real SDKs (providers.Gateway) against the fake model server."""

import json

import pytest

from lme.targets import generation_driver as gd
from lme.core.records import Question
from lme.score.retrieval_metrics import evaluate
from test_targets_common import GOLD, RecordingLLM, make_raw_item


@pytest.fixture
def gateway(fake_llm):
    from lme.models import providers
    from lme.models import token_counts

    return providers.Gateway(providers.ProviderSettings(max_attempts=2, backoff_base=0.01, timeout_s=10))


def reader_bodies(server):
    return [r["body"] for r in server.requests if r["path"].endswith(("/chat/completions", "/messages"))]


def body_prompt(body):
    return "\n".join(m["content"] if isinstance(m["content"], str) else json.dumps(m["content"])
                     for m in body["messages"])


@pytest.mark.parametrize("provider,model", [("openai", "gpt-4o"), ("anthropic", "claude-sonnet-4-6")])
def test_full_context_answers_through_each_sdk_with_sessions_in_date_order(fake_llm, gateway, provider, model):
    item = make_raw_item()
    fake_llm.answers = {item["question"]: "Luna"}
    out = gd.generate_hypothesis(item, provider, model, target="full-context", llm=gateway)
    assert out["hypothesis"] == "Luna" and out["tokensIn"] > 0 and out["tokensOut"] > 0
    (body,) = reader_bodies(fake_llm)
    assert body["temperature"] == 0 and body["max_tokens"] == 500
    prompt = body_prompt(body)
    dates = ["2023/05/20 (Sat) 08:15", "2023/05/21 (Sun) 10:00", "2023/05/25 (Thu) 07:45",
             "2023/05/25 (Thu) 18:30", "2023/05/28 (Sun) 09:00"]
    assert [prompt.index(d) for d in dates] == sorted(prompt.index(d) for d in dates)
    assert prompt.index(dates[-1]) < prompt.index("Current date: 2023/06/01") < prompt.index(item["question"])
    assert out["truncation"]["truncated"] is False


def test_chain_of_note_mode_and_nl_history_reach_the_request(fake_llm, gateway):
    gd.generate_hypothesis(make_raw_item(), "openai", "gpt-4o", llm=gateway,
                           options={"mode": "con", "history_format": "nl"})
    (body,) = reader_bodies(fake_llm)
    assert body["max_tokens"] == 800 and "user: I just adopted a kitten" in body_prompt(body)


@pytest.fixture(autouse=True)
def no_tiktoken_download(monkeypatch):
    """Counts here never download tiktoken's file: OpenAI prompts are estimated unless a test installs an encoding."""
    from lme.models import providers
    from lme.models import token_counts

    def offline(name):
        raise ConnectionError("tests never reach the internet")

    monkeypatch.setattr(token_counts, "_ENCODINGS", token_counts._Encodings(loader=offline))


def test_full_context_drops_oldest_sessions_when_the_window_is_small(fake_llm, gateway):
    # budget 1750 - 600 - 1000 = 150 tokens: only the newest session (Denver) fits
    out = gd.generate_hypothesis(make_raw_item(), "openai", "gpt-4o", llm=gateway,
                                 options={"context_window": 1750, "max_tokens": 600})
    info = out["truncation"]
    assert info["truncated"] and info["dropped_sessions"] == 4 and info["counted_with"] == "estimate"
    prompt = body_prompt(reader_bodies(fake_llm)[0])
    assert "bicycle" not in prompt  # the oldest session went first
    assert "Denver" in prompt  # the newest stayed
    # the driver maps the dropped aliases to real ids and counts the evidence among them
    assert info["dropped_session_ids"] == ["ultrachat_bbb_2", "sharegpt_aaa_0", "ultrachat_ddd_4", f"answer_{GOLD}_1"]
    assert info["dropped_evidence"] == 1


def test_truncation_that_keeps_the_evidence_reports_none_lost(fake_llm, gateway):
    out = gd.generate_hypothesis(make_raw_item(), "openai", "gpt-4o", llm=gateway,
                                 options={"context_window": 1850, "max_tokens": 600})
    info = out["truncation"]
    assert info["dropped_sessions"] == 2 and info["dropped_evidence"] == 0
    untruncated = gd.generate_hypothesis(make_raw_item(), "openai", "gpt-4o", llm=gateway)
    assert untruncated["truncation"]["dropped_session_ids"] == []
    assert untruncated["truncation"]["dropped_evidence"] == 0


def test_openai_prompts_near_the_window_are_counted_with_tiktoken(fake_llm, gateway, monkeypatch):
    from test_providers import WordEncoding, use_encodings

    use_encodings(monkeypatch, lambda name: WordEncoding())
    out = gd.generate_hypothesis(make_raw_item(), "openai", "gpt-4o", llm=gateway,
                                 options={"context_window": 1750, "max_tokens": 600})
    info = out["truncation"]
    # counted exactly (one token per word here), two sessions go where the estimate dropped four
    assert info["counted_with"] == "tiktoken" and out["debug"]["reader"]["budget_tokens"] == 150
    assert info["dropped_sessions"] == 2 and info["tokens"] == 149 and info["dropped_evidence"] == 0


def test_a_prompt_the_server_rejects_as_too_long_is_retried_once_with_fewer_sessions(fake_llm, gateway):
    fake_llm.fail_next("400", message="This model's maximum context length is 128000 tokens. However, your "
                                      "messages resulted in 131072 tokens. Please reduce the length of the messages.")
    out = gd.generate_hypothesis(make_raw_item(), "openai", "gpt-4o", llm=gateway)
    first, second = (body_prompt(b) for b in reader_bodies(fake_llm))
    assert "bicycle" in first and "bicycle" not in second and "Denver" in second
    info = out["truncation"]
    assert info["truncated"] and info["dropped_session_ids"][0] == "ultrachat_bbb_2"
    assert info["retried_after_too_long"] is True
    assert out["debug"]["reader"]["retried_after_too_long"] == {"tokens": 319, "counted_with": "estimate",
                                                                 "dropped_sessions": 0}
def test_oracle_reads_only_evidence_through_the_fake_server(fake_llm, gateway):
    item = make_raw_item()
    fake_llm.answers = {item["question"]: "Luna"}
    out = gd.generate_hypothesis(item, "openai", "gpt-4o", target="oracle", llm=gateway)
    prompt = body_prompt(reader_bodies(fake_llm)[0])
    assert out["hypothesis"] == "Luna" and "kitten" in prompt and "pasta" not in prompt


def test_rag_ranks_every_session_and_reads_only_the_top_k_in_date_order(fake_llm, gateway):
    out = gd.generate_hypothesis(make_raw_item(), "openai", "gpt-4o", target="rag", llm=gateway,
                                 options={"top_k": 2})
    ranked = out["retrieved_session_ids"]
    assert ranked[0] == f"answer_{GOLD}_1" and len(ranked) == 5
    prompt = body_prompt(reader_bodies(fake_llm)[0])
    assert prompt.count("| date: 2023/") == 2 and "kitten" in prompt
    assert out["retrieval"] == {"top_k": 2, "granularity": "session", "top_k_covers_all": False}
    q = Question.from_dict(make_raw_item())
    assert evaluate(ranked, q.gold_session_ids(), ks=(1,))["recall_all@1"] == 1.0


def test_rag_turn_granularity_maps_turn_hits_to_their_session():
    out = gd.generate_hypothesis(make_raw_item(question="Where should I go for a trip to Denver?"), "openai",
                                 "gpt-4o", target="rag", llm=RecordingLLM(), options={"granularity": "turn",
                                                                                      "top_k": 1})
    assert out["retrieved_session_ids"][0] == "sharegpt_ccc_3" and len(out["retrieved_session_ids"]) == 5


def test_rag_top_k_covering_every_session_warns_once_and_is_recorded(capsys):
    rag = gd.load_target("rag")
    rag._warn_once.cache_clear()
    for _ in range(2):
        out = gd.generate_hypothesis(make_raw_item(), "openai", "gpt-4o", target="rag", llm=RecordingLLM(),
                                     options={"top_k": 10})
        assert out["debug"]["retrieval"]["top_k_covers_all"] is True
    assert capsys.readouterr().err.count("top_k=10") == 1


def test_rag_with_embeddings_fuses_rankings_and_caches_vectors_on_disk(fake_llm, gateway, tmp_path):
    options = {"top_k": 2, "embed_model": "openai:text-embedding-3-small"}
    first = gd.generate_hypothesis(make_raw_item(), "openai", "gpt-4o", target="rag", llm=gateway,
                                   options=options, cache_dir=str(tmp_path))
    assert first["debug"]["retrieval"]["fusion"] == "rrf"
    assert first["debug"]["retrieval"]["embeddings_computed"] == 6  # query + five sessions
    embed_calls = [r for r in fake_llm.requests if r["path"].endswith("/embeddings")]
    assert len(embed_calls) == 1
    second = gd.generate_hypothesis(make_raw_item(), "openai", "gpt-4o", target="rag", llm=gateway,
                                    options=options, cache_dir=str(tmp_path))
    assert second["debug"]["retrieval"]["embeddings_computed"] == 0
    assert len([r for r in fake_llm.requests if r["path"].endswith("/embeddings")]) == 1
    assert second["retrieved_session_ids"] == first["retrieved_session_ids"]


def test_rag_rejects_a_setup_with_no_retriever():
    with pytest.raises(gd.TargetError, match="needs a retriever"):
        gd.generate_hypothesis(make_raw_item(), "openai", "gpt-4o", target="rag", llm=RecordingLLM(),
                               options={"bm25": False})


def test_reciprocal_rank_fusion_prefers_documents_high_in_both():
    rag = gd.load_target("rag")
    assert rag.index.rrf([["a", "b", "c"], ["b", "c", "a"]]) == ["b", "a", "c"]


def test_real_oracle_items_run_through_every_reader_target(shared_data, fake_llm, gateway):
    from lme.data import dataset

    items = []
    for raw in dataset.iter_items(shared_data / "longmemeval_oracle.json"):
        if not items or raw["question_type"] != items[-1]["question_type"]:
            items.append(raw)
        if len(items) == 3:
            break
    fake_llm.answers = {it["question"]: str(it["answer"]) for it in items}
    for raw in items:
        for target in ("full-context", "oracle", "rag"):
            out = gd.generate_hypothesis(raw, "openai", "gpt-4o", target=target, llm=gateway,
                                         options={"top_k": 3} if target == "rag" else {})
            assert out["hypothesis"] == str(raw["answer"])
        assert set(out["retrieved_session_ids"]) == set(raw["haystack_session_ids"])
    assert not any("has_answer" in json.dumps(r["body"]) for r in fake_llm.requests)
