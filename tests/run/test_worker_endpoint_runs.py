"""Long-lived workers of a user's own memory system (a Python file, a ``jsonl`` command) through the run's target
endpoint. The systems are written here from plugins/README.md alone: an ``openai.OpenAI()`` built the default way at
import, once per worker, one chat call per item with the item's question in it. The fake provider echoes the prompt,
so the recorded call's text says which item it served: every row must carry exactly its own item's call."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from fake_llm_server import prompt_text
from lme.cli import run_benchmark
from lme.core.errors import run_main
from lme.models import target_endpoint
from run_project import SAMPLE, make_project, run_dir
from test_user_system_processes import _stop_workers  # noqa: F401  (the fixture: workers stopped after each test)

ITEMS = json.loads(SAMPLE.read_text())
FIRST = ITEMS[0]
ASK = "Answer from memory: "

PYTHON_SYSTEM = """\
import os
import openai

client = openai.OpenAI()  # at import, the default way: the worker's OPENAI_BASE_URL and key


def generate(item, ctx):
    reply = client.chat.completions.create(model=ctx["model"], max_tokens=64,
                                           messages=[{"role": "user", "content": "Answer from memory: " + item["question"]}])
    return {"hypothesis": reply.choices[0].message.content,
            "debug": {"pid": os.getpid(), "env_url": os.environ["OPENAI_BASE_URL"], "ctx_urls": ctx["endpoints"]}}
"""

JSONL_SYSTEM = """\
import json, os, sys
import openai

client = openai.OpenAI()
for line in sys.stdin:
    item = json.loads(line)
    reply = client.chat.completions.create(model=os.environ["LONGMEMEVAL_TARGET_MODEL"], max_tokens=64,
                                           messages=[{"role": "user", "content": "Answer from memory: " + item["question"]}])
    print(json.dumps({"hypothesis": reply.choices[0].message.content, "debug": {"pid": os.getpid()}}), flush=True)
"""

HANGS_WITH_A_CALL_IN_FLIGHT = f"""\
import os, time
import openai

client = openai.OpenAI()
DEAD = os.environ["DEAD_URL_FILE"]


def ask(text):
    reply = client.chat.completions.create(model=ctx_model, max_tokens=64, messages=[{{"role": "user", "content": text}}])
    return reply.choices[0].message.content


def generate(item, ctx):
    global ctx_model
    ctx_model = ctx["model"]
    if item["question"] == {FIRST['question']!r}:
        with open(DEAD, "w") as fh:
            fh.write(os.environ["OPENAI_BASE_URL"])
        ask("slow: " + item["question"])  # the provider holds it past the timeout: in flight when the worker dies
        time.sleep(600)
    refused = None
    if os.path.exists(DEAD):  # the killed worker's address, tried from the next one
        try:
            openai.OpenAI(base_url=open(DEAD).read(), max_retries=0).chat.completions.create(
                model=ctx_model, max_tokens=64, messages=[{{"role": "user", "content": "with a dead worker's token"}}])
        except openai.PermissionDeniedError as err:
            refused = err.status_code
    return {{"hypothesis": ask("Answer from memory: " + item["question"]), "debug": {{"dead_token": refused}}}}
"""


def echo(fake) -> None:
    """The provider answers each reader call with its prompt, and holds a ``slow:`` one for ``SLOW_S``: past the
    item's timeout, within the run's request timeout."""

    def answer(body):
        prompt = prompt_text(body)
        if prompt.startswith("slow: "):
            fake.sleep(SLOW_S)
        return prompt

    fake.answer_fn = answer


SLOW_S = 7.0
"""The ``slow:`` call's hold. The hanging item's timeout (5 s) must leave the worker time to import ``openai`` and
make its call on a loaded machine (2.5 s did not, at a load of 15 on 2 cores), and the hold must outlast it."""


def project_for(tmp_path: Path, target: str, request_timeout_s: float = 5, **options) -> Path:
    return make_project(tmp_path / "p", target=target, targetProvider="openai", targetModel="gpt-4o-mini",
                        judgeProvider="offline", judgeModel="offline-containment-v1", targetOptions=options,
                        requestTimeoutSeconds=request_timeout_s)


def run(project: Path, run_id: str, *args: str) -> int:
    return run_main(run_benchmark.main, ["--project", str(project), "--progress", "quiet", "--no-scorecard", "--yes",
                                         "--run-id", run_id, *args])


def rows(project: Path, run_id: str) -> list[dict]:
    lines = (run_dir(project, run_id) / "item-results.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def system_calls(fake) -> list[dict]:
    return [r for r in fake.requests if r["path"] == "/v1/chat/completions"]


def assert_each_row_carries_its_own_call(got: list[dict], *, cached: bool) -> None:
    for row in got:
        assert row["status"] == "judged", row.get("error")
        (call,) = row["calls"]
        assert call["role"] == "memory-system" and call["cached"] is cached
        assert call["text"] == ASK + row["question"] == row["hypothesis"]  # this item's call, not a neighbour's
        assert (row["tokensIn"], row["tokensOut"]) == (call["tokensIn"], call["tokensOut"])
    assert len({r["calls"][0]["tokensIn"] for r in got}) > 1  # the questions differ: so do the tokens matched


@pytest.mark.parametrize("workers", [None, 2], ids=["a worker per item in flight", "items wait for 2 workers"])
def test_python_workers_at_concurrency_4_put_each_call_in_its_own_items_row_and_a_rerun_is_cached(tmp_path, fake_llm,
                                                                                                 workers):
    echo(fake_llm)
    fake_llm.latency = 0.2  # calls of the workers overlap; with 2 workers, a worker goes straight to a waiting item
    project = project_for(tmp_path, "memsys.py", **({} if workers is None else {"workers": workers}))
    (project / "memsys.py").write_text(PYTHON_SYSTEM)
    assert run(project, "first", "--max", "12", "--concurrency", "4") == 0
    first = rows(project, "first")
    assert len(first) == 12 and len(system_calls(fake_llm)) == 12
    assert_each_row_carries_its_own_call(first, cached=False)
    assert len({r["target"]["debug"]["pid"] for r in first}) > 1  # several long-lived workers served them
    for row in first:  # ctx["endpoints"] names the worker's own URLs, as its environment does
        debug = row["target"]["debug"]
        assert debug["ctx_urls"]["openai"] == debug["env_url"] and debug["env_url"].startswith("http://127.0.0.1:")
        assert debug["ctx_urls"]["anthropic"] == debug["env_url"].removesuffix("/v1")

    assert run(project, "again", "--max", "12", "--concurrency", "4") == 0
    assert len(system_calls(fake_llm)) == 12  # the identical re-run made no provider call
    assert_each_row_carries_its_own_call(rows(project, "again"), cached=True)


def test_a_jsonl_commands_one_process_puts_each_call_in_its_own_items_row_and_a_rerun_is_cached(tmp_path, fake_llm):
    echo(fake_llm)
    script = tmp_path / "memsys_jsonl.py"
    script.write_text(JSONL_SYSTEM)
    project = project_for(tmp_path, "command", command=[sys.executable, str(script)], mode="jsonl")
    assert run(project, "first", "--max", "6", "--concurrency", "4") == 0
    first = rows(project, "first")
    assert_each_row_carries_its_own_call(first, cached=False)
    assert len({r["target"]["debug"]["pid"] for r in first}) == 1  # one long-lived process served every item
    assert run(project, "again", "--max", "6", "--concurrency", "4") == 0
    assert len(system_calls(fake_llm)) == 6
    assert_each_row_carries_its_own_call(rows(project, "again"), cached=True)


def test_a_worker_killed_at_its_timeout_keeps_its_call_in_its_row_and_its_token_is_refused_after(tmp_path, fake_llm,
                                                                                              monkeypatch):
    echo(fake_llm)
    monkeypatch.setenv("DEAD_URL_FILE", str(tmp_path / "dead_url"))
    project = project_for(tmp_path, "memsys.py", request_timeout_s=15, timeout_s=5)
    (project / "memsys.py").write_text(HANGS_WITH_A_CALL_IN_FLIGHT)
    assert run(project, "t", "--max", "4", "--concurrency", "1", "--error-threshold", "3") == 0
    hung, *rest = rows(project, "t")
    assert hung["question_id"] == FIRST["question_id"]
    assert hung["status"] == "error" and hung["error"]["kind"] == "timeout"
    # the call in flight when the worker was killed was finished and waited for: it is in the timeout row
    (late,) = hung["calls"]
    assert late["text"] == "slow: " + FIRST["question"] and hung["tokensIn"] == late["tokensIn"] > 0
    assert len(rest) == 3
    assert_each_row_carries_its_own_call(rest, cached=False)
    assert all(r["target"]["debug"]["dead_token"] == 403 for r in rest)  # the killed worker's token: refused
    assert not [r for r in system_calls(fake_llm) if "dead worker" in json.dumps(r["body"])]  # never made


def test_a_second_run_in_the_same_process_gets_workers_on_its_own_endpoint(tmp_path, fake_llm, monkeypatch):
    echo(fake_llm)
    ports: list[int] = []
    real_start = target_endpoint.TargetEndpoint.start

    def start(self):
        real_start(self)
        ports.append(self.port)
        return self

    monkeypatch.setattr(target_endpoint.TargetEndpoint, "start", start)
    project = project_for(tmp_path, "memsys.py")
    (project / "memsys.py").write_text(PYTHON_SYSTEM)
    assert run(project, "one", "--max", "2", "--concurrency", "1") == 0
    assert run(project, "two", "--max", "2", "--concurrency", "1", "--no-cache") == 0
    one, two = rows(project, "one"), rows(project, "two")
    assert_each_row_carries_its_own_call(two, cached=False)
    assert len(ports) == 2 and len(system_calls(fake_llm)) == 4
    for got, port in ((one, ports[0]), (two, ports[1])):
        assert {r["target"]["debug"]["env_url"].split("/t/")[0] for r in got} == {f"http://127.0.0.1:{port}"}
    # the first run's worker was stopped with its endpoint: a new one serves the second run
    assert not {r["target"]["debug"]["pid"] for r in one} & {r["target"]["debug"]["pid"] for r in two}


def test_outside_a_run_a_worker_gets_no_endpoint_and_its_calls_go_to_the_provider(tmp_path, fake_llm):
    from lme.targets import generation_driver as gd
    from test_targets_common import make_raw_item

    echo(fake_llm)
    path = tmp_path / "memsys.py"
    path.write_text(PYTHON_SYSTEM)
    hyp = gd.generate_hypothesis(make_raw_item(question="What is my cat's name?"), "openai", "gpt-4o-mini",
                                 target="python", options={"path": str(path)})
    assert hyp["hypothesis"] == ASK + "What is my cat's name?"
    assert hyp["debug"]["ctx_urls"] == {"openai": None, "anthropic": None}
    assert hyp["debug"]["env_url"] == fake_llm.openai_base_url  # the user's own setting, untouched
