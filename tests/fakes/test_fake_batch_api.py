"""The fake batch endpoints, driven only through the official SDKs: lifecycles, partial failures, expiry, cancel,
submission counts, and results that parse into the SDKs' own types."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import anthropic
import openai
import pytest
from anthropic.types import Message
from anthropic.types.messages import MessageBatchIndividualResponse
from openai.types import BatchError
from openai.types.chat import ChatCompletion

from fake_batch_api import WINDOW_S, BatchAPI, serve

JUDGE_PROMPT = "Is the response correct? Answer yes or no."


def _answer(body: Mapping[str, Any]) -> str:
    """The shape of the fake model server's policy: judge calls (max_tokens 10) get yes, readers echo."""
    if body.get("max_tokens") == 10:
        return "yes"
    return "answer to " + str(body["messages"][-1]["content"])


@dataclass
class _Served:
    api: BatchAPI
    root_url: str


@pytest.fixture
def server():
    api = BatchAPI(_answer)
    with serve(api) as root_url:
        yield _Served(api, root_url)


def _openai(server: _Served) -> openai.OpenAI:
    return openai.OpenAI(api_key="sk-test-x", base_url=f"{server.root_url}/v1", max_retries=0, timeout=10)


def _anthropic(server: _Served) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="sk-ant-x", base_url=server.root_url, max_retries=0, timeout=10)


def _chat_line(custom_id: str, text: str, *, max_tokens: int = 10, model: str = "gpt-4o",
               url: str = "/v1/chat/completions") -> dict[str, Any]:
    return {"custom_id": custom_id, "method": "POST", "url": url,
            "body": {"model": model, "messages": [{"role": "user", "content": text}], "max_tokens": max_tokens,
                     "temperature": 0, "n": 1}}


def _submit_openai(client: openai.OpenAI, lines: list[dict[str, Any]], **metadata: str):
    data = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    uploaded = client.files.create(file=("judge.jsonl", data), purpose="batch")
    return client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions",
                                 completion_window="24h", metadata=metadata or None)


def _read_jsonl(client: openai.OpenAI, file_id: str | None) -> dict[str, dict[str, Any]]:
    if file_id is None:
        return {}
    rows = [json.loads(line) for line in client.files.content(file_id).text.splitlines()]
    return {row["custom_id"]: row for row in rows}


def _message_request(custom_id: str, text: str, max_tokens: int = 10) -> dict[str, Any]:
    return {"custom_id": custom_id, "params": {"model": "claude-haiku-4-5", "max_tokens": max_tokens,
                                               "temperature": 0.0,
                                               "messages": [{"role": "user", "content": text}]}}


# ---------------------------------------------------------------------- OpenAI


def test_openai_batch_runs_validating_to_completed_and_its_output_parses_as_chat_completions(server):
    client = _openai(server)
    lines = [_chat_line("r1-j-q1-a0", JUDGE_PROMPT), _chat_line("r1-j-q2-a0", "Where?", max_tokens=500)]
    batch = _submit_openai(client, lines, run="r1", stage="judge")
    assert batch.status == "validating" and batch.metadata == {"run": "r1", "stage": "judge"}
    assert batch.expires_at == batch.created_at + WINDOW_S and batch.output_file_id is None

    seen = []
    for _ in range(3):
        server.api.advance(batch.id)
        seen.append(client.batches.retrieve(batch.id))
    assert [b.status for b in seen] == ["in_progress", "finalizing", "completed"]
    done = seen[-1]
    assert done.request_counts.total == 2 and done.request_counts.completed == 2 and done.request_counts.failed == 0
    assert done.model == "gpt-4o-2024-08-06" and done.error_file_id is None
    assert done.in_progress_at and done.finalizing_at and done.completed_at
    assert done.usage is not None and done.usage.input_tokens > 0 and done.usage.output_tokens > 0

    output = _read_jsonl(client, done.output_file_id)
    assert set(output) == {"r1-j-q1-a0", "r1-j-q2-a0"}
    row = output["r1-j-q1-a0"]
    assert row["id"].startswith("batch_req_") and row["error"] is None
    assert row["response"]["status_code"] == 200 and row["response"]["request_id"].startswith("req_")
    completion = ChatCompletion.model_validate(row["response"]["body"])
    assert completion.choices[0].message.content == "yes" and completion.usage.prompt_tokens > 0
    reader = ChatCompletion.model_validate(output["r1-j-q2-a0"]["response"]["body"])
    assert reader.choices[0].message.content == "answer to Where?"
    assert client.files.retrieve(done.output_file_id).purpose == "batch_output"


def test_openai_requests_chosen_to_fail_land_in_the_error_file_with_their_status(server):
    client = _openai(server)
    server.api.fail_requests("q2", status=500)
    server.api.fail_requests("q3", status=400)
    batch = _submit_openai(client, [_chat_line(f"q{i}", f"item {i}") for i in range(1, 5)])
    assert server.api.finish(batch.id) == "completed"
    done = client.batches.retrieve(batch.id)
    assert (done.request_counts.total, done.request_counts.completed, done.request_counts.failed) == (4, 2, 2)
    assert set(_read_jsonl(client, done.output_file_id)) == {"q1", "q4"}
    errors = _read_jsonl(client, done.error_file_id)
    assert errors["q2"]["response"]["status_code"] == 500 and errors["q2"]["error"] is None
    assert errors["q2"]["response"]["body"]["error"]["type"] == "server_error"
    assert errors["q3"]["response"]["status_code"] == 400


def test_openai_batch_where_every_request_failed_has_no_output_file(server):
    client = _openai(server)
    server.api.fail_if = lambda custom_id, body: 500
    batch = _submit_openai(client, [_chat_line("a", "x"), _chat_line("b", "y")])
    server.api.finish(batch.id)
    done = client.batches.retrieve(batch.id)
    assert done.status == "completed" and done.output_file_id is None
    assert set(_read_jsonl(client, done.error_file_id)) == {"a", "b"}


def test_openai_invalid_input_file_fails_validation_with_line_numbered_errors(server):
    client = _openai(server)
    lines = [_chat_line("same", "x"), _chat_line("same", "y"), _chat_line("c", "z", url="/v1/embeddings"),
             _chat_line("d", "w", model="gpt-4o-mini")]
    batch = _submit_openai(client, lines)
    assert server.api.advance(batch.id) == "failed"
    failed = client.batches.retrieve(batch.id)
    assert failed.failed_at is not None and failed.output_file_id is None
    errors = [BatchError.model_validate(e.model_dump()) for e in failed.errors.data]
    assert [(e.code, e.line) for e in errors] == [("duplicate_custom_id", 2), ("url_mismatch", 3),
                                                  ("model_mismatch", None)]
    assert server.api.submissions()["requests"] == 4  # submitted, then refused by the provider
    server.api.openai_max_requests = 1
    too_many = _submit_openai(client, [_chat_line("a", "x"), _chat_line("b", "y")])
    assert server.api.advance(too_many.id) == "failed"
    assert [e.code for e in client.batches.retrieve(too_many.id).errors.data] == ["too_many_tasks"]


def test_openai_refuses_a_non_jsonl_or_oversized_upload_and_a_file_not_uploaded_for_batch(server):
    client = _openai(server)
    with pytest.raises(openai.BadRequestError, match="Must be .jsonl"):
        client.files.create(file=("judge.txt", b"{}\n"), purpose="batch")
    server.api.openai_max_file_bytes = 10
    with pytest.raises(openai.BadRequestError, match="too large"):
        client.files.create(file=("judge.jsonl", b"{}\n" * 6), purpose="batch")
    other = client.files.create(file=("notes.jsonl", b"{}\n"), purpose="user_data")
    with pytest.raises(openai.BadRequestError, match="purpose 'batch'"):
        client.batches.create(input_file_id=other.id, endpoint="/v1/chat/completions", completion_window="24h")
    with pytest.raises(openai.NotFoundError):
        client.batches.retrieve("batch_missing")
    assert server.api.submissions() == {"files_uploaded": 0, "openai_batches": 0, "anthropic_batches": 0,
                                        "requests": 0}


def test_openai_cancel_keeps_what_ran_and_marks_the_rest_batch_cancelled(server):
    client = _openai(server)
    batch = _submit_openai(client, [_chat_line(f"q{i}", f"item {i}") for i in range(3)])
    server.api.advance(batch.id)
    assert server.api.process(batch.id, 1) == 1
    assert client.batches.retrieve(batch.id).request_counts.completed == 1
    cancelling = client.batches.cancel(batch.id)
    assert cancelling.status == "cancelling" and cancelling.cancelling_at is not None
    server.api.advance(batch.id)
    cancelled = client.batches.retrieve(batch.id)
    assert cancelled.status == "cancelled" and cancelled.cancelled_at is not None
    assert set(_read_jsonl(client, cancelled.output_file_id)) == {"q0"}
    errors = _read_jsonl(client, cancelled.error_file_id)
    assert set(errors) == {"q1", "q2"}
    assert errors["q1"]["response"] is None and errors["q1"]["error"]["code"] == "batch_cancelled"
    with pytest.raises(openai.ConflictError):
        client.batches.cancel(batch.id)


def test_openai_batch_expires_on_the_clock_and_returns_the_work_done(server):
    client = _openai(server)
    batch = _submit_openai(client, [_chat_line("done", "x"), _chat_line("late", "y")])
    server.api.advance(batch.id)
    server.api.process(batch.id, 1)
    server.api.advance_clock(WINDOW_S - 1)
    assert client.batches.retrieve(batch.id).status == "in_progress"
    server.api.advance_clock(1)
    expired = client.batches.retrieve(batch.id)
    assert expired.status == "expired" and expired.expired_at is not None
    assert set(_read_jsonl(client, expired.output_file_id)) == {"done"}
    assert _read_jsonl(client, expired.error_file_id)["late"]["error"]["code"] == "batch_expired"


def test_openai_auto_advance_completes_after_a_known_number_of_polls(server):
    client = _openai(server)
    server.api.auto_advance_every = 2
    batch = _submit_openai(client, [_chat_line("q", "x")])
    statuses = [client.batches.retrieve(batch.id).status for _ in range(6)]
    assert statuses == ["validating", "in_progress", "in_progress", "finalizing", "finalizing", "completed"]
    assert server.api.polls(batch.id) == 6


def test_openai_list_is_newest_first_and_pages_with_after(server):
    client = _openai(server)
    ids = [_submit_openai(client, [_chat_line("q", str(i))]).id for i in range(3)]
    first = client.batches.list(limit=2)
    assert [b.id for b in first.data] == ids[::-1][:2] and first.has_more
    assert [b.id for b in client.batches.list(limit=2)] == ids[::-1]  # auto-paging follows `after`


def test_a_fresh_client_collects_an_existing_batch_without_resubmitting(server):
    """What a resumed run does: retrieve by the stored id, download, and the counts do not move."""
    batch = _submit_openai(_openai(server), [_chat_line("q1", "x")])
    message_batch = _anthropic(server).messages.batches.create(requests=[_message_request("q1", "x")])
    before = server.api.submissions()
    assert before == {"files_uploaded": 1, "openai_batches": 1, "anthropic_batches": 1, "requests": 2}
    server.api.finish(batch.id)
    server.api.finish(message_batch.id)
    fresh_openai, fresh_anthropic = _openai(server), _anthropic(server)
    assert set(_read_jsonl(fresh_openai, fresh_openai.batches.retrieve(batch.id).output_file_id)) == {"q1"}
    assert [r.custom_id for r in fresh_anthropic.messages.batches.results(message_batch.id)] == ["q1"]
    assert server.api.submissions() == before
    assert ("POST", "/v1/files") in server.api.calls and server.api.calls.count(("POST", "/v1/files")) == 1


# ---------------------------------------------------------------------- Anthropic


def test_anthropic_batch_runs_to_ended_and_its_results_parse_as_messages(server):
    client = _anthropic(server)
    created = client.messages.batches.create(requests=[_message_request("r1-j-q1-a0", JUDGE_PROMPT),
                                                       _message_request("r1-g-q2-a0", "Where?", 500)])
    assert created.id.startswith("msgbatch_") and created.processing_status == "in_progress"
    assert created.request_counts.processing == 2 and created.results_url is None
    assert (created.expires_at - created.created_at).total_seconds() == WINDOW_S
    server.api.process(created.id, 1)
    assert client.messages.batches.retrieve(created.id).request_counts.processing == 2  # counts move at the end
    with pytest.raises(anthropic.AnthropicError, match="results_url"):
        client.messages.batches.results(created.id)

    server.api.advance(created.id)
    ended = client.messages.batches.retrieve(created.id)
    assert ended.processing_status == "ended" and ended.ended_at is not None
    assert ended.request_counts.succeeded == 2 and ended.request_counts.processing == 0
    assert ended.results_url == f"{server.root_url}/v1/messages/batches/{created.id}/results"
    results = {r.custom_id: r for r in client.messages.batches.results(created.id)}
    assert all(isinstance(r, MessageBatchIndividualResponse) for r in results.values())
    judged = results["r1-j-q1-a0"].result
    assert judged.type == "succeeded" and isinstance(judged.message, Message)
    assert judged.message.content[0].text == "yes" and judged.message.usage.input_tokens > 0
    assert results["r1-g-q2-a0"].result.message.content[0].text == "answer to Where?"


def test_anthropic_partial_failures_and_invalid_params_come_back_errored(server):
    client = _anthropic(server)
    server.api.fail_requests("q2", status=500)
    server.api.fail_requests("q3", status=529)
    bad = _message_request("q4", "no max_tokens")
    del bad["params"]["max_tokens"]
    created = client.messages.batches.create(requests=[_message_request("q1", "x"), _message_request("q2", "y"),
                                                       _message_request("q3", "z"), bad])
    server.api.finish(created.id)
    counts = client.messages.batches.retrieve(created.id).request_counts
    assert (counts.succeeded, counts.errored, counts.canceled, counts.expired) == (1, 3, 0, 0)
    results = {r.custom_id: r.result for r in client.messages.batches.results(created.id)}
    assert results["q1"].type == "succeeded"
    assert results["q2"].type == "errored" and results["q2"].error.error.type == "api_error"
    assert results["q3"].error.error.type == "overloaded_error"
    assert results["q4"].error.error.type == "invalid_request_error"


@pytest.mark.parametrize("custom_id, message", [
    ("a" * 65, "at most 64 characters"),
    ("run:q1", "should match pattern"),
    ("", "should match pattern"),
])
def test_anthropic_refuses_a_custom_id_outside_its_rule_and_counts_nothing(server, custom_id, message):
    with pytest.raises(anthropic.BadRequestError, match=message):
        _anthropic(server).messages.batches.create(requests=[_message_request("ok_1", "x"),
                                                             _message_request(custom_id, "y")])
    assert server.api.submissions()["anthropic_batches"] == 0


def test_anthropic_refuses_duplicate_custom_ids_and_too_many_requests(server):
    client = _anthropic(server)
    with pytest.raises(anthropic.BadRequestError, match="Duplicate custom_id"):
        client.messages.batches.create(requests=[_message_request("q", "x"), _message_request("q", "y")])
    server.api.anthropic_max_requests = 2
    with pytest.raises(anthropic.BadRequestError, match="at most 2"):
        client.messages.batches.create(requests=[_message_request(f"q{i}", "x") for i in range(3)])
    assert server.api.submissions()["requests"] == 0


def test_anthropic_cancel_keeps_what_ran_and_marks_the_rest_canceled(server):
    client = _anthropic(server)
    created = client.messages.batches.create(requests=[_message_request(f"q{i}", "x") for i in range(3)])
    server.api.process(created.id, 1)
    canceling = client.messages.batches.cancel(created.id)
    assert canceling.processing_status == "canceling" and canceling.cancel_initiated_at is not None
    server.api.advance(created.id)
    ended = client.messages.batches.retrieve(created.id)
    assert ended.processing_status == "ended"
    assert (ended.request_counts.succeeded, ended.request_counts.canceled) == (1, 2)
    types = {r.custom_id: r.result.type for r in client.messages.batches.results(created.id)}
    assert types == {"q0": "succeeded", "q1": "canceled", "q2": "canceled"}
    with pytest.raises(anthropic.ConflictError):
        client.messages.batches.cancel(created.id)


def test_anthropic_batch_expires_on_the_clock_or_on_demand(server):
    client = _anthropic(server)
    on_clock = client.messages.batches.create(requests=[_message_request("a", "x"), _message_request("b", "y")])
    server.api.process(on_clock.id, 1)
    server.api.advance_clock(WINDOW_S)
    ended = client.messages.batches.retrieve(on_clock.id)
    assert ended.processing_status == "ended" and ended.request_counts.expired == 1
    assert {r.custom_id: r.result.type for r in client.messages.batches.results(on_clock.id)} == {
        "a": "succeeded", "b": "expired"}
    on_demand = client.messages.batches.create(requests=[_message_request("c", "z")])
    assert server.api.expire(on_demand.id) == "ended"
    assert client.messages.batches.retrieve(on_demand.id).request_counts.expired == 1


def test_anthropic_list_pages_newest_first_and_delete_needs_an_ended_batch(server):
    client = _anthropic(server)
    ids = [client.messages.batches.create(requests=[_message_request("q", str(i))]).id for i in range(3)]
    page = client.messages.batches.list(limit=2)
    assert [b.id for b in page.data] == ids[::-1][:2] and page.has_more and page.last_id == ids[1]
    assert [b.id for b in client.messages.batches.list(limit=2)] == ids[::-1]
    with pytest.raises(anthropic.ConflictError):
        client.messages.batches.delete(ids[0])
    server.api.finish(ids[0])
    assert client.messages.batches.delete(ids[0]).type == "message_batch_deleted"
    assert [b.id for b in client.messages.batches.list()] == ids[:0:-1]


def test_anthropic_auto_advance_ends_on_the_nth_poll(server):
    client = _anthropic(server)
    server.api.auto_advance_every = 3
    created = client.messages.batches.create(requests=[_message_request("q", "x")])
    statuses = [client.messages.batches.retrieve(created.id).processing_status for _ in range(3)]
    assert statuses == ["in_progress", "in_progress", "ended"]


# ---------------------------------------------------------------------- mounting and CLI


def test_handle_answers_only_batch_routes_so_a_host_server_can_mount_it():
    api = BatchAPI()
    assert api.handle("POST", "/v1/chat/completions", "", {}, b"{}") is None
    assert api.handle("POST", "/v1/messages", "", {}, b"{}") is None
    assert api.handle("GET", "/v1/batches/x/results", "", {}, b"") is None
    status, headers, body = api.handle("GET", "/v1/batches", "limit=5", {"Host": "h:1"}, b"")
    assert status == 200 and headers["Content-Type"] == "application/json"
    assert json.loads(body) == {"object": "list", "data": [], "first_id": None, "last_id": None, "has_more": False}
    status, _, body = api.handle("GET", "/v1/messages/batches/msgbatch_x", "", {}, b"")
    assert status == 404 and json.loads(body)["error"]["type"] == "not_found_error"


def test_cli_serves_until_killed_and_prints_the_root_url_first(repo_root: Path):
    proc = subprocess.Popen([sys.executable, str(repo_root / "tests" / "fake_batch_api.py"), "--port", "0"],
                            stdout=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        client = anthropic.Anthropic(api_key="sk-ant-x", base_url=url, max_retries=0, timeout=10)
        created = client.messages.batches.create(requests=[_message_request("q", "x")])
        assert client.messages.batches.retrieve(created.id).processing_status == "ended"  # --auto-advance 1
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_the_fake_model_servers_policy_answers_a_batch_as_it_answers_the_synchronous_call(fake_llm):
    """``answer=FakeLLMServer.reply_text``: a batched request gets the reply the synchronous path would get."""
    fake_llm.answers = {"Where did I park?": "Level 3"}
    body = {"model": "gpt-4o", "max_tokens": 500, "temperature": 0,
            "messages": [{"role": "user", "content": "History...\nQuestion: Where did I park?"}]}
    sync = openai.OpenAI(api_key="sk-test-x", base_url=fake_llm.openai_base_url, max_retries=0).chat.completions
    expected = sync.create(**body).choices[0].message.content
    api = BatchAPI(fake_llm.reply_text)
    with serve(api) as root_url:
        client = openai.OpenAI(api_key="sk-test-x", base_url=f"{root_url}/v1", max_retries=0, timeout=10)
        batch = _submit_openai(client, [{"custom_id": "q", "method": "POST", "url": "/v1/chat/completions",
                                         "body": body}])
        api.finish(batch.id)
        row = _read_jsonl(client, client.batches.retrieve(batch.id).output_file_id)["q"]
    assert expected == "Level 3"
    assert ChatCompletion.model_validate(row["response"]["body"]).choices[0].message.content == expected
