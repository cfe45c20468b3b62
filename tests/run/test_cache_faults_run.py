"""Call-cache faults in whole runs (issue 38, finding 8): a damaged cache is kept aside and emptied, said in one line
naming it, and no item fails for it; a cache another live process holds is waited for, naming the holder. For the
built-in targets and for the user's own memory system (a Python file written here from plugins/README.md alone,
whose model calls go through the run's endpoint and so through the run's cache)."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

from lme.cli import run_benchmark
from lme.core.errors import run_main
from lme.models import call_cache
from run_project import SAMPLE, make_project, register_answers, run_dir
from test_call_cache import damage_pages, hold_lock, quarantined, sound

N_SAMPLE = len(json.loads(SAMPLE.read_text()))

OWN_SYSTEM = """\
import os
import openai

client = openai.OpenAI()  # the default way: the worker's OPENAI_BASE_URL (the run's endpoint) and key


def damage(path):  # what a failing disk does to the run's cache, once (the test's marker file says when)
    import sqlite3
    check = sqlite3.connect(path)
    check.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    check.close()
    data = bytearray(open(path, "rb").read())
    for start in range(4096, len(data), 4096):
        data[start] = 0x77
    open(path, "r+b").write(data)


def generate(item, ctx):
    if os.path.exists(MARK):
        os.remove(MARK)
        damage(CACHE)
    reply = client.chat.completions.create(model=ctx["model"], max_tokens=64,
                                           messages=[{"role": "user", "content": "Answer from memory: " + item["question"]}])
    return {"hypothesis": reply.choices[0].message.content}
"""


def run(project: Path, *args: str) -> int:
    return run_main(run_benchmark.main, ["--project", str(project), "--progress", "quiet",
                                         "--no-scorecard", "--yes", *args])


def rows(project: Path, run_id: str) -> list[dict]:
    lines = (run_dir(project, run_id) / "item-results.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def cache_file(project: Path) -> Path:
    return project / ".longmemeval-benchmarks" / "cache" / "calls.sqlite3"


def test_a_cache_damaged_between_runs_is_kept_aside_emptied_and_the_run_pays_its_calls_again(tmp_path, fake_llm,
                                                                                            capsys):
    project = make_project(tmp_path / "p")
    register_answers(fake_llm)
    assert run(project, "--run-id", "first") == 0
    calls = len(fake_llm.requests)
    cache = cache_file(project)
    damaged = damage_pages(cache, pages=[3])  # one page: other entries would still read
    capsys.readouterr()
    assert run(project, "--run-id", "second") == 0
    err = capsys.readouterr().err
    second = rows(project, "second")
    assert len(second) == N_SAMPLE and all(r["status"] == "judged" for r in second)  # none blames the target
    assert len(fake_llm.requests) == 2 * calls  # nothing served from the damaged file
    (moved,) = quarantined(cache.parent)
    assert err.count("is damaged") == 1 and f"call cache {cache} is damaged" in err and str(moved) in err
    assert moved.read_bytes() == damaged and sound(cache)
    assert run(project, "--run-id", "third") == 0  # the emptied cache, refilled, serves a later run
    assert len(fake_llm.requests) == 2 * calls and "is damaged" not in capsys.readouterr().err


def test_bad_input_with_a_damaged_cache_writes_nothing(tmp_path, fake_llm, capsys):
    project = make_project(tmp_path / "p")
    register_answers(fake_llm)
    assert run(project, "--run-id", "first", "--max", "2") == 0
    cache = cache_file(project)
    damaged = damage_pages(cache)
    before = sorted(p.name for p in cache.parent.iterdir())
    assert run(project, "--run-id", "x", "--target", "nosuch") == 2
    assert "unknown target" in capsys.readouterr().err
    assert not run_dir(project, "x").exists() and cache.read_bytes() == damaged
    assert sorted(p.name for p in cache.parent.iterdir()) == before  # no quarantine copy, no -wal/-shm


def test_the_users_own_system_meets_a_cache_damaged_mid_run_and_no_item_fails(tmp_path, fake_llm, capsys):
    register_answers(fake_llm)
    project = make_project(tmp_path / "p", judgeProvider="offline", judgeModel="offline-containment-v1")
    cache, mark = cache_file(project), tmp_path / "damage-now"
    (project / "memsys.py").write_text(f"CACHE = {str(cache)!r}\nMARK = {str(mark)!r}\n" + OWN_SYSTEM)
    assert run(project, "--target", "memsys.py", "--run-id", "first", "--max", "4") == 0
    paid = len(fake_llm.requests)
    assert paid == 4
    mark.write_text("")
    capsys.readouterr()
    assert run(project, "--target", "memsys.py", "--run-id", "second", "--max", "4", "--concurrency", "1") == 0
    err = capsys.readouterr().err
    second = rows(project, "second")
    assert len(second) == 4 and all(r["status"] == "judged" for r in second), [r.get("error") for r in second]
    assert not mark.exists() and len(fake_llm.requests) == 2 * paid  # after the damage, every call is paid again
    assert all(not r["calls"][0]["cached"] for r in second)
    (moved,) = quarantined(cache.parent)
    assert err.count("is damaged") == 1 and f"call cache {cache} is damaged" in err and str(moved) in err
    assert sound(cache)
    assert run(project, "--target", "memsys.py", "--run-id", "third", "--max", "4") == 0
    assert len(fake_llm.requests) == 2 * paid and all(r["calls"][0]["cached"] for r in rows(project, "third"))


def test_a_run_meeting_a_cache_another_live_process_holds_waits_naming_it(tmp_path, fake_llm, capsys, monkeypatch):
    monkeypatch.setattr(call_cache, "BUSY_NOTICE_S", 0.2)
    project = make_project(tmp_path / "p")
    register_answers(fake_llm)
    assert run(project, "--run-id", "first", "--max", "2") == 0
    capsys.readouterr()
    holder = hold_lock(cache_file(project), 2.0)
    try:
        assert run(project, "--run-id", "second", "--max", "3") == 0
    finally:
        holder.wait()
    err = capsys.readouterr().err
    assert f"call cache {cache_file(project)} is locked by" in err and "waiting" in err
    if Path("/proc/locks").is_file():
        assert f"pid {holder.pid}" in err
    assert "disk full" not in err and "delete" not in err and len(rows(project, "second")) == 3
    conn = sqlite3.connect(cache_file(project))
    assert conn.execute("SELECT count(*) FROM calls").fetchone()[0] > 0
    conn.close()
