"""The fake server speaks well enough for the real SDKs, logs what it got, and injects the faults it promises."""

from __future__ import annotations

import concurrent.futures
import subprocess
import sys
import time
from pathlib import Path

import anthropic
import openai
import pytest

from fake_llm_server import FakeLLMServer, embedding_for, stable_share


def _openai(server: FakeLLMServer, timeout: float = 10.0) -> openai.OpenAI:
    return openai.OpenAI(api_key="sk-test-x", base_url=server.openai_base_url, max_retries=0, timeout=timeout)


def _anthropic(server: FakeLLMServer, timeout: float = 10.0) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="sk-ant-x", base_url=server.anthropic_base_url, max_retries=0,
                               timeout=timeout)


def _ask_openai(client: openai.OpenAI, text: str, max_tokens: int = 50, model: str = "gpt-4o"):
    return client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": text}], max_tokens=max_tokens, temperature=0
    )


def test_openai_sdk_parses_a_chat_completion_with_the_pinned_model_and_usage(fake_llm):
    fake_llm.answers = {"Where did I park?": "Level 3"}
    result = _ask_openai(_openai(fake_llm), "History...\nQuestion: Where did I park?")
    assert result.choices[0].message.content == "Level 3"
    assert result.model == "gpt-4o-2024-08-06"
    assert result.usage.prompt_tokens > 0 and result.usage.completion_tokens > 0
    raw = _openai(fake_llm).chat.completions.with_raw_response.create(
        model="m-x", messages=[{"role": "user", "content": "hi"}], max_tokens=5
    )
    assert raw.headers["x-request-id"].startswith("req_")
    assert raw.parse().model == "m-x"


def test_anthropic_sdk_parses_a_message_and_counts_tokens(fake_llm):
    fake_llm.answers = {"Which city?": "Lisbon"}
    client = _anthropic(fake_llm)
    msg = client.messages.create(
        model="claude-x", system="be brief", max_tokens=100,
        messages=[{"role": "user", "content": "Which city?"}],
    )
    assert msg.content[0].text == "Lisbon"
    assert msg.model == "claude-x" and msg.stop_reason == "end_turn"
    assert msg.usage.input_tokens > 0
    counted = client.messages.count_tokens(model="claude-x", messages=[{"role": "user", "content": "x" * 400}])
    assert counted.input_tokens == 101
    logged = fake_llm.requests[0]
    assert logged["path"] == "/v1/messages"
    assert logged["body"]["system"] == "be brief"
    headers = logged["headers"]
    assert "sk-ant-x" in (headers.get("x-api-key", "") + headers.get("authorization", ""))


def test_embeddings_are_deterministic_in_float_and_base64(fake_llm):
    client = _openai(fake_llm)
    first = client.embeddings.create(model="text-embedding-3-small", input=["a", "b"])
    floats = client.embeddings.create(model="text-embedding-3-small", input="a", encoding_format="float")
    assert len(first.data) == 2
    assert first.data[0].embedding == pytest.approx(embedding_for("a"), abs=1e-6)
    assert floats.data[0].embedding == pytest.approx(embedding_for("a"))
    assert first.data[0].embedding != pytest.approx(first.data[1].embedding)


def test_correct_share_answers_a_stable_subset(fake_llm):
    questions = [f"question number {i}?" for i in range(40)]
    fake_llm.answers = {q: f"gold {i}" for i, q in enumerate(questions)}
    fake_llm.correct_share = 0.5
    client = _openai(fake_llm)
    replies = [_ask_openai(client, q).choices[0].message.content for q in questions]
    expected = [f"gold {i}" if stable_share(q) < 500 else "I don't know." for i, q in enumerate(questions)]
    assert replies == expected
    assert 5 < sum(r.startswith("gold") for r in replies) < 35


def test_judge_calls_say_yes_only_when_the_response_holds_the_gold_answer(fake_llm):
    fake_llm.answers = {"What colour is my car?": "red"}
    client = _openai(fake_llm)
    good = "Judge this. Q: What colour is my car? Gold: red. Response: It is red."
    bad = "Judge this. Q: What colour is my car? Gold: red. Response: It is blue."
    assert _ask_openai(client, good, max_tokens=10).choices[0].message.content == "yes"
    assert _ask_openai(client, bad, max_tokens=10).choices[0].message.content == "no"
    fake_llm.answers = {}
    standin = "STANDIN generic: Q=What? A=Level 3 R=parked on level 3 today"
    assert _ask_openai(client, standin, max_tokens=10).choices[0].message.content == "yes"
    fake_llm.judge_fn = lambda prompt: "Yes, because"
    assert _ask_openai(client, bad, max_tokens=10).choices[0].message.content == "Yes, because"


@pytest.mark.parametrize(
    ("kind", "error", "status"),
    [
        ("429", openai.RateLimitError, 429),
        ("insufficient_quota", openai.RateLimitError, 429),
        ("500", openai.InternalServerError, 500),
        ("503", openai.InternalServerError, 503),
        ("400", openai.BadRequestError, 400),
        ("401", openai.AuthenticationError, 401),
        ("404", openai.NotFoundError, 404),
    ],
)
def test_http_faults_reach_the_openai_sdk_as_the_matching_error(fake_llm, kind, error, status):
    fake_llm.fail_next(kind)
    client = _openai(fake_llm)
    with pytest.raises(error) as info:
        _ask_openai(client, "hello")
    assert info.value.status_code == status
    assert _ask_openai(client, "hello").choices[0].message.content  # the fault was used up


def test_429_carries_retry_after_headers_and_quota_carries_its_code(fake_llm):
    fake_llm.fail_next("429", retry_after=0.5)
    fake_llm.fail_next("insufficient_quota")
    client = _openai(fake_llm)
    with pytest.raises(openai.RateLimitError) as limited:
        _ask_openai(client, "x")
    assert limited.value.response.headers["retry-after"] == "0.5"
    assert limited.value.response.headers["retry-after-ms"] == "500"
    with pytest.raises(openai.RateLimitError) as quota:
        _ask_openai(client, "x")
    assert quota.value.code == "insufficient_quota"


def test_anthropic_specific_faults(fake_llm):
    client = _anthropic(fake_llm)
    fake_llm.fail_next("529")
    fake_llm.fail_next("credit_balance")
    fake_llm.fail_next("refusal")
    ask = lambda: client.messages.create(model="c", max_tokens=20, messages=[{"role": "user", "content": "q"}])
    with pytest.raises(anthropic.APIStatusError) as overloaded:
        ask()
    assert overloaded.value.status_code == 529
    with pytest.raises(anthropic.BadRequestError) as credit:
        ask()
    assert "credit balance is too low" in str(credit.value)
    assert ask().stop_reason == "refusal"


def test_connection_faults_surface_as_connection_errors(fake_llm):
    client = _openai(fake_llm, timeout=0.5)
    for kind in ("reset", "truncated"):
        fake_llm.fail_next(kind)
        with pytest.raises(openai.APIConnectionError):
            _ask_openai(client, "x")
    fake_llm.fail_next("timeout", seconds=2)
    with pytest.raises(openai.APITimeoutError):
        _ask_openai(client, "x")


def test_body_faults_give_malformed_empty_and_refusal_replies(fake_llm):
    client = _openai(fake_llm)
    fake_llm.fail_next("empty")
    assert _ask_openai(client, "x").choices == []
    fake_llm.fail_next("empty", variant="blank")
    assert _ask_openai(client, "x").choices[0].message.content == ""
    fake_llm.fail_next("refusal")
    message = _ask_openai(client, "x").choices[0].message
    assert message.content is None and message.refusal
    fake_llm.fail_next("malformed")
    with pytest.raises(Exception):
        _ask_openai(client, "x").choices[0].message.content


def test_rate_limit_bucket_answers_429_beyond_the_rate(fake_llm):
    fake_llm.rate_limit_rps = 5
    client = _openai(fake_llm)
    outcomes = []
    for _ in range(12):
        try:
            _ask_openai(client, "x")
            outcomes.append("ok")
        except openai.RateLimitError as err:
            outcomes.append(err.response.headers["retry-after-ms"])
    assert outcomes[:5] == ["ok"] * 5
    assert len([o for o in outcomes if o != "ok"]) >= 5


def test_rpm_per_model_answers_429_beyond_the_bucket_with_openai_headers_on_every_reply(fake_llm):
    fake_llm.rpm, fake_llm.burst_s = 120, 1.0  # a bucket of two requests
    client = _openai(fake_llm)
    first = client.chat.completions.with_raw_response.create(
        model="gpt-4o", messages=[{"role": "user", "content": "x"}], max_tokens=5)
    assert first.headers["x-ratelimit-limit-requests"] == "120"
    assert first.headers["x-ratelimit-remaining-requests"] == "1"
    assert first.headers["x-ratelimit-reset-requests"].endswith("ms")
    _ask_openai(client, "x")
    with pytest.raises(openai.RateLimitError) as err:
        _ask_openai(client, "x")
    assert float(err.value.response.headers["retry-after"]) > 0
    assert err.value.response.headers["x-ratelimit-remaining-requests"] == "0"
    _ask_openai(client, "x", model="gpt-4o-mini")  # another model has its own budget
    assert [r["status"] for r in fake_llm.requests] == [200, 200, 429, 200]


def test_tpm_charges_prompt_and_max_tokens_and_refuses_a_request_above_the_minute(fake_llm):
    fake_llm.tpm = 1_000
    client = _openai(fake_llm)
    _ask_openai(client, "x" * 400, max_tokens=100)
    assert fake_llm.requests[-1]["cost"] == 101 + 100
    with pytest.raises(openai.RateLimitError) as err:
        _ask_openai(client, "x" * 8_000)
    assert "Request too large" in str(err.value) and "Limit 1000" in str(err.value)


def test_anthropic_rate_limit_headers_are_rfc3339_resets_and_input_token_budgets(fake_llm):
    fake_llm.rpm, fake_llm.tpm = 50, 30_000
    raw = _anthropic(fake_llm).messages.with_raw_response.create(
        model="claude-x", max_tokens=10, messages=[{"role": "user", "content": "x" * 400}])
    headers = raw.headers
    assert headers["anthropic-ratelimit-requests-limit"] == "50"
    assert headers["anthropic-ratelimit-input-tokens-limit"] == "30000"
    assert int(headers["anthropic-ratelimit-input-tokens-remaining"]) == 30_000 - 101
    reset = headers["anthropic-ratelimit-requests-reset"]
    assert reset.endswith("Z") and "T" in reset
    assert "anthropic-ratelimit-output-tokens-limit" in headers


def test_limits_without_headers_for_a_proxy(fake_llm):
    fake_llm.rpm, fake_llm.rate_headers = 600, False
    raw = _openai(fake_llm).chat.completions.with_raw_response.create(
        model="m", messages=[{"role": "user", "content": "x"}], max_tokens=5)
    assert not any(k.startswith("x-ratelimit") for k in raw.headers)


def test_a_proxy_that_says_only_retry_after_in_whole_seconds(fake_llm):
    fake_llm.rpm, fake_llm.burst_s, fake_llm.rate_headers, fake_llm.retry_after_seconds = 120, 1.0, False, True
    client = _openai(fake_llm)
    for _ in range(2):
        _ask_openai(client, "x")
    with pytest.raises(openai.RateLimitError) as err:
        _ask_openai(client, "x")
    headers = err.value.response.headers
    assert headers["retry-after"] == "1" and "retry-after-ms" not in headers
    assert not any(k.startswith("x-ratelimit") for k in headers)


def test_a_tokens_only_limit_refuses_by_tokens_not_by_requests(fake_llm):
    fake_llm.tpm, fake_llm.burst_s, fake_llm.rate_headers = 6_000, 1.0, False  # a bucket of 100 tokens
    client = _openai(fake_llm)
    for _ in range(3):  # 3 x (1 prompt token + 5 max_tokens)
        _ask_openai(client, "x", max_tokens=5)
    with pytest.raises(openai.RateLimitError):
        _ask_openai(client, "x" * 400, max_tokens=5)  # 106 tokens: more than the bucket holds now
    assert [r.get("cost") for r in fake_llm.requests] == [6, 6, 6, None]


def test_fixed_latency_delays_each_reply(fake_llm):
    fake_llm.latency = 0.2
    start = time.monotonic()
    _ask_openai(_openai(fake_llm), "x")
    assert time.monotonic() - start >= 0.2


def test_many_parallel_clients_are_all_answered_and_logged(fake_llm):
    fake_llm.latency = (0.0, 0.01)
    client = _openai(fake_llm)
    with concurrent.futures.ThreadPoolExecutor(32) as pool:
        replies = list(pool.map(lambda i: _ask_openai(client, f"q{i}").choices[0].message.content, range(200)))
    assert len(replies) == 200
    assert len(fake_llm.requests) == 200
    fake_llm.reset()
    assert fake_llm.requests == []


def test_cli_prints_its_url_and_serves(tmp_path):
    script = Path(__file__).resolve().parents[1] / "fake_llm_server.py"
    proc = subprocess.Popen([sys.executable, str(script), "--port", "0"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        client = openai.OpenAI(api_key="k", base_url=url + "/v1", max_retries=0, timeout=5)
        assert _ask_openai(client, "hi").choices[0].message.content == "I don't know."
    finally:
        proc.terminate()
        proc.wait(timeout=5)
