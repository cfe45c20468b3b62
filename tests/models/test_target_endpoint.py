"""The target endpoint with the real SDKs as its clients and the fake provider behind it: attribution by token,
refusals, the cache, retries, errors as the provider sent them, streaming through each SDK's stream helper, and a
stop that leaves no port or thread behind."""

from __future__ import annotations

import socket
import threading
import time

import anthropic
import openai
import pytest

from lme.models.call_cache import CallCache
from lme.models.endpoint_forward import EndpointRoutes
from lme.models.provider_routes import ProviderSettings
from lme.models.rate_pacer import Pacer
from lme.models.run_gateway import RunGateway
from lme.models.target_endpoint import THREAD_NAME, TargetEndpoint

MESSAGES = [{"role": "user", "content": "What is my cat called?"}]


def make_endpoint(tmp_path, *, read: bool = True, cache: bool = True) -> TargetEndpoint:
    gateway = RunGateway(settings=ProviderSettings(max_attempts=3, backoff_base=0.01, timeout_s=5),
                         cache=CallCache(tmp_path / "cache", read=read) if cache else None, limiter=Pacer(4))
    return TargetEndpoint(gateway, EndpointRoutes()).start()


@pytest.fixture
def endpoint(tmp_path, fake_llm):
    ep = make_endpoint(tmp_path)
    yield ep
    ep.stop()


def openai_client(base_url: str) -> openai.OpenAI:
    return openai.OpenAI(api_key="the-users-own-key", base_url=base_url)


def chat(client: openai.OpenAI, **kwargs) -> str:
    reply = client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, max_tokens=40, **kwargs)
    return reply.choices[0].message.content


def test_calls_are_attributed_to_the_scope_whose_token_they_carry(endpoint, fake_llm):
    with endpoint.item_scope() as one, endpoint.item_scope() as two:
        chat(openai_client(one.openai_base_url))
        openai_client(two.openai_base_url).embeddings.create(model="text-embedding-3-small", input=["a", "b"])
        chat(openai_client(one.openai_base_url), temperature=0.5)
        assert [c.extra["api"] for c in one.calls()] == ["chat.completions", "chat.completions"]
        assert [(c.extra["api"], c.tokensOut) for c in two.calls()] == [("embeddings", 0)]
    assert len(fake_llm.requests) == 3
    assert {r["headers"]["authorization"] for r in fake_llm.requests} == {"Bearer sk-test-DUMMY-openai-key-0000"}


def test_an_unknown_or_ended_token_is_refused_and_no_call_is_made(endpoint, fake_llm):
    with endpoint.item_scope() as scope:
        url = scope.openai_base_url
    for base in (url, endpoint.openai_base_url("made-up"), f"{endpoint.root_url}/v1"):
        with pytest.raises(openai.PermissionDeniedError, match="token"):
            chat(openai_client(base))
    assert fake_llm.requests == []


def test_a_worker_token_is_refused_until_a_scope_binds_it_and_again_after(endpoint, fake_llm):
    worker = endpoint.worker_token()
    client = openai_client(endpoint.worker_env(worker)["OPENAI_BASE_URL"])  # built once, as a worker does
    with pytest.raises(openai.PermissionDeniedError):
        chat(client)
    with endpoint.item_scope() as first:
        first.bind(worker)
        chat(client)
    with endpoint.item_scope() as second:
        second.bind(worker)
        chat(client, temperature=0.3)
    with pytest.raises(openai.PermissionDeniedError):
        chat(client)
    assert (len(first.calls()), len(second.calls())) == (1, 1)
    with endpoint.item_scope() as third, endpoint.item_scope() as other:
        third.bind(worker)
        with pytest.raises(ValueError, match="another item"):
            other.bind(worker)


def test_a_released_worker_token_is_refused_while_its_last_scope_is_still_open(endpoint, fake_llm):
    worker = endpoint.worker_token()
    client = openai_client(endpoint.worker_env(worker)["OPENAI_BASE_URL"])
    with endpoint.item_scope() as first:
        first.bind(worker)
        chat(client)
        first.release(worker)  # its worker went back to the pool: the item's row is still being made
        with pytest.raises(openai.PermissionDeniedError):
            chat(client, temperature=0.1)
        with endpoint.item_scope() as second:
            second.bind(worker)  # the next item takes the worker at once
            chat(client, temperature=0.2)
    assert (len(first.calls()), len(second.calls())) == (1, 1) and len(fake_llm.requests) == 2


def test_a_retired_token_is_refused_for_good(endpoint, fake_llm):
    worker = endpoint.worker_token()
    client = openai_client(endpoint.worker_env(worker)["OPENAI_BASE_URL"])
    with endpoint.item_scope() as scope:
        scope.bind(worker)
        endpoint.retire(worker)  # its process was killed
        with pytest.raises(openai.PermissionDeniedError):
            chat(client)
        with pytest.raises(ValueError, match="not a worker token"):
            scope.bind(worker)
    assert fake_llm.requests == [] and scope.calls() == ()


def test_settle_waits_for_a_call_in_flight_which_lands_in_its_items_calls(endpoint, fake_llm):
    fake_llm.latency = 1.0
    worker = endpoint.worker_token()
    client = openai_client(endpoint.worker_env(worker)["OPENAI_BASE_URL"])
    with endpoint.item_scope() as scope:
        scope.bind(worker)
        caller = threading.Thread(target=chat, args=(client,), daemon=True)
        caller.start()
        deadline = time.monotonic() + 5
        while not fake_llm.requests and time.monotonic() < deadline:
            time.sleep(0.02)
        endpoint.retire(worker)  # the worker is killed with its call in flight
        assert scope.settle(0.05) == 1 and scope.calls() == ()
        assert scope.settle(10) == 0
        (late,) = scope.calls()
        assert late.tokensIn > 0 and not late.extra.get("error")
    assert scope.settle(0) == 0


def test_what_waits_for_the_endpoints_stop_is_called_once(tmp_path, fake_llm):
    ep = make_endpoint(tmp_path)
    port = ep.port
    closed: list[bool] = []

    def port_closed() -> bool:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            return True
        return False

    ep.when_stopped(lambda: closed.append(port_closed()))
    ep.stop()
    ep.stop()
    assert closed == [True]  # once, after the port closed


def test_an_identical_call_is_served_from_the_cache_and_no_cache_calls_again(tmp_path, fake_llm):
    with make_endpoint(tmp_path) as ep, ep.item_scope() as scope:
        answers = [chat(openai_client(scope.openai_base_url)) for _ in range(2)]
    assert len(fake_llm.requests) == 1 and answers[0] == answers[1]
    assert [c.cached for c in scope.calls()] == [False, True]
    with make_endpoint(tmp_path, read=False) as ep, ep.item_scope() as scope:
        chat(openai_client(scope.openai_base_url))
    assert len(fake_llm.requests) == 2 and not scope.calls()[0].cached


def test_a_429_is_retried_and_the_users_code_sees_the_reply(endpoint, fake_llm):
    fake_llm.fail_next("429", count=2, retry_after=0.01)
    with endpoint.item_scope() as scope:
        assert chat(openai_client(scope.openai_base_url))
    assert scope.calls()[0].attempts == 3 and len(fake_llm.requests) == 3


def test_a_provider_error_reaches_the_client_with_its_status_and_body_once(endpoint, fake_llm):
    fake_llm.fail_next("400", message="Invalid request: no such parameter 'frobnicate'.")
    with endpoint.item_scope() as scope:
        with pytest.raises(openai.BadRequestError, match="frobnicate") as err:
            chat(openai_client(scope.openai_base_url))
    assert err.value.status_code == 400 and err.value.code is None
    assert len(fake_llm.requests) == 1  # the client SDK's own retries are told not to repeat ours
    assert scope.calls()[0].extra["error"]["status"] == 400


def test_an_anthropic_call_and_its_error_keep_anthropics_shapes(endpoint, fake_llm):
    with endpoint.item_scope() as scope:
        client = anthropic.Anthropic(api_key="the-users-own-key", base_url=scope.anthropic_base_url)
        reply = client.messages.create(model="claude-haiku-4-5", max_tokens=40, messages=MESSAGES)
        assert reply.content[0].text and reply.usage.input_tokens > 0
        fake_llm.fail_next("401")
        with pytest.raises(anthropic.AuthenticationError, match="x-api-key"):
            client.messages.create(model="claude-haiku-4-5", max_tokens=41, messages=MESSAGES)
    assert [c.provider for c in scope.calls()] == ["anthropic", "anthropic"]


def test_streaming_requests_get_a_stream_each_sdks_helper_parses(endpoint, fake_llm):
    fake_llm.answer_fn = lambda body: "Your cat is called Luna."
    with endpoint.item_scope() as scope:
        client = openai_client(scope.openai_base_url)
        with client.chat.completions.stream(model="gpt-4o-mini", messages=MESSAGES, max_tokens=40,
                                            stream_options={"include_usage": True}) as stream:
            final = stream.get_final_completion()
        assert final.choices[0].message.content == "Your cat is called Luna." and final.usage.prompt_tokens > 0
        chunks = client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, max_tokens=41, stream=True)
        assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Your cat is called Luna."
        claude = anthropic.Anthropic(api_key="k", base_url=scope.anthropic_base_url)
        with claude.messages.stream(model="claude-haiku-4-5", max_tokens=40, messages=MESSAGES) as stream:
            assert "".join(stream.text_stream) == "Your cat is called Luna."
            message = stream.get_final_message()
        assert message.stop_reason == "end_turn" and message.usage.output_tokens > 0
    assert all(not (r["body"] or {}).get("stream") for r in fake_llm.requests)  # made whole upstream
    assert len(scope.calls()) == 3


def test_a_missing_provider_key_is_a_401_naming_the_variable(endpoint, fake_llm, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    with endpoint.item_scope() as scope:
        assert scope.env()["OPENAI_API_KEY"]  # a placeholder, so openai.OpenAI() starts in the child
        with pytest.raises(openai.AuthenticationError, match="OPENAI_API_KEY is not set"):
            chat(openai_client(scope.openai_base_url))
    assert fake_llm.requests == []


def test_the_scope_env_points_both_sdks_at_the_endpoint(endpoint):
    with endpoint.item_scope() as scope:
        env = scope.env()
    assert env["OPENAI_BASE_URL"] == env["LONGMEMEVAL_OPENAI_BASE_URL"] == f"{endpoint.root_url}/t/{scope.token}/v1"
    assert env["ANTHROPIC_BASE_URL"] == env["LONGMEMEVAL_ANTHROPIC_BASE_URL"] == f"{endpoint.root_url}/t/{scope.token}"
    assert "OPENAI_API_KEY" not in env  # the environment has a key: the child keeps its own


def test_stop_closes_the_port_and_every_connection(tmp_path, fake_llm):
    ep = make_endpoint(tmp_path)
    port = ep.port
    with ep.item_scope() as scope:
        client = openai_client(scope.openai_base_url)
        chat(client)  # leaves a keep-alive connection open
    ep.stop()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    assert not [t for t in threading.enumerate() if t.name == THREAD_NAME]


def test_an_azure_target_route_gets_the_openai_surfaces_calls_at_its_deployment(tmp_path, fake_llm, monkeypatch):
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "azure-DUMMY-key-0000")
    azure = {"endpoint": fake_llm.root_url, "deployment": "reader-mini", "api_version": "2024-10-21"}
    gateway = RunGateway(settings=ProviderSettings(azure=azure, max_attempts=2, timeout_s=5), cache=None,
                         limiter=Pacer(2))
    with TargetEndpoint(gateway, EndpointRoutes.for_target("azure")) as ep, ep.item_scope() as scope:
        assert chat(openai_client(scope.openai_base_url))
    (sent,) = fake_llm.requests
    assert sent["path"] == "/openai/deployments/reader-mini/chat/completions"
    assert sent["query"] == "api-version=2024-10-21" and sent["headers"]["api-key"] == "azure-DUMMY-key-0000"
    assert scope.calls()[0].provider == "azure"
