"""Verdict provenance: every verdict (row, cache entry, archive line) says where it was made, what the response
named, where it came from and how it was asked; the call cache keys judge calls on the endpoint host; a resume
through another endpoint leaves a trace; URL tricks never pass as the official host; the archive is a verified,
shareable file; calibration flips name the prompt. Against the fake server, real SDKs."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from lme.cli import run_benchmark
from lme.core import endpoint_urls
from lme.core.errors import run_main
from lme.core.records import ChatRequest
from lme.judge import agreement_figures
from lme.judge import agreement as judge_agreement, verdict_archive
from lme.cli import judge_shim
from lme.cli import judge_agreement as judge_agreement_cli
from lme.judge.official import judge_request
from lme.models.call_cache import CallCache
from lme.store.run_store import load_run
from run_project import SAMPLE, make_project, register_answers, run_dir
from factories import scorecard_of

ITEMS = json.loads(SAMPLE.read_text())
OFFICIAL = "gpt-4o-2024-08-06"


pytestmark = pytest.mark.usefixtures("fresh_probes")


def write_hyps(path: Path, tag: str = "") -> None:
    path.write_text("".join(json.dumps({"question_id": it["question_id"],
                                        "hypothesis": (f"It is {it['answer']}.{tag}" if i % 2 == 0 else
                                                       f"I don't know.{tag}")}) + "\n"
                            for i, it in enumerate(ITEMS)))


def run(project: Path, *args: str) -> int:
    return run_main(run_benchmark.main, ["--project", str(project), "--progress", "quiet", "--yes", "--no-scorecard",
                                         *args])


def rows_of(project: Path, run_id: str) -> list[dict]:
    path = run_dir(project, run_id) / "item-results.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def judge_calls(server) -> list[dict]:
    return [q for q in server.requests if (q.get("body") or {}).get("max_tokens") == 10]


def via(server, how: str) -> str:
    """The same fake server reached another way: ``proxy`` (localhost: another host), ``official`` (127.0.0.1: the
    host the upstream_prompt fixture makes official), ``userinfo`` and ``path`` (a URL naming api.openai.com)."""
    return {"official": server.openai_base_url,
            "proxy": f"http://localhost:{server.port}/v1",
            "userinfo": f"http://api.openai.com@127.0.0.1:{server.port}/v1",
            "path": f"http://127.0.0.1:{server.port}/api.openai.com/v1"}[how]


def set_base_url(project: Path, url: str) -> None:
    path = project / ".longmemeval-benchmarks" / "config.json"
    cfg = json.loads(path.read_text())
    cfg["providers"] = {"openai": {"base_url": url}}
    path.write_text(json.dumps(cfg))


# --------------------------------------------------------------------------- finding 4: a URL cannot fake "official"


@pytest.mark.parametrize("how", ["userinfo", "path"])
def test_a_url_naming_api_openai_com_is_not_the_official_host(fake_llm, tmp_path, capsys, how, monkeypatch,
                                                              upstream_prompt):
    monkeypatch.setattr(endpoint_urls, "TEST_OFFICIAL_HOSTS", frozenset())  # 127.0.0.1 is what it is: not OpenAI
    project = make_project(tmp_path / "p", providers={"openai": {"base_url": via(fake_llm, how)}})
    register_answers(fake_llm)
    hyps = tmp_path / "hyps.jsonl"
    write_hyps(hyps)
    assert run(project, "--hypotheses", str(hyps), "--run-id", "r") == 0
    assert judge_calls(fake_llm)  # the calls reached the fake, on 127.0.0.1
    rows = rows_of(project, "r")
    assert {r["judgment"]["endpoint_host"] for r in rows} == {f"127.0.0.1:{fake_llm.port}"}
    assert not any(r["judgment"]["official"] for r in rows)
    record = scorecard_of(load_run(run_dir(project, "r")))
    card = record.to_dict()
    assert card["verdicts"]["official_live"] == 0 and card["verdicts"]["other"] == len(ITEMS)
    assert any("not the official judge's" in n for n in card["comparability_notes"])
    archive = tmp_path / "v.jsonl"
    assert judge_shim.main(["export-verdicts", "--project", str(project), "--out", str(archive)]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["verdicts"] == 0 and result["skipped_not_official"] == len(ITEMS)


def test_an_azure_resource_in_a_path_is_not_an_azure_resource(tmp_path):
    from factories import SSU, official_row, write_run

    done = write_run(tmp_path / "r", [("k1", SSU)], [official_row("k1", SSU, True, judge_provider="azure")],
                     judge={"provider": "azure", "model": OFFICIAL, "official": True})
    meta = json.loads((done / "run-meta.json").read_text())
    meta["endpoints"] = {"azure": "http://127.0.0.1:9/x.openai.azure.com/openai/deployments/d/"}
    (done / "run-meta.json").write_text(json.dumps(meta))
    notes = scorecard_of(load_run(done)).to_dict()["comparability_notes"]
    assert any("not an Azure OpenAI resource" in n for n in notes)


# --------------------------------------------------------------------------- finding 5: the cache knows the host


def test_verdicts_a_proxy_gave_are_never_served_from_the_cache_to_a_run_at_the_official_host(
        fake_llm, tmp_path, capsys, upstream_prompt):
    project = make_project(tmp_path / "p", providers={"openai": {"base_url": via(fake_llm, "proxy")}})
    register_answers(fake_llm)
    hyps = tmp_path / "hyps.jsonl"
    write_hyps(hyps)
    fake_llm.judge_fn = lambda prompt: "yes"  # the proxy says yes to everything
    assert run(project, "--hypotheses", str(hyps), "--run-id", "proxied") == 0
    fake_llm.judge_fn = None
    set_base_url(project, via(fake_llm, "official"))
    before = len(judge_calls(fake_llm))
    assert run(project, "--hypotheses", str(hyps), "--run-id", "real") == 0
    assert len(judge_calls(fake_llm)) - before == len(ITEMS)  # every verdict asked again, none from the cache
    rows = rows_of(project, "real")
    assert all(r["judgment"]["source"] == "call" and r["judgment"]["official"] for r in rows)
    proxied = {r["question_id"]: r["judgment"]["label"] for r in rows_of(project, "proxied")}
    assert sum(proxied[r["question_id"]] != r["judgment"]["label"] for r in rows) > 0
    cache = sqlite3.connect(project / ".longmemeval-benchmarks" / "cache" / "calls.sqlite3")
    hosts = {h for (h,) in cache.execute("SELECT endpoint_host FROM calls")}
    assert hosts == {f"localhost:{fake_llm.port}", f"127.0.0.1:{fake_llm.port}"}
    # a second run at the official host is served the verdicts the first one made there: from the archive, which
    # took only the official ones (never the proxy's)
    assert run(project, "--hypotheses", str(hyps), "--run-id", "again") == 0
    again = rows_of(project, "again")
    assert all(r["judgment"]["source"] == "archive" and r["judgment"]["official"] for r in again)
    assert {r["judgment"]["origin"]["by"] for r in again} == {"run real"}
    assert {r["question_id"]: r["judgment"]["label"] for r in again} == {
        r["question_id"]: r["judgment"]["label"] for r in rows}
    assert judge_shim.main(["export-verdicts", "--project", str(project), "--out", str(tmp_path / "v.jsonl")]) == 0
    assert json.loads(capsys.readouterr().out)["skipped_not_official"] == len(ITEMS)  # the proxy's


def test_a_judge_entry_cached_before_hosts_were_recorded_is_never_served_to_a_judge_call(tmp_path):
    from lme.core.records import Completion

    request = judge_request("STANDIN generic: Q=q A=a R=a", "openai", "gpt-4o")
    reply = Completion(text="yes", tokensIn=1, tokensOut=1, latencyMs=1.0, provider="openai", model=OFFICIAL)
    cache = CallCache(tmp_path)
    cache._conn().execute(  # what an older version wrote: the bare key, no host
        "INSERT INTO calls (key, provider, model, request, response, created_at) VALUES (?,?,?,?,?,?)",
        (request.key(), "openai", OFFICIAL, "{}", json.dumps(reply.to_dict()), 0.0))
    assert cache.get(request, "api.openai.com") is None and cache.get(request, None) is None
    reader = ChatRequest(provider="openai", model="gpt-4o-mini", messages=({"role": "user", "content": "hi"},))
    cache.put(reader, reply)
    assert cache.get(reader, "anywhere") is not None  # reader calls are not bound to a host
    cache.put(request, Completion(**{**reply.__dict__, "endpoint_host": "api.openai.com"}))
    assert cache.get(request, "api.openai.com").endpoint_host == "api.openai.com"
    assert cache.get(request, "127.0.0.1:9") is None


# --------------------------------------------------------------------------- finding 6: a resume elsewhere


def rows_judged(project, run_id):
    """The run's judged rows so far (the items its first invocation judged before it paused)."""
    path = run_dir(project, run_id) / "item-results.jsonl"
    return [r for r in (json.loads(x) for x in path.read_text().splitlines() if x.strip()) if r["status"] == "judged"]


def test_a_resume_through_another_endpoint_is_recorded_and_makes_the_run_not_comparable(fake_llm, tmp_path,
                                                                                       upstream_prompt):
    project = make_project(tmp_path / "p", concurrency=1)
    register_answers(fake_llm)
    hyps = tmp_path / "hyps.jsonl"
    write_hyps(hyps)
    assert run(project, "--hypotheses", str(hyps), "--run-id", "mixed", "--max-cost", "0.0015") == 6  # paused
    first = len(rows_judged(project, "mixed"))
    assert 0 < first < len(ITEMS)
    set_base_url(project, via(fake_llm, "proxy"))
    assert run(project, "--run-id", "mixed") == 0
    meta = json.loads((run_dir(project, "mixed") / "run-meta.json").read_text())
    assert [i["endpoints"]["openai"] for i in meta["invocations"]] == [via(fake_llm, "official"),
                                                                       via(fake_llm, "proxy")]
    record = scorecard_of(load_run(run_dir(project, "mixed")))
    card = record.to_dict()
    assert card["verdicts"]["endpoints"] == {f"127.0.0.1:{fake_llm.port}": first,
                                             f"localhost:{fake_llm.port}": len(ITEMS) - first}
    assert card["verdicts"]["invocation_endpoints"] == [via(fake_llm, "official"), via(fake_llm, "proxy")]
    assert any(n.startswith("verdicts come from 2 endpoints") for n in card["comparability_notes"])
    assert card["comparable"] is False



def test_a_run_whose_official_verdicts_come_from_two_official_endpoints_says_so_and_stays_comparable(
        fake_llm, tmp_path, monkeypatch, upstream_prompt):
    monkeypatch.setattr(endpoint_urls, "TEST_OFFICIAL_HOSTS",  # two official hosts: OpenAI and an Azure resource
                        frozenset({f"127.0.0.1:{fake_llm.port}", f"localhost:{fake_llm.port}"}))
    project = make_project(tmp_path / "p", concurrency=1)
    register_answers(fake_llm)
    hyps = tmp_path / "hyps.jsonl"
    write_hyps(hyps)
    assert run(project, "--hypotheses", str(hyps), "--run-id", "both", "--max-cost", "0.0015") == 6  # paused
    assert 0 < len(rows_judged(project, "both")) < len(ITEMS)
    set_base_url(project, via(fake_llm, "proxy"))
    assert run(project, "--run-id", "both") == 0
    record = scorecard_of(load_run(run_dir(project, "both")))
    card = record.to_dict()
    assert card["verdicts"]["official_live"] == len(ITEMS) and len(card["verdicts"]["endpoints"]) == 2
    assert not any("endpoint" in n for n in card["comparability_notes"])
    from lme.report import scorecard_md

    assert "Verdicts come from more than one endpoint" in scorecard_md.render_markdown(record)


# --------------------------------------------------------------------------- finding 9 and build 6: the archive


def test_archive_hits_are_counted_in_metrics_scorecard_and_report(fake_llm, tmp_path, capsys, upstream_prompt):
    project = make_project(tmp_path / "p")
    register_answers(fake_llm)
    hyps = tmp_path / "hyps.jsonl"
    write_hyps(hyps)
    assert run(project, "--hypotheses", str(hyps), "--run-id", "a") == 0
    archive = tmp_path / "v.jsonl"
    assert judge_shim.main(["export-verdicts", "--project", str(project), "--out", str(archive)]) == 0
    assert judge_shim.main(["import-verdicts", str(archive), "--project", str(project)]) == 0
    assert run_main(run_benchmark.main, ["--project", str(project), "--progress", "quiet", "--yes", "--hypotheses",
                                         str(hyps), "--run-id", "b"]) == 0
    metrics = json.loads((run_dir(project, "b") / "metrics.json").read_text())
    assert metrics["verdicts"]["official_archived"] == len(ITEMS)
    assert metrics["usage"]["cache"]["judge_archived"] == len(ITEMS)
    line = f"Verdicts: 0 official judged live, {len(ITEMS)} official from the verdict archive."
    assert line in (run_dir(project, "b") / "scorecard.md").read_text()
    assert f"{len(ITEMS)} of them from the verdict archive" in (run_dir(project, "b") / "scorecard.md").read_text()
    assert line in (run_dir(project, "b") / "report.html").read_text()


def test_export_states_conflicts_and_the_header_is_verified_on_import(fake_llm, tmp_path, capsys,
                                                                     upstream_prompt):
    hyps = tmp_path / "hyps.jsonl"
    write_hyps(hyps)
    exports = []
    for name, judge_fn in (("a", None), ("b", lambda prompt: "no" if ITEMS[0]["question"] in prompt
                                           else fake_llm._default_judge(prompt))):
        project = make_project(tmp_path / name)
        register_answers(fake_llm)
        fake_llm.judge_fn = judge_fn  # b's judge flipped one verdict
        assert run(project, "--hypotheses", str(hyps), "--run-id", "one") == 0
        exports.append(tmp_path / f"{name}.jsonl")
        assert judge_shim.main(["export-verdicts", "--project", str(project), "--out", str(exports[-1])]) == 0
    fake_llm.judge_fn = None
    both = make_project(tmp_path / "both")
    for path in exports:
        assert judge_shim.main(["import-verdicts", str(path), "--project", str(both)]) == 0
    archive = tmp_path / "v.jsonl"
    capsys.readouterr()
    assert judge_shim.main(["export-verdicts", "--project", str(both), "--out", str(archive)]) == 0
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    assert (result["verdicts"], result["prompts"], result["conflicts"]) == (2 * len(ITEMS), len(ITEMS), 1)
    assert "official verdicts of both labels: all are kept" in captured.err
    header, *lines = [json.loads(x) for x in archive.read_text().splitlines()]
    assert header["kind"] == "longmemeval-verdict-archive" and header["count"] == len(lines) == 2 * len(ITEMS)
    assert header["conflicts"][0]["question_id"] == ITEMS[0]["question_id"]
    assert (header["conflicts"][0]["yes"], header["conflicts"][0]["no"]) == (1, 1)
    assert header["upstream_commit"] is None  # the stand-in checkout is not a git clone
    assert all(x["endpoint_host"] == f"127.0.0.1:{fake_llm.port}" and x["request_shape"]["family"] == "upstream"
               for x in lines)
    assert {x["origin"]["file"] for x in lines} == {"a.jsonl", "b.jsonl"}
    assert {x["origin"]["claimed"]["kind"] for x in lines} == {"made"}

    other = make_project(tmp_path / "other")
    head, body = archive.read_text().split("\n", 1)
    (tmp_path / "edited.jsonl").write_text(head + "\n" + body.replace('"label": true', '"label": false', 1))
    assert run_main(judge_shim.main, ["import-verdicts", str(tmp_path / "edited.jsonl"), "--project",
                                      str(other)]) == 2
    assert "do not match the header's sha256" in capsys.readouterr().err
    cut = "\n".join(archive.read_text().splitlines()[:-1]) + "\n"
    (tmp_path / "cut.jsonl").write_text(cut)
    assert run_main(judge_shim.main, ["import-verdicts", str(tmp_path / "cut.jsonl"), "--project", str(other)]) == 2
    assert f"the header says {2 * len(ITEMS)} verdicts, the file holds {2 * len(ITEMS) - 1}" in \
        capsys.readouterr().err
    assert not verdict_archive.archive_path(other).exists()
    assert judge_shim.main(["import-verdicts", str(archive), "--project", str(other)]) == 0
    assert json.loads(capsys.readouterr().out)["verified_header"] is True


def test_an_archive_from_an_older_version_is_read_as_its_authors_claim(fake_llm, tmp_path, capsys,
                                                                      upstream_prompt):
    project = make_project(tmp_path / "p")
    register_answers(fake_llm)
    hyps = tmp_path / "hyps.jsonl"
    write_hyps(hyps)
    assert run(project, "--hypotheses", str(hyps), "--run-id", "a") == 0
    archive = tmp_path / "v.jsonl"
    assert judge_shim.main(["export-verdicts", "--project", str(project), "--out", str(archive)]) == 0
    old = [json.loads(x) for x in archive.read_text().splitlines()[1:]]
    legacy = tmp_path / "legacy.jsonl"  # 1.0: no header, no endpoint_host, no request_shape, no origin
    legacy.write_text("".join(json.dumps({k: v for k, v in x.items() if k not in (
        "endpoint_host", "request_shape", "origin", "verdict_id", "schemaVersion")}) + "\n" for x in old))
    other = make_project(tmp_path / "other")
    capsys.readouterr()
    assert judge_shim.main(["import-verdicts", str(legacy), "--project", str(other)]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["without_endpoint"] == len(ITEMS) and "author's claim" in captured.err
    fake_llm.gone_models[OFFICIAL] = 404
    assert run(other, "--hypotheses", str(hyps), "--run-id", "b") == 0
    rows = rows_of(other, "b")
    assert all(r["judgment"]["source"] == "archive" and r["judgment"]["official"] is True for r in rows)
    assert {r["judgment"]["origin"]["file"] for r in rows} == {"legacy.jsonl"}
    card = scorecard_of(load_run(run_dir(other, "b"))).to_dict()
    assert card["verdicts"]["origins"]["imported"][0]["verdicts"] == len(ITEMS)
    assert card["verdicts"]["origins"]["made_here"]["verdicts"] == 0
    assert not any("prompt is not upstream's" in n for n in card["comparability_notes"])


# --------------------------------------------------------------------------- finding 10: flips name the prompt


def test_a_calibration_over_every_archived_verdict_names_flips_by_question_and_hypothesis(
        fake_llm, tmp_path, capsys, upstream_prompt):
    project = make_project(tmp_path / "p")
    register_answers(fake_llm)
    first, second = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    write_hyps(first)
    write_hyps(second, tag=" (second system)")
    assert run(project, "--hypotheses", str(first), "--run-id", "one") == 0
    assert run(project, "--hypotheses", str(second), "--run-id", "two") == 0
    flip = ITEMS[0]["question"]
    fake_llm.judge_fn = lambda prompt: ("no" if "yes" == fake_llm._default_judge(prompt) else "yes") \
        if flip in prompt else fake_llm._default_judge(prompt)
    assert judge_agreement_cli.main(["--all", "--candidate", "openai:gpt-4o-mini", "--project", str(project),
                                 "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["n"] == 2 * len(ITEMS)  # both runs' verdicts: the largest calibration set
    qid = ITEMS[0]["question_id"]
    assert [f["question_id"] for f in rec["flips"]] == [qid, qid]
    assert len({f["hypothesis_sha256"] for f in rec["flips"]}) == 2  # which hypothesis flipped is named
    assert rec["kappa_ci95"][0] <= rec["kappa"] <= rec["kappa_ci95"][1]
    assert len(rec["verdict_set_sha256"]) == 64 and rec["request_shape"]["family"] == "upstream"
    assert all("kappa" in t for t in rec["per_type"].values())
    text = judge_agreement.render_markdown(rec)
    assert "Flipped prompts (question id, hypothesis sha256)" in text
    assert list(rec["per_source"]) == ["run one", "run two"]  # which system's answers: the run judged officially
    assert sum(e["n"] for e in rec["per_source"].values()) == rec["n"]
    assert "Sensitivity (yes where the official judge said yes)" in text and "| run two |" in text


def test_the_kappa_interval_holds_kappa_and_narrows_with_more_items():
    small = agreement_figures.kappa_interval(9, 1, 1, 9)
    large = agreement_figures.kappa_interval(90, 10, 10, 90)
    kappa = agreement_figures.cohens_kappa(90, 10, 10, 90)
    assert large[0] < kappa < large[1] and large[1] - large[0] < small[1] - small[0]
    simple = 1.96 * ((0.9 * 0.1) / (200 * 0.25)) ** 0.5  # the rough large-sample formula for this balanced table
    assert (large[1] - large[0]) / 2 == pytest.approx(simple, rel=0.1)
    assert agreement_figures.kappa_interval(5, 0, 0, 0) is None and -1 <= small[0] and small[1] <= 1


@pytest.mark.parametrize("recorded,endpoints,source", [
    ({}, {"openai": "http://127.0.0.1:8123/v1"}, "other"),       # an older version's row: its run's host decides
    ({}, {"openai": "https://api.openai.com/v1"}, "official_live"),
    ({}, {}, "official_live"),                                     # no host anywhere: trusted as before hosts were
    ({"endpoint_host": "127.0.0.1:8123"}, {}, "other"),            # the flag never outweighs the recorded host
    ({"endpoint_host": "api.openai.com", "official": False}, {}, "other"),  # nor makes official what its judge did not
    ({"endpoint_host": "api.openai.com", "request_shape": {"family": "reasoning"}}, {}, "other"),
])
def test_a_rows_stored_official_flag_is_recomputed_from_what_the_row_and_its_run_recorded(recorded, endpoints,
                                                                                        source):
    """Issue 38, 3: older versions wrote ``official: true`` for the official model at any host. The one rule
    (``verdict_sources.classify``, which the scorecard, decide and judge_shim use) reads the host the row, else its
    run, recorded."""
    from lme.core.records import Verdict
    from lme.judge import verdict_sources

    verdict = Verdict.from_dict({"label": True, "raw": "yes", "provider": "openai", "model": OFFICIAL,
                                 "requested_model": "gpt-4o", "official": True, **recorded})
    assert verdict_sources.source_of(verdict, endpoints) == source
    assert verdict_sources.is_official(verdict, endpoints) is (source == "official_live")
