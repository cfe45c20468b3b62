"""The start-up probe (scripts/lme/models/provider_probe.py): one smallest request per model a run calls, before anything.

The refusals themselves (401, 404, quota, credit, unreachable, keys unset, no scheme, unknown provider: one line,
exit 2, nothing written) are rows of tests/cli/test_bad_inputs.py. Here: what the probe sends, how often, and when not.
"""

from __future__ import annotations

import pytest

from lme.models import provider_probe
from lme.cli import run_benchmark
from run_project import make_project, register_answers


pytestmark = pytest.mark.usefixtures("fresh_probes")


def run(project, *args):
    return run_benchmark.main(["--project", str(project), "--progress", "quiet", "--no-scorecard", "--yes", *args])


def test_a_run_probes_each_model_once_with_the_smallest_request_before_its_first_call(tmp_path, fake_llm):
    project = make_project(tmp_path / "p")
    register_answers(fake_llm)
    assert run(project, "--max", "2", "--run-id", "r1") == 0
    probes = fake_llm.probes
    assert sorted(p["body"]["model"] for p in probes) == ["gpt-4o-2024-08-06", "gpt-4o-mini"]  # reader, judge
    for p in probes:
        assert p["path"] == "/v1/chat/completions" and p["body"]["max_tokens"] == 1
        assert len(p["body"]["messages"]) == 1 and p["headers"]["x-longmemeval-probe"] == "1"
    calls = fake_llm.requests
    assert len(calls) == 4 and max(p["t"] for p in probes) < min(c["t"] for c in calls)  # 2 readers, 2 judges


def test_a_target_and_judge_on_one_model_cost_one_probe_and_a_second_run_in_the_process_none(tmp_path, fake_llm):
    project = make_project(tmp_path / "p", targetModel="gpt-4o-2024-08-06")
    assert run(project, "--max", "1") == 0
    assert [p["body"]["model"] for p in fake_llm.probes] == ["gpt-4o-2024-08-06"]
    assert run(project, "--max", "1") == 0
    assert len(fake_llm.probes) == 1


def test_an_anthropic_reader_is_probed_through_the_messages_api(tmp_path, fake_llm):
    project = make_project(tmp_path / "p", targetProvider="anthropic", targetModel="claude-sonnet-4-6")
    assert run(project, "--max", "1") == 0
    paths = sorted((p["path"], p["body"]["model"], p["body"]["max_tokens"]) for p in fake_llm.probes)
    assert paths == [("/v1/chat/completions", "gpt-4o-2024-08-06", 1), ("/v1/messages", "claude-sonnet-4-6", 1)]


def test_offline_runs_and_dry_runs_send_no_probe(tmp_path, fake_llm):
    project = make_project(tmp_path / "p")
    assert run(project, "--offline", "--max", "1") == 0
    assert run(project, "--dry-run") == 0
    assert fake_llm.probes == [] and fake_llm.requests == []


def test_a_retryable_answer_to_the_probe_lets_the_run_start(tmp_path, fake_llm):
    """A 429 or a 5xx is the run's retries' business: the probe only refuses what no retry fixes."""
    project = make_project(tmp_path / "p")
    fake_llm.fault_rate = {"503": 1.0}
    code = run(project, "--max", "1", "--run-id", "r1")
    assert code == 1 and len(fake_llm.probes) == 2  # started, and its item failed after retries (error row)
    assert (project / ".longmemeval-benchmarks" / "runs" / "r1" / "item-results.jsonl").is_file()


@pytest.mark.parametrize("kind,refused", [("auth", True), ("not_found", True), ("billing", True),
                                          ("connection", True), ("rate_limit", False), ("server", False),
                                          ("timeout", False), ("bad_request", False), ("malformed", False)])
def test_which_probe_failures_refuse_the_run(kind, refused):
    use = provider_probe.Use("target", "openai", "gpt-4o-mini")
    line = provider_probe.refusal_line(use, kind, 401, "openai gpt-4o-mini: x", key_env="OPENAI_API_KEY",
                                       url="https://api.openai.com/v1/")
    assert (line is not None) == refused
    if line:
        assert "\n" not in line and "openai:gpt-4o-mini" in line and "https://api.openai.com/v1/" in line


def test_targets_whose_calls_are_not_ours_are_not_probed():
    class S:
        target_provider, target_model, judge_provider, judge_model = "openai", "gpt-4o-mini", "offline", "x"
    for target in ("command", "python", "hypotheses", "offline"):
        S.target = target
        assert provider_probe.uses(S) == []
    S.target = "full-context"
    assert provider_probe.uses(S) == [provider_probe.Use("target", "openai", "gpt-4o-mini")]


def test_resuming_a_finished_run_calls_no_model_so_sends_no_probe(tmp_path, fake_llm):
    project = make_project(tmp_path / "p", concurrency=8)
    assert run(project, "--run-id", "done") == 0
    probes = len(fake_llm.probes)
    provider_probe.forget()  # as a new process would
    assert run(project, "--run-id", "done") == 0
    assert len(fake_llm.probes) == probes == 2


def test_the_probe_refusal_comes_before_what_the_cost_gates_scan_refuses(tmp_path, fake_llm):
    """The probe and the cost gate's estimate run at once (the first call comes sooner); the probe is still acted on
    first: a bad key is the line a user sees, not the dataset's fault, and the dataset's fault follows a good key."""
    import json

    from lme.core.errors import UserError
    from run_project import SAMPLE

    items = json.loads(SAMPLE.read_text())
    del items[-1]["question"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(items))
    project = make_project(tmp_path / "p", dataset=str(bad))
    gated = ["--project", str(project), "--progress", "quiet", "--no-scorecard"]  # no --yes: the gate runs
    fake_llm.fault_rate = {"401": 1.0}
    with pytest.raises(UserError) as refused:
        run_benchmark.main(gated)
    assert "401" in str(refused.value) or "key" in str(refused.value).lower()
    assert "field question" not in str(refused.value)
    fake_llm.fault_rate = {}
    provider_probe.forget()
    with pytest.raises(UserError) as refused:
        run_benchmark.main(gated)
    assert "field question: required but missing" in str(refused.value) and fake_llm.requests == []
    assert not (project / ".longmemeval-benchmarks" / "runs").exists()


def test_the_probe_builds_the_client_the_run_then_uses_at_the_default_timeout(tmp_path, fake_llm, monkeypatch):
    """An SDK client costs ~0.1 s to build: the probe's shorter timeout goes on its request, not into a client of
    its own that the run would then build again on the way to its first call. At the user's default timeout
    (600 s), which the other tests' 5 s (below the probe's 30 s) would hide."""
    from lme.models import provider_routes

    built = []
    real = provider_routes._build_client
    monkeypatch.setattr(provider_routes, "_POOL", provider_routes._ClientPool())
    monkeypatch.setattr(provider_routes, "_build_client", lambda *a, **k: built.append(a[:4]) or real(*a, **k))
    project = make_project(tmp_path / "p", requestTimeoutSeconds=600)
    register_answers(fake_llm)
    assert run(project, "--max", "2", "--run-id", "r1") == 0
    assert len(fake_llm.probes) == 2 and len(fake_llm.requests) == 4
    assert [(kind, timeout) for kind, _, _, timeout in built] == [("openai", 600.0)]
