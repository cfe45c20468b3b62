"""A long-lived worker's token of the run's target endpoint, item by item: bound while the worker serves an item,
released the moment the item ends (before its worker serves the next), a process of its own per endpoint (none
outside a run), stopped with its endpoint. The system is written here from plugins/README.md alone; the items go
through ``generation_driver.run_target`` with scopes a test opens, as ``item_runner`` opens them in a run."""

from __future__ import annotations

import json
import time
from pathlib import Path

from lme.targets import generation_driver as gd
from lme.targets import processes
from test_target_endpoint import make_endpoint
from test_targets_common import make_raw_item
from test_user_system_processes import _stop_workers  # noqa: F401  (the fixture: workers stopped after each test)

SYSTEM = """\
import json, os, threading, time
import openai

client = openai.OpenAI(max_retries=0)  # at import, the default way


def ask(text):
    return client.chat.completions.create(model="gpt-4o-mini", max_tokens=64,
                                          messages=[{"role": "user", "content": text}]).choices[0].message.content


def later(path):  # a call made after generate answered: the worker serves no item then
    time.sleep(0.5)
    try:
        ask("between items")
        outcome = "made"
    except openai.PermissionDeniedError as err:
        outcome = err.status_code
    with open(path, "w") as fh:
        fh.write(json.dumps(outcome))


def generate(item, ctx):
    if ctx["options"].get("later"):
        threading.Thread(target=later, args=(ctx["options"]["later"],)).start()
    return {"hypothesis": ask(item["question"]),
            "debug": {"pid": os.getpid(), "url": os.environ.get("OPENAI_BASE_URL"), "ctx_urls": ctx["endpoints"]}}
"""


def answer(path: Path, question: str, scope=None, **options):
    return gd.run_target(make_raw_item(question=question), "openai", "gpt-4o-mini", target="python",
                         options={"path": str(path), "workers": 1, **options}, endpoint=scope)


def system(tmp_path: Path) -> Path:
    path = tmp_path / "memsys.py"
    path.write_text(SYSTEM)
    return path


def test_a_worker_is_released_when_its_item_ends_and_serves_the_next_while_that_scope_is_still_open(tmp_path,
                                                                                                  fake_llm):
    path = system(tmp_path)
    with make_endpoint(tmp_path) as endpoint, endpoint.item_scope() as first:
        one = answer(path, "first question?", first)
        with endpoint.item_scope() as second:  # the first item's scope is not closed yet (its row is being made)
            two = answer(path, "second question?", second)
        assert one.debug["pid"] == two.debug["pid"]  # the one worker served both
        assert [c.text for c in first.calls()] == [one.hypothesis] and [c.text for c in second.calls()] == [
            two.hypothesis]
        assert len(fake_llm.requests) == 2


def test_a_call_a_worker_makes_between_items_is_refused_and_in_no_row(tmp_path, fake_llm):
    path = system(tmp_path)
    outcome = tmp_path / "later.json"
    with make_endpoint(tmp_path) as endpoint, endpoint.item_scope() as scope:
        answer(path, "first question?", scope, later=str(outcome))
        deadline = time.monotonic() + 10
        while not outcome.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert json.loads(outcome.read_text()) == 403  # its item ended: the token is bound to nothing
        assert len(scope.calls()) == 1 and len(fake_llm.requests) == 1


def test_a_worker_gets_its_endpoints_urls_none_outside_a_run_and_stops_with_its_endpoint(tmp_path, fake_llm):
    path = system(tmp_path)
    outside = answer(path, "q?")
    assert outside.debug["ctx_urls"] == {"openai": None, "anthropic": None}
    assert outside.debug["url"] == fake_llm.openai_base_url  # the user's own environment, as without a run
    pids = [outside.debug["pid"]]
    for _ in range(2):  # two runs, one after the other
        with make_endpoint(tmp_path / "cache") as endpoint, endpoint.item_scope() as scope:
            inside = answer(path, "q?", scope)
            assert inside.debug["url"].startswith(f"{endpoint.root_url}/t/")
            assert inside.debug["ctx_urls"]["openai"] == inside.debug["url"]
            assert len(scope.calls()) == 1
            pids.append(inside.debug["pid"])
        (worker,) = [w for pool in processes._POOLS.values() for w in pool.workers]
        assert worker.proc is None and worker.token is None  # stopped with its endpoint
    again = answer(path, "q?")
    assert again.debug["ctx_urls"] == {"openai": None, "anthropic": None}
    assert len(set(pids + [again.debug["pid"]])) == 4  # a process of its own each time the endpoint changed
