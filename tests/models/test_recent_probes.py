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
    assert run(project, "--max", "1", "--run-id", "r1") == 0
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
