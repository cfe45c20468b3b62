"""One reply parser: the synchronous path (the real SDKs, on a server this test starts on 127.0.0.1) and the batch
path (the same reply as a batch result line) give the same result for every reply shape."""

from __future__ import annotations

import dataclasses
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator

import pytest

from lme.core.records import ChatRequest, Completion
from lme.models import batch_api, providers
from lme.models.provider_errors import ProviderError
from lme.models.providers import ProviderSettings

ONE_ATTEMPT = ProviderSettings(timeout_s=5.0, max_attempts=1, backoff_base=0.01, backoff_max=0.05)
USAGE = {"openai": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14},
         "anthropic": {"input_tokens": 11, "output_tokens": 3}}


def openai_body(message: dict[str, Any] | None, *, finish: str = "stop", usage: bool = True,
                choices: bool = True) -> dict[str, Any]:
    body: dict[str, Any] = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o-2024-08-06"}
    if choices:
        body["choices"] = [] if message is None else [{"index": 0, "message": message, "finish_reason": finish}]
    if usage:
        body["usage"] = USAGE["openai"]
    return body


def anthropic_body(content: list[dict[str, Any]] | None, *, stop: str | None = "end_turn",
                   usage: bool = True) -> dict[str, Any]:
    body: dict[str, Any] = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6",
                            "stop_reason": stop, "stop_sequence": None}
    if content is not None:
        body["content"] = content
    if usage:
        body["usage"] = USAGE["anthropic"]
    return body


TEXT = {"role": "assistant", "content": "yes", "refusal": None}
SHAPES = {
    "openai": {
        "a text": openai_body(TEXT),
        "no usage": openai_body(TEXT, usage=False),
        "an empty text": openai_body({**TEXT, "content": ""}),
        "a blank text": openai_body({**TEXT, "content": "  \n"}),
        "no choices": openai_body(None),
        "no choices field": openai_body(TEXT, choices=False),
        "a tool call, no content": openai_body(
            {"role": "assistant", "content": None, "refusal": None, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            finish="tool_calls"),
        "a refusal": openai_body({"role": "assistant", "content": None, "refusal": "I can't help with that."}),
        "cut at max_tokens": openai_body({**TEXT, "content": "ye"}, finish="length"),
        "the body {}": {},
    },
    "anthropic": {
        "a text": anthropic_body([{"type": "text", "text": "yes"}]),
        "no usage": anthropic_body([{"type": "text", "text": "yes"}], usage=False),
        "two text blocks": anthropic_body([{"type": "text", "text": "y"}, {"type": "text", "text": "es"}]),
        "empty content": anthropic_body([]),
        "a blank text": anthropic_body([{"type": "text", "text": " "}]),
        "a tool use, no text": anthropic_body(
            [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}], stop="tool_use"),
        "a refusal": anthropic_body([{"type": "text", "text": "No."}], stop="refusal"),
        "cut at max_tokens": anthropic_body([{"type": "text", "text": "ye"}], stop="max_tokens"),
        "no content field": anthropic_body(None),
        "the body {}": {},
    },
}
CASES = [(provider, name, allow_empty) for provider, shapes in SHAPES.items() for name in shapes
         for allow_empty in (False, True)]


class _Server(ThreadingHTTPServer):
    body: dict[str, Any] = {}


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - signature from the base class
        pass

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        payload = json.dumps(self.server.body).encode()  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture(scope="module")
def server() -> Iterator[_Server]:
    httpd = _Server(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def request(provider: str, allow_empty: bool) -> ChatRequest:
    model = "gpt-4o" if provider == "openai" else "claude-sonnet-4-6"
    return ChatRequest(provider=provider, model=model, messages=({"role": "user", "content": "Is it so?"},),
                       system="Answer yes or no.", max_tokens=10, allow_empty=allow_empty)


def sync_result(server: _Server, monkeypatch: pytest.MonkeyPatch, req: ChatRequest, body: dict[str, Any]) -> Any:
    root = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-DUMMY-openai-key-0000")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-DUMMY-anthropic-key-0000")
    server.body = body
    settings = dataclasses.replace(ONE_ATTEMPT, base_urls={"openai": f"{root}/v1", "anthropic": root})
    try:
        return providers.complete(req, settings=settings)
    except ProviderError as err:
        return err


def batch_result(req: ChatRequest, body: dict[str, Any]) -> Any:
    if req.provider == "openai":
        line = {"id": "batch_req_1", "custom_id": "c1", "error": None,
                "response": {"status_code": 200, "request_id": None, "body": body}}
    else:
        line = {"custom_id": "c1", "result": {"type": "succeeded", "message": body}}
    return batch_api.parse_line(req.provider, line, provider=req.provider, model=req.model,
                                allow_empty=req.allow_empty, batch_id="batch_1", request=req)


def comparable(got: Any) -> dict[str, Any]:
    if isinstance(got, Completion):
        return {"text": got.text, "tokensIn": got.tokensIn, "tokensOut": got.tokensOut, "model": got.model,
                "stop_reason": got.stop_reason}
    return {"kind": got.kind, "retryable": got.retryable, "empty": got.empty, "finish_reason": got.finish_reason,
            "message": got.message.replace(" in batch batch_1", "")}


@pytest.mark.parametrize(("provider", "shape", "allow_empty"), CASES)
def test_the_sync_and_batch_paths_read_the_same_reply_the_same_way(server, monkeypatch, provider, shape,
                                                                   allow_empty):
    req = request(provider, allow_empty)
    body = SHAPES[provider][shape]
    sync, batch = sync_result(server, monkeypatch, req, body), batch_result(req, body)
    assert comparable(sync) == comparable(batch)
    if isinstance(batch, Completion):
        assert batch.pricing == "batch" and batch.batch_id == "batch_1" and sync.pricing == "sync"


def test_an_empty_reply_the_judge_allows_is_the_text_upstream_labels_false(server, monkeypatch):
    """Upstream's label is ``'yes' in reply``: an empty reply comes back as ``""`` on both paths, never an error."""
    for provider, shape in (("openai", "an empty text"), ("anthropic", "empty content")):
        req = request(provider, allow_empty=True)
        for got in (sync_result(server, monkeypatch, req, SHAPES[provider][shape]),
                    batch_result(req, SHAPES[provider][shape])):
            assert isinstance(got, Completion) and got.text == "" and ("yes" in got.text) is False


def test_refusals_and_broken_bodies_are_errors_on_both_paths(server, monkeypatch):
    for provider, shape, kind, retried in (("openai", "a refusal", "refusal", False),
                                           ("anthropic", "a refusal", "refusal", False),
                                           ("openai", "the body {}", "malformed", True),
                                           ("anthropic", "no content field", "malformed", True),
                                           ("openai", "no choices", "malformed", False)):
        req = request(provider, allow_empty=True)
        for got in (sync_result(server, monkeypatch, req, SHAPES[provider][shape]),
                    batch_result(req, SHAPES[provider][shape])):
            assert isinstance(got, ProviderError) and (got.kind, got.retryable) == (kind, retried), (provider, shape)


def test_a_reply_without_usage_is_estimated_from_the_prompt_and_the_text(server, monkeypatch):
    req = request("anthropic", allow_empty=False)
    got = batch_result(req, SHAPES["anthropic"]["no usage"])
    with_usage = batch_result(req, SHAPES["anthropic"]["a text"])
    assert (with_usage.tokensIn, with_usage.tokensOut) == (11, 3)
    assert got.tokensIn == providers.estimate_tokens("Answer yes or no.Is it so?") and got.tokensOut == 1
