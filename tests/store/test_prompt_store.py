"""The run's prompt store: exact round trip, each long line once, written before its row, crash- and resume-safe."""

from __future__ import annotations

import json
from collections import Counter

from lme.store import prompt_store
from lme.cli import run_benchmark
from lme.core import schemas
from lme.core.records import ChatRequest
from run_project import make_project, register_answers, run_dir


def _request(text: str, system: str | None = None) -> ChatRequest:
    return ChatRequest(provider="openai", model="gpt-4o-mini", messages=({"role": "user", "content": text},),
                       system=system, max_tokens=500)


def _rebuilt(stored: dict) -> ChatRequest:
    return ChatRequest(provider=stored["provider"], model=stored["model"], system=stored["system"],
                       messages=tuple({"role": m["role"], "content": m["content"]} for m in stored["messages"]),
                       max_tokens=stored["max_tokens"], temperature=stored["temperature"])


def _records(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_a_prompt_comes_back_byte_for_byte_and_a_shared_line_is_stored_once(tmp_path):
    session = "[" + ", ".join(['{"role": "user", "content": "I repainted my bike ünïcode blue \\n twice."}'] * 12) + "]"
    texts = [f"Intro.\n\n=== Conversation 1 ===\n{session}\n\nQuestion: a?\n", f"Other intro\n{session}\n\n\nQ: b?"]
    store = prompt_store.PromptStore(tmp_path)
    keys = store.add([_request(texts[0], system="be brief"), _request(texts[1])])
    records = _records(tmp_path / prompt_store.PROMPTS_FILE)
    for record in records:
        schemas.validate("prompt-store", record, where="prompts.jsonl")
    assert Counter(r["kind"] for r in records) == {"line": 1, "prompt": 2}
    loaded = prompt_store.load(tmp_path)
    for key, text in zip(keys, texts):
        stored = loaded.request_text(key)
        assert stored["messages"][0]["content"] == text
        assert _rebuilt(stored).key() == key  # the stored request is the request, not an approximation
    assert loaded.request_text(keys[0])["system"] == "be brief"
    assert store.add([_request(texts[1])]) == [keys[1]]  # already stored: nothing more written
    assert len(_records(tmp_path / prompt_store.PROMPTS_FILE)) == 3


def test_a_torn_tail_is_cut_and_the_next_writer_adds_only_what_is_missing(tmp_path):
    long_line = "x" * 5000
    prompt_store.PromptStore(tmp_path).add([_request(f"a\n{long_line}")])
    path = tmp_path / prompt_store.PROMPTS_FILE
    with open(path, "ab") as fh:
        fh.write(b'{"schemaVersion":"1.0.0","kind":"line","sha256":"ab')  # a crash in the middle of an append
    assert len(prompt_store.load(tmp_path).prompts) == 1  # readers skip the torn tail
    key = prompt_store.PromptStore(tmp_path).add([_request(f"a\n{long_line}"), _request(f"b\n{long_line}")])[1]
    records = _records(path)  # parses: the tail was repaired before the append
    assert Counter(r["kind"] for r in records) == {"line": 1, "prompt": 2}
    assert prompt_store.load(tmp_path).request_text(key)["messages"][0]["content"] == f"b\n{long_line}"


def _run(project, *args):
    return run_benchmark.main(["--project", str(project), "--progress", "quiet", "--no-scorecard", *args])


def test_a_run_stores_every_prompt_its_rows_name_once_across_a_resume(tmp_path, fake_llm):
    project = make_project(tmp_path / "p")
    register_answers(fake_llm)
    assert _run(project, "--run-id", "r", "--max", "5") == 0
    assert _run(project, "--run-id", "r") == 0
    directory = run_dir(project, "r")
    rows = [json.loads(line) for line in (directory / "item-results.jsonl").read_text().splitlines()]
    loaded = prompt_store.load(directory)
    records = _records(directory / prompt_store.PROMPTS_FILE)
    assert len([r for r in records if r["kind"] == "prompt"]) == len(loaded.prompts)  # no prompt written twice
    assert len([r for r in records if r["kind"] == "line"]) == len(loaded.line_at)
    reader_prompts = [r["body"] for r in fake_llm.requests if r["body"].get("max_tokens") != 10]
    sent = {r["messages"][-1]["content"] for r in reader_prompts}
    for row in rows:
        assert len(row["prompt_keys"]) == 1, row["question_id"]  # the full-context reader: one call
        stored = loaded.request_text(row["prompt_keys"][0])
        assert _rebuilt(stored).key() == row["prompt_keys"][0]
        assert stored["messages"][-1]["content"] in sent  # what the model was really sent
