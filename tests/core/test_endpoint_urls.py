"""Endpoint URLs parsed, never substring-tested: the host a call goes to, the official judge's host, and credentials
redacted wherever an endpoint is recorded or shown (run-meta, metrics.json, scorecard.md, report.html, the
scorecard command's output, verdict rows, the call cache, the archive)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from lme.core import endpoint_urls
from lme.core.endpoint_urls import host_of, is_official_endpoint, is_official_host, redact, redact_text
from lme.models import provider_routes
from lme.models.provider_errors import ProviderError
from lme.cli import scorecard
from lme.cli import run_benchmark
from run_project import make_project, register_answers, run_dir

PASSWORD = "s3cr3t-PASSWORD-0000"


@pytest.mark.parametrize(("url", "host"), [
    ("https://api.openai.com/v1", "api.openai.com"),
    ("https://api.openai.com:443/v1/", "api.openai.com"),
    ("https://API.OpenAI.com/v1", "api.openai.com"),
    ("http://127.0.0.1:8080/api.openai.com/v1", "127.0.0.1:8080"),  # a proxy path naming OpenAI
    ("http://api.openai.com@127.0.0.1:8080/v1", "127.0.0.1:8080"),  # a user name naming OpenAI
    (f"http://user:{PASSWORD}@proxy.example:9000/v1", "proxy.example:9000"),
    ("http://127.0.0.1:8080/x.openai.azure.com", "127.0.0.1:8080"),
    ("https://myres.openai.azure.com/openai/deployments/d/", "myres.openai.azure.com"),
    ("http://[::1]:8080/v1", "[::1]:8080"),
    ("api.openai.com/v1", None),  # no scheme: not a URL a client calls
    ("http://host:notaport/v1", None),
])
def test_the_host_is_parsed_from_the_url(url, host):
    assert host_of(url) == host


@pytest.mark.parametrize(("provider", "url", "official"), [
    ("openai", "https://api.openai.com/v1/", True),
    ("openai", "https://api.openai.com/proxy/v1", True),  # OpenAI's own server, whatever the path
    ("openai", "http://127.0.0.1:9/api.openai.com/v1", False),
    ("openai", "http://api.openai.com@127.0.0.1:9/v1", False),
    ("openai", "https://api.openai.com.evil.example/v1", False),
    ("openai", "https://evil.example/?api.openai.com", False),
    ("openai", "http://api.openai.com/v1", False),  # not HTTPS
    ("openai", "https://api.openai.com:8443/v1", False),
    ("azure", "https://myres.openai.azure.com/openai/deployments/d/", True),
    ("azure", "http://127.0.0.1:9/x.openai.azure.com", False),
    ("azure", "https://a.b.openai.azure.com/", False),
    ("azure", "https://openai.azure.com/", False),
    ("anthropic", "https://api.openai.com/v1", False),
])
def test_the_official_endpoint_is_exactly_openais_host_or_an_azure_resource(provider, url, official):
    assert is_official_endpoint(provider, url) is official


def test_the_test_hook_is_the_only_way_a_local_host_counts_as_official(monkeypatch):
    assert not is_official_host("openai", "127.0.0.1:9")
    monkeypatch.setattr(endpoint_urls, "TEST_OFFICIAL_HOSTS", frozenset({"127.0.0.1:9"}))
    assert is_official_host("openai", "127.0.0.1:9") and is_official_endpoint("openai", "http://127.0.0.1:9/v1")
    assert not is_official_host("anthropic", "127.0.0.1:9")


@pytest.mark.parametrize("url", [
    f"http://user:{PASSWORD}@proxy.example:9000/v1",
    f"http://{PASSWORD}@proxy.example/v1",
    f"https://proxy.example/v1?api-key={PASSWORD}&region=eu",
    f"https://proxy.example/v1?sig={PASSWORD}",
])
def test_credentials_in_a_url_are_redacted_and_the_rest_kept(url):
    shown = redact(url)
    assert PASSWORD not in shown and "***" in shown
    assert host_of(shown) == host_of(url)
    assert PASSWORD not in redact_text(f"error: cannot reach {url} (refused)")


def test_a_url_without_credentials_is_shown_as_written():
    assert redact("https://api.openai.com/v1/") == "https://api.openai.com/v1/"
    assert redact("http://127.0.0.1:8/v1?region=eu") == "http://127.0.0.1:8/v1?region=eu"


def test_the_users_environment_records_the_sdks_default_host_without_a_call(monkeypatch):
    """A real user sets no base URL: the SDK's default host is where the judge goes, and that is official."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    settings = provider_routes.ProviderSettings()
    assert provider_routes.endpoint_host("openai", settings) == "api.openai.com"
    assert provider_routes.shown_base_url("openai", settings) == "https://api.openai.com/v1/"
    assert is_official_endpoint("openai", provider_routes.resolved_base_url("openai", settings))
    from lme.run import state as run_state
    from types import SimpleNamespace

    run = SimpleNamespace(base_urls={}, azure={}, target_provider="anthropic", judge_provider="openai",
                          successor=None)
    assert run_state.endpoints(run) == {"anthropic": "https://api.anthropic.com", "openai": "https://api.openai.com/v1/"}
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://u:{PASSWORD}@127.0.0.1:9/api.openai.com/v1")
    assert provider_routes.endpoint_host("openai", settings) == "127.0.0.1:9"
    assert PASSWORD not in provider_routes.shown_base_url("openai", settings)


def test_a_password_in_a_base_url_lands_in_no_file_and_no_output(fake_llm, tmp_path, capsys):
    project = make_project(tmp_path / "p", providers={"openai": {
        "base_url": f"http://user:{PASSWORD}@127.0.0.1:{fake_llm.port}/v1"}})
    register_answers(fake_llm)
    code = run_benchmark.main(["--project", str(project), "--progress", "quiet", "--yes", "--run-id", "pw",
                               "--max", "2"])
    assert code == 0
    assert fake_llm.requests  # the calls went through the URL, credentials and all
    assert scorecard.main(["--project", str(project), "--run-id", "pw", "--rescore"]) == 0
    out = capsys.readouterr()
    assert PASSWORD not in out.out + out.err
    for path in Path(project).rglob("*"):
        if path.is_file() and path.name != "config.json":  # the user's own file, where they wrote it
            assert PASSWORD.encode() not in path.read_bytes(), path
    meta = json.loads((run_dir(project, "pw") / "run-meta.json").read_text())
    assert meta["endpoints"]["openai"] == f"http://***@127.0.0.1:{fake_llm.port}/v1"
    assert meta["invocations"][0]["endpoints"]["openai"] == meta["endpoints"]["openai"]
    rows = [json.loads(x) for x in (run_dir(project, "pw") / "item-results.jsonl").read_text().splitlines()]
    assert {r["judgment"]["endpoint_host"] for r in rows} == {f"127.0.0.1:{fake_llm.port}"}
    cache = sqlite3.connect(project / ".longmemeval-benchmarks" / "cache" / "calls.sqlite3")
    assert {h for (h,) in cache.execute("SELECT endpoint_host FROM calls")} == {f"127.0.0.1:{fake_llm.port}"}
    assert "not the official judge's" in (run_dir(project, "pw") / "scorecard.md").read_text()


def test_a_provider_error_never_carries_url_credentials():
    err = ProviderError("connection", f"openai m: cannot reach http://u:{PASSWORD}@host:1/v1")
    assert PASSWORD not in str(err) and "***@host:1" in str(err)
