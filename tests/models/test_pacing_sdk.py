"""Pacing through the real SDKs against the fake server's rate limits: the headers are read, the request bodies stay
what they were, oversize calls fail at once, 429s are retried until the limit passes, and a run reports it all."""

from __future__ import annotations

import json

import anthropic
import openai
import pytest

from lme.models import provider_errors
from lme.models import retries
from lme.models.providers import ProviderError, ProviderSettings, complete
from lme.models.rate_pacer import Pacer
from lme.core.records import ChatRequest
from run_project import make_project, register_answers, run_dir

FAST = ProviderSettings(timeout_s=5.0, max_attempts=2, backoff_base=0.01, backoff_max=0.05)


def ask(provider: str, text: str = "hello", **kw) -> ChatRequest:
    return ChatRequest(provider=provider, model="m-1", messages=({"role": "user", "content": text},), **kw)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_the_pacer_learns_the_limits_from_each_providers_headers(fake_llm, provider):
    fake_llm.rpm, fake_llm.tpm = 600, 100_000
    pacer = Pacer(4)
    for i in range(3):
        complete(ask(provider, f"question {i} " + "word " * 100), settings=FAST, limiter=pacer)
    info, = pacer.pacing()
    assert info["key"] == f"{provider}/m-1"
    assert (info["rpm_limit"], info["tpm_limit"], info["limits_from"], info["headers_seen"]) == (
        600, 100_000, "headers", True)
    assert info["requests"] == 3 and info["rate_limited"] == 0
    assert info["token_ratio"] and 0.5 < info["token_ratio"] < 2  # the fake's count against our estimate


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_reading_the_headers_leaves_the_request_body_byte_identical(fake_llm, provider):
    request = ask(provider, "Where is my bike?", system="be brief", max_tokens=50)
    complete(request, settings=FAST, limiter=Pacer(1))
    ours = fake_llm.requests[-1]["raw"]
    if provider == "openai":
        openai.OpenAI(max_retries=0).chat.completions.create(
            model="m-1", messages=[{"role": "system", "content": "be brief"},
                                   {"role": "user", "content": "Where is my bike?"}],
            max_tokens=50, temperature=0.0)
    else:
        anthropic.Anthropic(max_retries=0).messages.create(
            model="m-1", max_tokens=50, messages=[{"role": "user", "content": "Where is my bike?"}],
            system="be brief", extra_body={"temperature": 0.0})
    assert fake_llm.requests[-1]["raw"] == ours


def test_openai_refusing_a_call_as_too_large_fails_it_at_once(fake_llm):
    fake_llm.tpm = 1_000
    with pytest.raises(ProviderError) as err:
        complete(ask("openai", "word " * 2_000), settings=FAST, limiter=Pacer(2))
    assert err.value.kind == provider_errors.TOO_LARGE and err.value.attempts == 1
    assert "providers.openai.tpm" in str(err.value) and len(fake_llm.requests) == 1


def test_a_call_larger_than_a_learned_budget_is_never_sent_again(fake_llm):
    fake_llm.tpm = 1_000
    pacer = Pacer(2)
    with pytest.raises(ProviderError) as err:  # Anthropic says a plain 429 (with its headers): the retry is refused
        complete(ask("anthropic", "word " * 2_000), settings=FAST, limiter=pacer)
    assert err.value.kind == provider_errors.TOO_LARGE and "1,000 tokens per minute (headers)" in str(err.value)
    assert len(fake_llm.requests) == 1
    with pytest.raises(ProviderError):
        complete(ask("anthropic", "again " * 2_000), settings=FAST, limiter=pacer)
    assert len(fake_llm.requests) == 1


def test_rate_limits_are_retried_past_max_attempts(fake_llm):
    fake_llm.fail_next("429", count=4, retry_after=0.01)
    done = complete(ask("openai"), settings=FAST, limiter=Pacer(2))
    assert done.attempts == 5 and FAST.max_attempts == 2


def test_rate_limits_give_up_after_the_patience(fake_llm, monkeypatch):
    monkeypatch.setattr(retries, "RATE_LIMIT_PATIENCE_S", 0.0)
    fake_llm.fail_next("429", count=4, retry_after=0.01)
    with pytest.raises(ProviderError) as err:
        complete(ask("openai"), settings=FAST)
    assert err.value.kind == "rate_limit" and err.value.attempts == FAST.max_attempts


def test_a_run_paces_by_the_headers_and_reports_the_limits(tmp_path, fake_llm):
    from lme.cli import run_benchmark
    from lme.run import status as run_status

    fake_llm.rpm, fake_llm.tpm = 6_000, 10_000_000
    project = make_project(tmp_path / "p", targetModel="gpt-4o-2024-08-06")
    register_answers(fake_llm)
    assert run_benchmark.main(["--project", str(project), "--run-id", "paced", "--progress", "quiet"]) == 0
    meta = json.loads((run_dir(project, "paced") / "run-meta.json").read_text())
    info, = meta["invocations"][-1]["pacing"]
    assert info["key"] == "openai/gpt-4o-2024-08-06" and info["rpm_limit"] == 6_000
    assert info["tpm_limit"] == 10_000_000 and info["requests"] == len(fake_llm.requests)
    assert {"achieved_rpm", "achieved_tpm", "throttled_s", "waited_s"} <= set(info)
    assert meta["pacing"] == meta["invocations"][-1]["pacing"]
    status = run_status.collect(run_dir(project, "paced"), project)
    line = run_status.format_line(status)
    assert "openai/gpt-4o-2024-08-06 " in line and "/6k rpm" in line and "/10M tpm" in line
    assert status.to_dict()["pacing"][0]["rpm_limit"] == 6_000  # run_status.py --json


def test_config_budgets_pace_a_proxy_that_sends_no_headers(tmp_path, fake_llm):
    from lme.cli import run_benchmark

    fake_llm.rpm, fake_llm.rate_headers = 6_000, False
    project = make_project(tmp_path / "p", providers={"openai": {"rpm": 3_000, "tpm": 5_000_000}})
    register_answers(fake_llm)
    assert run_benchmark.main(["--project", str(project), "--run-id", "cfg", "--progress", "quiet"]) == 0
    meta = json.loads((run_dir(project, "cfg") / "run-meta.json").read_text())
    assert meta["settings"]["rate_limits"] == {"openai": {"rpm": 3000.0, "tpm": 5000000.0}}
    for info in meta["invocations"][-1]["pacing"]:
        assert (info["rpm_limit"], info["tpm_limit"], info["limits_from"], info["headers_seen"]) == (
            3_000, 5_000_000, "config", False)


@pytest.mark.parametrize(("value", "needle"), [('"fast"', 'expected number, got "fast"'), ("0", "rpm"),
                                               ("-5", "rpm"), ("true", "expected number")])
def test_a_bad_rpm_in_the_config_is_one_line_and_exit_2(tmp_path, capsys, value, needle):
    from lme.cli import run_benchmark
    from lme.core.errors import run_main

    project = make_project(tmp_path / "p")
    path = project / ".longmemeval-benchmarks" / "config.json"
    cfg = json.loads(path.read_text())
    cfg["providers"] = {"openai": {"rpm": "PLACEHOLDER"}}
    path.write_text(json.dumps(cfg).replace('"PLACEHOLDER"', value))
    assert run_main(run_benchmark.main, ["--project", str(project), "--run-id", "x", "--progress", "quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "providers.openai.rpm" in err and needle in err
    assert not (project / ".longmemeval-benchmarks" / "runs").exists()
