"""A probe that passed a moment ago stands for the next run on the same endpoint, key and model
(scripts/lme/models/recent_probes.py); anything else is probed again, and a failed or refused run remembers nothing.
Each run here is a new process as far as probes go (``provider_probe.forget()``)."""

from __future__ import annotations

import hashlib
import json

import pytest

from fake_llm_server import FakeLLMServer
from lme.cli import run_benchmark
from lme.core.errors import UserError
from lme.models import provider_probe, recent_probes
from run_project import make_project, register_answers

KEY = "sk-test-DUMMY-openai-key-0000"


def run(project, *args):
    """One run, as a new process makes it: no probe remembered in memory, only what the project's record holds."""
    provider_probe.forget()
    try:
        return run_benchmark.main(["--project", str(project), "--progress", "quiet", "--no-scorecard", "--yes", *args])
    finally:
        provider_probe.forget()


def record(project):
    path = project / ".longmemeval-benchmarks" / "cache" / recent_probes.FILE
    return json.loads(path.read_text()) if path.exists() else None


def test_the_next_run_on_the_same_endpoint_key_and_models_sends_no_probe(tmp_path, fake_llm):
    project = make_project(tmp_path / "p", cacheEnabled=False)
    register_answers(fake_llm)
    assert run(project, "--max", "1") == 0
    assert len(fake_llm.probes) == 2  # reader and judge
    assert len(record(project)["probes"]) == 2
    assert run(project, "--max", "1") == 0
    assert len(fake_llm.probes) == 2 and len(fake_llm.requests) == 4


def test_another_key_model_or_endpoint_is_probed_again(tmp_path, fake_llm, monkeypatch):
    project = make_project(tmp_path / "p")
    assert run(project, "--max", "1") == 0
    assert len(fake_llm.probes) == 2
    monkeypatch.setenv("OPENAI_API_KEY", KEY + "-rotated")
    assert run(project, "--max", "1") == 0
    assert len(fake_llm.probes) == 4  # both models: the key is another
    assert run(project, "--max", "1", "--target-model", "openai:gpt-4.1-mini") == 0
    assert [p["body"]["model"] for p in fake_llm.probes[4:]] == ["gpt-4.1-mini"]  # the judge's probe stands
    with FakeLLMServer() as other:
        monkeypatch.setenv("OPENAI_BASE_URL", other.openai_base_url)
        assert run(project, "--max", "1") == 0
        assert len(other.probes) == 2 and len(fake_llm.probes) == 5


def test_a_probe_older_than_the_ttl_is_sent_again(tmp_path, fake_llm, monkeypatch):
    project = make_project(tmp_path / "p")
    assert run(project, "--max", "1") == 0
    later = recent_probes.time.time() + recent_probes.TTL_S + 1
    monkeypatch.setattr(recent_probes.time, "time", lambda: later)
    assert run(project, "--max", "1") == 0
    assert len(fake_llm.probes) == 4


def test_a_failed_probe_is_never_remembered_even_when_the_run_starts_anyway(tmp_path, fake_llm):
    project = make_project(tmp_path / "p", maxAttempts=1)
    fake_llm.fault_rate = {"500": 1.0}  # the probe too: a server error, which the run's own retries would handle
    assert run(project, "--max", "1") == 1
    assert len(fake_llm.probes) == 2 and record(project) is None
    fake_llm.fault_rate = {}
    assert run(project, "--max", "1") == 0
    assert len(fake_llm.probes) == 4 and len(record(project)["probes"]) == 2


def test_a_run_refused_after_its_probe_leaves_no_record(tmp_path, fake_llm):
    project = make_project(tmp_path / "p")
    assert run(project, "--max", "2", "--run-id", "r1", "--max-cost", "0.00001") == 6  # paused: items pending
    (project / ".longmemeval-benchmarks" / "cache" / recent_probes.FILE).unlink()
    with pytest.raises(UserError, match="cannot resume run r1"):
        run(project, "--run-id", "r1", "--target-model", "openai:gpt-4.1-mini")  # probed (passed), then refused
    assert "gpt-4.1-mini" in [p["body"]["model"] for p in fake_llm.probes[2:]] and record(project) is None


def test_the_record_holds_no_key_and_no_hash_of_one(tmp_path, fake_llm):
    project = make_project(tmp_path / "p")
    assert run(project, "--max", "1") == 0
    text = (project / ".longmemeval-benchmarks" / "cache" / recent_probes.FILE).read_text()
    digest = hashlib.sha256(KEY.encode()).hexdigest()
    assert KEY not in text and digest not in text and digest[:16] not in text


def test_a_record_from_the_future_or_unreadable_is_a_miss(tmp_path):
    fp = recent_probes.fingerprint("openai", None, KEY, "gpt-4o")
    now = recent_probes.time.time()
    recent_probes.remember(tmp_path, [recent_probes.Passed(fp, now)])
    assert recent_probes.recent(tmp_path, fp)
    assert not recent_probes.recent(tmp_path, recent_probes.fingerprint("openai", None, KEY, "gpt-4o-mini"))
    assert not recent_probes.recent(tmp_path, fp, now=now - 60)  # the clock went back: the stamp is no proof
    (tmp_path / recent_probes.FILE).write_text("{not json")
    assert not recent_probes.recent(tmp_path, fp)


# --------------------------------------------------------------------------- the official judge's model-list entry


def test_the_judges_list_entry_is_remembered_with_its_probe_so_a_warm_run_sends_nothing(tmp_path, fake_llm, capsys):
    """A warm run neither reads the model list nor probes, and still prints the countdown the list gave."""
    project = make_project(tmp_path / "p", cacheEnabled=False)
    register_answers(fake_llm)
    fake_llm.model_entries["gpt-4o-2024-08-06"] = {"shutdown_date": "2027-01-14"}
    assert run(project, "--max", "1") == 0
    assert len(fake_llm.model_lookups) == 1 and len(fake_llm.probes) == 2
    assert set(record(project)["listed"].values()) == {"2027-01-14"}
    capsys.readouterr()
    assert run(project, "--max", "1") == 0
    assert len(fake_llm.model_lookups) == 1 and len(fake_llm.probes) == 2  # nothing sent before the first call
    assert "is retired on 2027-01-14" in capsys.readouterr().err


def test_from_a_day_before_the_shutdown_every_run_reads_the_list_again(tmp_path, fake_llm, monkeypatch):
    from lme.models import judge_entry

    project = make_project(tmp_path / "p", cacheEnabled=False)
    register_answers(fake_llm)
    assert run(project, "--max", "1") == 0  # the list gives no date: the announced one counts
    monkeypatch.setattr(judge_entry, "_today", lambda: judge_entry.dt.date(2027, 1, 13))
    assert run(project, "--max", "1") == 0
    assert len(fake_llm.model_lookups) == 2  # read again, and the judge probed again: nothing is remembered now
    fake_llm.gone_models["gpt-4o-2024-08-06"] = 404  # and so a retirement is seen before anything is written
    with pytest.raises(UserError, match="is gone"):
        run(project, "--max", "1", "--run-id", "late")
    assert not (project / ".longmemeval-benchmarks" / "runs" / "late").exists()


def test_a_remembered_entry_that_is_not_a_date_is_not_used(tmp_path):
    fp = recent_probes.fingerprint("openai", None, KEY, "gpt-4o-2024-08-06")
    now = recent_probes.time.time()
    recent_probes.remember(tmp_path, [recent_probes.Passed(fp, now, listed=True, shutdown_date="2027-01-14")])
    assert recent_probes.listing(tmp_path, fp) == (True, "2027-01-14")
    path = tmp_path / recent_probes.FILE
    data = json.loads(path.read_text())
    for bad in ("2027-13-45", "soon", 20270114, "2027-01-14T00:00:00Z"):
        data["listed"][fp] = bad
        path.write_text(json.dumps(data))
        assert recent_probes.listing(tmp_path, fp) == (False, None)
    recent_probes.remember(tmp_path, [recent_probes.Passed(fp, now)])  # a probe without its list: no entry
    assert recent_probes.listing(tmp_path, fp) == (False, None) and recent_probes.recent(tmp_path, fp)
