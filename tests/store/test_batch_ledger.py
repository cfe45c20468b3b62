"""The Batch API ledger (batches.jsonl): custom_ids within both providers' rules, replay after a torn append."""

from __future__ import annotations

import json

import pytest

from lme.store import batch_ledger
from lme.core import fileio
from lme.store.batch_ledger import CUSTOM_ID, Ledger, custom_id


def test_custom_ids_fit_anthropics_rule_and_hash_what_does_not_fit():
    long_run = "x" * 80
    made = custom_id(long_run, "judge", "gpt4_93159ced_abs", 3, 2)
    assert made == f"{batch_ledger.run_tag(long_run)}-j-gpt4_93159ced_abs-3-a2" and len(made) <= 64
    odd = custom_id("run", "generate", "Q-" + "ü" * 60)
    assert CUSTOM_ID.fullmatch(odd) and "-g-h" in odd and len(odd) <= 64
    assert custom_id("run", "judge", "q1") != custom_id("run", "judge", "q1", attempt=1)
    assert custom_id("run-a", "judge", "q1") != custom_id("run-b", "judge", "q1")


def test_every_real_question_id_is_embedded_as_is(shared_data):
    # the oracle file holds all 500 question ids (the _s copy's 499 are among them: no need to unpack its 40 MB)
    ids = {str(it["question_id"]) for it in json.loads((shared_data / "longmemeval_oracle.json").read_text())}
    assert len(ids) == 500
    made = {custom_id("3f2a" * 20, "judge", qid, 0, 9) for qid in ids}
    assert len(made) == len(ids)  # no two questions share one
    assert all(CUSTOM_ID.fullmatch(m) and f"-j-{m.split('-j-')[1]}" for m in made)
    assert all(f"-{qid}-0-a9" in custom_id("r", "judge", qid, 0, 9) for qid in ids)


def test_the_ledger_replays_its_events_and_survives_a_torn_last_line(tmp_path):
    ledger = Ledger(tmp_path)
    requests = [{"custom_id": "r1-j-q1-0-a0", "qid": "q1", "sub": 0, "attempt": 0, "key": "k1"}]
    ledger.append("planned", "j0001", provider="openai", model="gpt-4o", stage="judge", requests=requests,
                  input="batches/j0001.input.jsonl")
    ledger.append("uploaded", "j0001", file_id="file-1")
    ledger.append("submitted", "j0001", batch_id="batch_1")
    with open(batch_ledger.ledger_path(tmp_path), "ab") as fh:
        fh.write(b'{"v":1,"event":"collected","chunk":"j0001","outc')  # killed mid-append
    fileio.APPENDS.forget(batch_ledger.ledger_path(tmp_path))  # the next process has not repaired it yet
    again = Ledger(tmp_path)
    chunk = again.chunks["j0001"]
    assert (chunk.phase, chunk.file_id, chunk.batch_id) == ("submitted", "file-1", "batch_1")
    assert again.by_key() == {"k1": [chunk]}
    again.append("collected", "j0001", batch_id="batch_1", results="batches/j0001.results.jsonl",
                 outcomes={"r1-j-q1-0-a0": "ok"})
    assert Ledger(tmp_path).chunks["j0001"].phase == "collected"  # the torn tail was cut before the append
    progress = batch_ledger.progress(tmp_path)
    assert progress["totals"]["completed"] == 1 and progress["batches"][0]["batch_id"] == "batch_1"


def test_request_bodies_are_the_sync_bodies():
    from lme.core.records import ChatRequest
    from lme.models.request_bodies import request_body

    request = ChatRequest("anthropic", "claude-haiku-4-5", ({"role": "user", "content": "hi"},), system="s",
                          max_tokens=7, temperature=0)
    assert request_body(request, "anthropic") == {"model": "claude-haiku-4-5", "max_tokens": 7, "system": "s",
                                                  "messages": [{"role": "user", "content": "hi"}], "temperature": 0}
    assert request_body(request, "anthropic", temperature=False).get("temperature") is None
    assert request_body(request, "openai")["messages"][0] == {"role": "system", "content": "s"}


@pytest.mark.parametrize("billing, factor", [("sync", 1.0), ("batch", 0.5)])
def test_batch_billing_is_half_the_list_price(billing, factor):
    from lme.models import prices

    assert prices.cost_usd("gpt-4o", 1_000_000, 0, billing) == pytest.approx(2.50 * factor)
    assert prices.call_cost([{"model": "gpt-4o", "tokensIn": 0, "tokensOut": 1_000_000, "billing": billing}]) \
        == pytest.approx(10.0 * factor)
