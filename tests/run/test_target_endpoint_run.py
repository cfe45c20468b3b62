"""A user's own memory system through the run's target endpoint, end to end: the system is written here from
plugins/README.md alone (a command that builds its SDK client the default way), the run is the real command against
the fake provider, and every figure is read from the run's files."""

from __future__ import annotations

import json
import socket
import sys
import threading
from pathlib import Path

import pytest

from lme.cli import run_benchmark
from lme.models import target_endpoint
from run_project import make_project, register_answers, run_dir

ITEMS = 3
ANTHROPIC_ITEMS = 2
"""The anthropic case's items: its user's command imports ``anthropic`` (~1.6-1.9 s of CPU a process at SDK 2.17,
three times ``openai``), once per item and run. Two items still run at once and each row is checked; caching
and pricing over three are the openai case's."""
OPENAI_SYSTEM = """\
import json, os, sys
import openai

item = json.load(sys.stdin)
client = openai.OpenAI()  # the default way: OPENAI_BASE_URL and OPENAI_API_KEY from the environment
reply = client.chat.completions.create(
    model=os.environ["LONGMEMEVAL_TARGET_MODEL"], max_tokens=64,
    messages=[{"role": "user", "content": "Answer from memory: " + item["question"]}])
print(json.dumps({"hypothesis": reply.choices[0].message.content, "tokensIn": 5, "tokensOut": 1}))
"""
ANTHROPIC_SYSTEM = """\
import json, os, sys
import anthropic

item = json.load(sys.stdin)
client = anthropic.Anthropic()
reply = client.messages.create(
    model=os.environ["LONGMEMEVAL_TARGET_MODEL"], max_tokens=64,
    messages=[{"role": "user", "content": "Answer from memory: " + item["question"]}])
print(json.dumps({"hypothesis": reply.content[0].text}))
"""


def user_project(tmp_path: Path, system: str, provider: str, model: str) -> Path:
    script = tmp_path / "my_memory.py"
    script.write_text(system)
    return make_project(tmp_path / "p", target="command", targetProvider=provider, targetModel=model,
                        targetOptions={"command": [sys.executable, str(script)], "timeout_s": 60})


def run(project: Path, run_id: str, *args: str) -> int:
    return run_benchmark.main(["--project", str(project), "--progress", "quiet", "--no-scorecard", "--yes",
                               "--max", str(ITEMS), "--run-id", run_id, *args])


def rows(project: Path, run_id: str) -> list[dict]:
    lines = (run_dir(project, run_id) / "item-results.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def reader_requests(fake) -> list[dict]:
    return [r for r in fake.requests if (r.get("body") or {}).get("max_tokens") == 64]


def judge_requests(fake) -> list[dict]:
    return [r for r in fake.requests if (r.get("body") or {}).get("max_tokens") == 10]


def test_a_command_systems_default_openai_client_goes_through_the_endpoint_cached_and_priced(tmp_path, fake_llm):
    project = user_project(tmp_path, OPENAI_SYSTEM, "openai", "gpt-4o-mini")
    register_answers(fake_llm, correct_share=1.0)
    assert run(project, "first") == 0
    first = rows(project, "first")
    assert len(first) == ITEMS and all(r["status"] == "judged" for r in first)
    assert len(reader_requests(fake_llm)) == ITEMS and len(judge_requests(fake_llm)) == ITEMS
    for row in first:
        (call,) = row["calls"]
        assert call["role"] == "memory-system" and call["api"] == "chat.completions" and not call["cached"]
        assert call["model"] == "gpt-4o-mini-2024-07-18" and call["endpoint_host"] == f"127.0.0.1:{fake_llm.port}"
        assert (row["tokensIn"], row["tokensOut"]) == (call["tokensIn"], call["tokensOut"]) and call["tokensIn"] > 0
        assert row["target"]["debug"]["reported_tokens"] == {"in": 5, "out": 1}
        assert row["cost"]["generation_usd"] == pytest.approx((call["tokensIn"] * 0.15 + call["tokensOut"] * 0.6) / 1e6)
        # the judge is never routed through the endpoint: its verdict names the provider's own host
        assert row["judgment"]["endpoint_host"] == f"127.0.0.1:{fake_llm.port}"
    # the key the provider saw is the run's, never the placeholder a child might have
    assert {r["headers"]["authorization"] for r in reader_requests(fake_llm)} == {"Bearer sk-test-DUMMY-openai-key-0000"}

    assert run(project, "again") == 0  # an identical re-run: no provider call at all
    assert len(reader_requests(fake_llm)) == ITEMS and len(judge_requests(fake_llm)) == ITEMS
    again = rows(project, "again")
    assert all(r["calls"][0]["cached"] and r["cost"]["generation_usd"] == 0.0 for r in again)
    assert sorted(r["hypothesis"] for r in again) == sorted(r["hypothesis"] for r in first)

    assert run(project, "fresh", "--no-cache") == 0  # --no-cache: the calls are made again
    assert len(reader_requests(fake_llm)) == 2 * ITEMS
    assert not any(r["calls"][0]["cached"] for r in rows(project, "fresh"))


def test_a_command_systems_default_anthropic_client_goes_through_the_endpoint(tmp_path, fake_llm):
    project = user_project(tmp_path, ANTHROPIC_SYSTEM, "anthropic", "claude-haiku-4-5")
    register_answers(fake_llm, correct_share=1.0)
    assert run(project, "a1", "--max", str(ANTHROPIC_ITEMS)) == 0
    first = rows(project, "a1")
    assert len(first) == ANTHROPIC_ITEMS and all(r["status"] == "judged" for r in first)
    anthropic_calls = [r for r in fake_llm.requests if r["path"] == "/v1/messages"]
    assert len(anthropic_calls) == ANTHROPIC_ITEMS
    assert all("sk-ant-test-DUMMY-anthropic-key-0000" in (r["headers"].get("x-api-key") or r["headers"]["authorization"])
               for r in anthropic_calls)  # the run's key, whichever header this SDK version sends it in
    for row in first:
        (call,) = row["calls"]
        assert (call["provider"], call["api"], call["model"]) == ("anthropic", "messages", "claude-haiku-4-5")
        assert row["cost"]["generation_usd"] == pytest.approx((call["tokensIn"] * 1.0 + call["tokensOut"] * 5.0) / 1e6)
    assert run(project, "a2", "--max", str(ANTHROPIC_ITEMS)) == 0
    assert len([r for r in fake_llm.requests if r["path"] == "/v1/messages"]) == ANTHROPIC_ITEMS
    again = rows(project, "a2")
    assert len(again) == ANTHROPIC_ITEMS and all(r["calls"][0]["cached"] for r in again)


def test_a_provider_429_is_retried_by_the_run_and_the_users_code_sees_success(tmp_path, fake_llm):
    project = user_project(tmp_path, OPENAI_SYSTEM, "openai", "gpt-4o-mini")
    register_answers(fake_llm, correct_share=1.0)
    fake_llm.answer_fn = None
    fake_llm.fail_next("429", count=2, retry_after=0.05)
    assert run(project, "r", "--max", "1") == 0
    (row,) = rows(project, "r")
    assert row["status"] == "judged" and row["calls"][0]["attempts"] == 3


def test_the_endpoint_serves_the_system_not_the_judge_and_is_gone_after_the_run(tmp_path, fake_llm, monkeypatch):
    started: list[target_endpoint.TargetEndpoint] = []
    real_start = target_endpoint.TargetEndpoint.start

    def start(self):
        started.append(self)
        return real_start(self)

    monkeypatch.setattr(target_endpoint.TargetEndpoint, "start", start)
    project = user_project(tmp_path, OPENAI_SYSTEM, "openai", "gpt-4o-mini")
    ports: list[int] = []
    real_scope = target_endpoint.TargetEndpoint.item_scope
    monkeypatch.setattr(target_endpoint.TargetEndpoint, "item_scope",
                        lambda self: (ports.append(self.port), real_scope(self))[1])
    assert run(project, "gone", "--max", "1") == 0
    assert len(started) == 1 and ports
    # the endpoint forwarded the memory system's one call and never the judge's (which the provider got directly)
    assert started[0].forwarder.forwarded == 1 and len(judge_requests(fake_llm)) == 1
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", ports[0]), timeout=1).close()
    assert not [t for t in threading.enumerate() if t.name == target_endpoint.THREAD_NAME]


def test_a_built_in_target_gets_no_endpoint(tmp_path, fake_llm, monkeypatch):
    monkeypatch.setattr(target_endpoint.TargetEndpoint, "start",
                        lambda self: pytest.fail("the endpoint started for a built-in target"))
    project = make_project(tmp_path / "p")
    register_answers(fake_llm)
    assert run(project, "builtin", "--max", "1") == 0


@pytest.mark.parametrize("ending", [KeyboardInterrupt, RuntimeError])
def test_a_run_stopped_by_ctrl_c_or_an_error_leaves_no_endpoint_behind(tmp_path, fake_llm, monkeypatch, ending):
    from lme.run import driver

    seen: list[int] = []

    def drive_then_fail(run, questions, llm, endpoint=None):
        seen.append(endpoint.port)
        raise ending("stopped mid-run")

    monkeypatch.setattr(driver, "_drive", drive_then_fail)
    project = user_project(tmp_path, OPENAI_SYSTEM, "openai", "gpt-4o-mini")
    with pytest.raises(ending):
        run(project, "stopped", "--max", "1")
    assert seen
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", seen[0]), timeout=1).close()
    assert not [t for t in threading.enumerate() if t.name == target_endpoint.THREAD_NAME]
