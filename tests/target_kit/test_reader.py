import json

import pytest

from lme.target_kit.reader import (
    build_reader_request,
    context_window,
    count_request_tokens,
    render_history,
    sort_by_date,
    truncate_to_fit,
)
from lme.target_kit import reader
from lme.core.records import Completion, PublicItem, PublicSession, PublicTurn, TargetContext
from lme.models.token_counts import estimate_tokens
from test_providers import WordEncoding, use_encodings


def session(alias, date, *turns):
    return PublicSession(alias, date, tuple(PublicTurn(r, c) for r, c in turns))


S_LATE = session("session_001", "2023/05/30 (Tue) 23:40", ("user", "late talk"), ("assistant", "ok late"))
S_EARLY = session("session_002", "2023/05/20 (Sat) 02:21", ("user", "early talk"), ("assistant", "ok early"))
S_SAME_DAY_EARLIER = session("session_003", "2023/05/30 (Tue) 09:05", ("user", "morning talk"))


def test_sessions_are_sorted_by_parsed_date_including_minutes():
    ordered = sort_by_date([S_LATE, S_EARLY, S_SAME_DAY_EARLIER])
    assert [s.session_id for s in ordered] == ["session_002", "session_003", "session_001"]


def test_equal_dates_keep_their_order_and_unparseable_dates_go_last():
    a = session("a", "2023/05/30 (Tue) 10:00")
    b = session("b", "2023/05/30 (Tue) 10:00")
    bad = session("bad", "yesterday")
    assert [s.session_id for s in sort_by_date([bad, b, a])] == ["b", "a", "bad"]


def test_json_history_renders_each_session_with_its_date_and_turns_in_date_order():
    text = render_history([S_LATE, S_EARLY], fmt="json")
    assert text.index("2023/05/20 (Sat) 02:21") < text.index("2023/05/30 (Tue) 23:40")
    assert text.index("early talk") < text.index("late talk")
    first_body = text.split("\n")[1]
    assert json.loads(first_body) == [{"role": "user", "content": "early talk"},
                                      {"role": "assistant", "content": "ok early"}]
    assert "session_00" not in text  # aliases are not shown to the model


def test_nl_history_renders_role_prefixed_turns():
    text = render_history([S_EARLY], fmt="nl")
    assert "user: early talk\n\nassistant: ok early" in text


def test_history_accepts_plain_dicts_and_never_renders_has_answer():
    raw = {"date": "2023/05/20 (Sat) 02:21", "turns": [{"role": "user", "content": "x", "has_answer": True}]}
    text = render_history([raw])
    assert "has_answer" not in text and '"x"' in text


def test_unknown_history_format_is_rejected():
    with pytest.raises(ValueError):
        render_history([S_EARLY], fmt="xml")


ITEM = PublicItem(question="Where did I move?", question_date="2023/06/01 (Thu) 10:00", sessions=(S_EARLY,))


def test_direct_request_puts_history_then_current_date_then_question_at_temperature_zero():
    req = build_reader_request(ITEM, "HISTORY-TEXT", provider="openai", model="gpt-4o")
    assert req.max_tokens == 500 and req.temperature == 0.0 and req.system is None
    (msg,) = req.messages
    prompt = msg["content"]
    assert msg["role"] == "user"
    i_hist, i_date, i_q = (prompt.index("HISTORY-TEXT"), prompt.index("Current date: 2023/06/01 (Thu) 10:00"),
                           prompt.index("Where did I move?"))
    assert i_hist < i_date < i_q


def test_chain_of_note_mode_asks_for_notes_then_reasoning_with_800_tokens():
    req = build_reader_request(ITEM, "H", provider="anthropic", model="claude-x", mode="con")
    assert req.max_tokens == 800
    assert "note" in req.messages[0]["content"].lower() and "step by step" in req.messages[0]["content"]
    assert build_reader_request(ITEM, "H", provider="a", model="m", max_tokens=42).max_tokens == 42


def test_unknown_reader_mode_is_rejected():
    with pytest.raises(ValueError):
        build_reader_request(ITEM, "H", provider="a", model="m", mode="cot")


def test_context_window_uses_longest_prefix_option_wins_and_unknown_falls_back():
    assert context_window("gpt-4o-mini-2024-07-18") == (128_000, "table")
    assert context_window("gpt-4.1-2025-04-14")[0] > 1_000_000
    assert context_window("claude-sonnet-4-5") == (200_000, "table")
    assert context_window("claude-sonnet-4-5", 50_000) == (50_000, "option")
    assert context_window("mystery-model")[1] == "default"


def test_truncation_drops_oldest_sessions_first_until_the_prompt_fits():
    sessions = [session(f"s{i}", f"2023/05/{10 + i:02d} (Mon) 10:00", ("user", "x" * 100)) for i in range(10)]
    shuffled = sessions[5:] + sessions[:5]

    def count(kept):
        return 50 + 100 * len(kept), "estimate"

    kept, info = truncate_to_fit(shuffled, 480, count)
    assert [s.session_id for s in kept] == ["s6", "s7", "s8", "s9"]
    assert info == {"truncated": True, "dropped_sessions": 6, "kept_sessions": 4, "tokens": 450,
                    "counted_with": "estimate", "dropped_session_ids": ["s0", "s1", "s2", "s3", "s4", "s5"]}


def test_no_truncation_when_everything_fits_and_provider_counts_are_reported():
    kept, info = truncate_to_fit([S_LATE, S_EARLY], 10_000, lambda kept: (len(kept), "provider"))
    assert [s.session_id for s in kept] == ["session_002", "session_001"]
    assert info["truncated"] is False and info["dropped_sessions"] == 0 and info["counted_with"] == "provider"


def test_truncation_can_drop_every_session_when_even_one_does_not_fit():
    kept, info = truncate_to_fit([S_LATE, S_EARLY], 5, lambda kept: (10 + 100 * len(kept), "estimate"))
    assert kept == [] and info["dropped_sessions"] == 2 and info["tokens"] == 10


def test_count_request_tokens_falls_back_to_an_estimate(monkeypatch):
    use_encodings(monkeypatch, offline_loader)
    req = build_reader_request(ITEM, "h" * 4300, provider="openai", model="gpt-4o")
    n, how = count_request_tokens(req, use_provider=False)
    assert how == "estimate" and n == estimate_tokens(req.messages[0]["content"])
    assert 1000 < n < 1100  # characters / 4.3


# --------------------------------------------------------------------------- budget, exact counts, estimate


def offline_loader(name):
    raise ConnectionError("no network")


def ten_sessions(words_each=100):
    return [session(f"session_{i:03d}", f"2023/05/{10 + i:02d} (Wed) 10:00", ("user", " ".join(["word"] * words_each)))
            for i in range(10)]


def exact_tokens(sessions, model="gpt-4o", **options):
    from lme.models import providers

    request, _ = reader.build_fitted_request(ITEM, sessions, provider="openai", model=model,
                                             options={"context_window": 10**9, **options})
    return providers.count_tokens_how(request, remote=False)[0]


def test_exact_counts_use_upstreams_budget_window_minus_output_minus_1000(monkeypatch):
    use_encodings(monkeypatch, lambda name: WordEncoding())
    sessions = ten_sessions()
    n = exact_tokens(sessions)
    _, info = reader.build_fitted_request(ITEM, sessions, provider="openai", model="gpt-4o",
                                          options={"context_window": n + 500 + 1000})
    assert info["counted_with"] == "tiktoken" and info["budget_tokens"] == n
    assert info["truncated"] is False and info["tokens"] == n  # the whole budget, no safety share

    request, info = reader.build_fitted_request(ITEM, sessions, provider="openai", model="gpt-4o",
                                                options={"context_window": n + 500 + 1000 - 1})
    assert info["truncated"] and info["dropped_sessions"] == 1 and info["counted_with"] == "tiktoken"
    assert info["dropped_session_ids"] == ["session_000"] and info["tokens"] <= n - 1
    assert "2023/05/10" not in request.messages[0]["content"]


def test_estimates_use_the_calibrated_ratio_and_the_same_budget(monkeypatch):
    use_encodings(monkeypatch, offline_loader)
    sessions = ten_sessions()
    request, _ = reader.build_fitted_request(ITEM, sessions, provider="vllm", model="llama-3-70b",
                                             options={"context_window": 10**9})
    estimate = estimate_tokens(request.messages[0]["content"])
    _, info = reader.build_fitted_request(ITEM, sessions, provider="vllm", model="llama-3-70b",
                                          options={"context_window": estimate + 1500})
    assert info["counted_with"] == "estimate" and info["truncated"] is False and info["budget_tokens"] == estimate
    _, info = reader.build_fitted_request(ITEM, sessions, provider="vllm", model="llama-3-70b",
                                          options={"context_window": estimate + 1499})
    assert info["truncated"] and info["dropped_sessions"] == 1


class TooLongOnce:
    """Rejects the first ``rejections`` requests as too long (as providers classifies OpenAI's 400), then answers."""

    def __init__(self, rejections=1, message="This model's maximum context length is 128000 tokens. However, "
                                              "your messages resulted in 131000 tokens."):
        self.rejections, self.message, self.requests = rejections, message, []

    def complete(self, request):
        from lme.models import providers

        self.requests.append(request)
        if len(self.requests) <= self.rejections:
            raise providers.ProviderError("bad_request", f"vllm llama: request rejected (HTTP 400: {self.message})",
                                          status=400)
        return Completion(text="Denver", tokensIn=10, tokensOut=1, latencyMs=1.0, provider=request.provider,
                          model=request.model)


def reader_ctx(llm, **options):
    return TargetContext(provider="vllm", model="llama-3-70b", llm=llm, options=options)


def test_a_prompt_rejected_as_too_long_is_retried_once_with_more_old_sessions_dropped(monkeypatch):
    use_encodings(monkeypatch, offline_loader)
    llm = TooLongOnce()
    sessions = ten_sessions()
    hyp = reader.answer_with_reader(ITEM, sessions, reader_ctx(llm))
    assert hyp.hypothesis == "Denver" and len(llm.requests) == 2
    first, second = (r.messages[0]["content"] for r in llm.requests)
    assert "2023/05/10" in first and "2023/05/10" not in second and "2023/05/19" in second
    info, first_try = hyp.truncation, hyp.debug["reader"]["retried_after_too_long"]
    assert info.truncated and info.dropped_session_ids[0] == "session_000" and info.retried_after_too_long
    assert first_try["dropped_sessions"] == 0
    assert info.tokens <= first_try["tokens"] * reader.RETRY_BUDGET_SHARE


def test_a_second_too_long_rejection_and_other_bad_requests_are_not_retried(monkeypatch):
    from lme.models import providers

    use_encodings(monkeypatch, offline_loader)
    llm = TooLongOnce(rejections=2)
    with pytest.raises(providers.ProviderError, match="maximum context length"):
        reader.answer_with_reader(ITEM, ten_sessions(), reader_ctx(llm))
    assert len(llm.requests) == 2
    llm = TooLongOnce(rejections=1, message="Invalid value for temperature")
    with pytest.raises(providers.ProviderError, match="temperature"):
        reader.answer_with_reader(ITEM, ten_sessions(), reader_ctx(llm))
    assert len(llm.requests) == 1


def test_too_long_rejections_are_recognised_across_providers():
    from lme.models import providers

    for text in ("This model's maximum context length is 128000 tokens", "prompt is too long: 210000 tokens > 200000",
                 "context_length_exceeded"):
        assert reader.rejected_as_too_long(providers.ProviderError("bad_request", text))
    assert not reader.rejected_as_too_long(providers.ProviderError("rate_limit", "context length"))
    assert not reader.rejected_as_too_long(providers.ProviderError("bad_request", "bad parameter"))
