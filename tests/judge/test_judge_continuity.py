"""Judge continuity past gpt-4o-2024-08-06: the Azure route for the same snapshot, the verdict archive, the
agreement of a successor judge, and the one-line stop when the official judge answers not_found."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lme.core import endpoint_urls
from lme.judge import agreement_figures
from lme.cli import judge_agreement as judge_agreement_cli
from lme.cli import judge_shim
from lme.cli import run_benchmark
from lme.judge import verdict_archive
from lme.store.run_store import load_run
from lme.core.errors import run_main
from lme.models.providers import Gateway, ProviderSettings
from run_project import SAMPLE, make_project, register_answers, run_dir
from upstream_standin import make_upstream_tree
from factories import scorecard_of
from helpers_data import judge_json

SAMPLE_ITEMS = json.loads(SAMPLE.read_text())
AZURE_KEY = "azure-test-DUMMY-key-0000"


def run(project: Path, *args: str) -> int:
    return run_benchmark.main(["--project", str(project), "--progress", "quiet", "--no-scorecard", "--yes", *args])


def rows_of(project: Path, run_id: str) -> list[dict]:
    path = run_dir(project, run_id) / "item-results.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


def judge_requests(server) -> list[dict]:
    return [q for q in server.requests if (q.get("body") or {}).get("max_tokens") == 10]


def quiet_target(tmp_path: Path) -> str:
    """A target that calls no model and answers the gold: the judge's call is the first request of an item."""
    path = tmp_path / "gold_target.py"
    answers = {it["question"]: str(it["answer"]) for it in SAMPLE_ITEMS}
    path.write_text("from records import Hypothesis\n"
                    f"ANSWERS = {answers!r}\n"
                    "def generate(item, ctx):\n    return Hypothesis(ANSWERS.get(item.question, ''))\n")
    return str(path)


# --------------------------------------------------------------------------- Azure OpenAI


def azure_settings(server) -> dict:
    return {"endpoint": server.root_url, "deployment": "judge-4o", "api_version": "2024-10-21"}


def test_the_azure_route_sends_upstreams_call_to_the_deployment_and_stays_official(fake_llm, tmp_path, monkeypatch,
                                                                                   upstream_prompt):
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", AZURE_KEY)
    llm = Gateway(ProviderSettings(azure=azure_settings(fake_llm), timeout_s=5, max_attempts=2))
    verdict = judge_json("multi-session", "Q?", "A", "A", make_upstream_tree(tmp_path / "up"),
                               provider="azure", model="gpt-4o", question_id="q", llm=llm)
    (sent,) = judge_requests(fake_llm)
    assert sent["path"] == "/openai/deployments/judge-4o/chat/completions"
    assert sent["query"] == "api-version=2024-10-21"
    assert sent["headers"]["api-key"] == AZURE_KEY
    assert {k: sent["body"][k] for k in ("model", "max_tokens", "temperature", "n")} == {
        "model": "gpt-4o-2024-08-06", "max_tokens": 10, "temperature": 0, "n": 1}
    assert verdict["official"] is True and verdict["provider"] == "azure" and verdict["model"] == "gpt-4o-2024-08-06"


def test_a_run_judged_through_azure_is_recorded_as_the_official_snapshot(fake_llm, tmp_path, monkeypatch,
                                                                         upstream_prompt):
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", AZURE_KEY)
    project = make_project(tmp_path / "p", judgeProvider="azure", judgeModel="gpt-4o-2024-08-06",
                           providers={"azure": azure_settings(fake_llm)})
    register_answers(fake_llm)
    assert run(project, "--run-id", "az", "--max", "3") == 0
    meta = json.loads((run_dir(project, "az") / "run-meta.json").read_text())
    assert meta["judge"] == {"provider": "azure", "model": "gpt-4o-2024-08-06", "official": True}
    assert meta["endpoints"]["azure"] == f"{fake_llm.root_url}/openai/deployments/judge-4o/"
    assert all(q["path"].startswith("/openai/deployments/judge-4o/") for q in judge_requests(fake_llm))
    record = scorecard_of(load_run(run_dir(project, "az")))
    card = record.to_dict()
    assert not any(n.startswith("judge is") for n in card["comparability_notes"])  # the official judge, via Azure
    assert card["verdicts"]["official_live"] == 3 and card["verdicts"]["endpoints"] == {f"127.0.0.1:{fake_llm.port}": 3}
    monkeypatch.setattr(endpoint_urls, "TEST_OFFICIAL_HOSTS", frozenset())  # as a user's process sees a fake host
    notes = scorecard_of(load_run(run_dir(project, "az"))).to_dict()["comparability_notes"]
    assert any("not the official judge's (api.openai.com or <resource>.openai.azure.com)" in n for n in notes)


def test_an_azure_judge_without_a_deployment_is_one_line_and_nothing_written(tmp_path, capsys):
    project = make_project(tmp_path / "p", judgeProvider="azure", providers={"azure": {"endpoint": "https://x"}})
    assert run_main(run_benchmark.main, ["--project", str(project), "--progress", "quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "provider azure needs deployment, api_version" in err[0]
    assert not (project / ".longmemeval-benchmarks" / "runs").exists()


# --------------------------------------------------------------------------- the verdict archive


def test_exported_verdicts_are_used_instead_of_a_call_elsewhere_and_stay_official(fake_llm, tmp_path, capsys,
                                                                                 upstream_prompt):
    first = make_project(tmp_path / "first", concurrency=2)
    register_answers(fake_llm)
    target = quiet_target(tmp_path)
    assert run(first, "--run-id", "base", "--target", target) == 0
    official = {r["question_id"]: r["judgment"] for r in rows_of(first, "base")}
    assert all(j["official"] for j in official.values())
    archive = tmp_path / "verdicts.jsonl"
    assert judge_shim.main(["export-verdicts", "--project", str(first), "--out", str(archive)]) == 0
    assert json.loads(capsys.readouterr().out)["verdicts"] == len(SAMPLE_ITEMS)

    second = make_project(tmp_path / "second", concurrency=2)
    assert judge_shim.main(["import-verdicts", str(archive), "--project", str(second)]) == 0
    assert json.loads(capsys.readouterr().out)["added"] == len(SAMPLE_ITEMS)
    before = len(judge_requests(fake_llm))
    fake_llm.fail_next("404", count=100)  # the official judge is gone: any call would fail
    assert run(second, "--run-id", "again", "--target", target) == 0
    assert len(judge_requests(fake_llm)) == before  # not one judge call
    for r in rows_of(second, "again"):
        assert r["judgment"]["source"] == "archive" and r["judgment"]["official"] is True
        assert r["judgment"]["label"] == official[r["question_id"]]["label"]
    fake_llm.fail_next("404", count=0)


def test_import_refuses_a_line_that_is_not_an_official_verdict_and_writes_nothing(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    good = {"prompt_sha256": "a" * 64, "model": "gpt-4o-2024-08-06", "provider": "openai", "official": True,
            "label": True, "raw": "yes"}
    bad.write_text(json.dumps(good) + "\n" + json.dumps({**good, "model": "gpt-4o-mini"}) + "\n")
    assert run_main(judge_shim.main, ["import-verdicts", str(bad), "--project", str(tmp_path)]) == 2
    assert f"{bad}:2: not an official verdict" in capsys.readouterr().err
    assert not verdict_archive.archive_path(tmp_path).exists()


def test_import_keeps_both_labels_of_a_prompt_as_a_conflict_scored_by_the_majority(tmp_path):
    line = {"prompt_sha256": "b" * 64, "model": "gpt-4o-2024-08-06", "provider": "openai", "official": True,
            "label": True, "raw": "yes"}
    files = [tmp_path / f"{i}.jsonl" for i in range(3)]
    files[0].write_text(json.dumps(line) + "\n")
    files[1].write_text(json.dumps({**line, "label": False, "raw": "no"}) + "\n")
    files[2].write_text(json.dumps({**line, "raw": "Yes.", "source": "another team"}) + "\n")
    assert verdict_archive.import_file(tmp_path, files[0])["added"] == 1
    result = verdict_archive.import_file(tmp_path, files[1])
    assert (result["added"], result["already_present"], result["new_conflicts"]) == (1, 0, 1)
    archive = verdict_archive.VerdictArchive(verdict_archive.archive_path(tmp_path))
    tie = archive.lookup("b" * 64, "gpt-4o-2024-08-06")
    assert tie["label"] is False and tie["conflict"] == {"yes": 1, "no": 1, "rule": verdict_archive.CONFLICT_RULE}
    assert verdict_archive.import_file(tmp_path, files[0])["already_present"] == 1  # the same act of judging
    verdict_archive.import_file(tmp_path, files[2])
    majority = verdict_archive.for_project(tmp_path).lookup("b" * 64, "gpt-4o-2024-08-06")
    assert majority["label"] is True and majority["conflict"]["yes"] == 2 and majority["conflict"]["no"] == 1
    assert majority["origin"] == {**majority["origin"], "kind": "imported", "file": "0.jsonl", "format": "archive"}


# --------------------------------------------------------------------------- the official judge is gone


def test_not_found_from_the_official_judge_stops_the_run_with_one_line_and_no_junk_rows(fake_llm, tmp_path, capsys):
    project = make_project(tmp_path / "p", concurrency=1)
    fake_llm.fail_next("404")
    code = run_main(run_benchmark.main, ["--project", str(project), "--progress", "quiet", "--yes", "--run-id", "gone",
                                         "--target", quiet_target(tmp_path)])
    assert code == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(err) == 1
    for named in ("import-verdicts", "Azure OpenAI", "judge_agreement.py", "gpt-4o-2024-08-06"):
        assert named in err[0]
    assert len(judge_requests(fake_llm)) == 1  # stopped at the first judge call
    assert rows_of(project, "gone") == []
    marks = run_dir(project, "gone") / "questions_completed.jsonl"
    assert not marks.exists() or marks.read_text() == ""
    meta = json.loads((run_dir(project, "gone") / "run-meta.json").read_text())
    assert meta["status"] == "failed" and meta["counts"]["completed"] == 0


def test_hyp_file_mode_names_the_ways_on_when_the_official_judge_is_gone(fake_llm, tmp_path, capsys):
    hyp = tmp_path / "hyps.jsonl"
    hyp.write_text(json.dumps({"question_id": SAMPLE_ITEMS[0]["question_id"], "hypothesis": "x"}) + "\n")
    fake_llm.fail_next("404")
    code = run_main(judge_shim.main, ["--longmemeval-root", str(make_upstream_tree(tmp_path / "up")),
                                      "--hyp-file", str(hyp), "--ref-file", str(SAMPLE), "--project", str(tmp_path)])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert "import-verdicts" in err and "Azure" in err and "judge_agreement.py" in err
    assert not Path(f"{hyp}.eval-results-gpt-4o").exists()


# --------------------------------------------------------------------------- a successor judge


def test_agreement_of_a_candidate_judge_and_the_label_of_a_run_it_judged(fake_llm, tmp_path, capsys,
                                                                         upstream_prompt):
    project = make_project(tmp_path / "p", concurrency=2)
    register_answers(fake_llm, correct_share=0.5)
    assert run(project, "--run-id", "base") == 0
    official = {r["question_id"]: r["judgment"]["label"] for r in rows_of(project, "base")}
    flipped = sorted(official)[:2]
    questions = {it["question_id"]: it["question"] for it in SAMPLE_ITEMS}
    default = fake_llm._default_judge

    def candidate(prompt: str) -> str:
        verdict = default(prompt)
        if any(questions[q] in prompt for q in flipped):
            return "no" if verdict == "yes" else "yes"
        return verdict

    fake_llm.judge_fn = candidate
    assert judge_agreement_cli.main(["--run-id", "base", "--candidate", "openai:gpt-4o-mini", "--project", str(project),
                                 "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    n = len(official)
    assert (rec["n"], rec["agree"]) == (n, n - 2) and rec["agreement"] == pytest.approx((n - 2) / n)
    assert sorted(f["question_id"] for f in rec["flips"]) == flipped
    c = rec["confusion"]
    assert sum(c.values()) == n
    a, b, cc, d = (c["official_true_candidate_true"], c["official_true_candidate_false"],
                   c["official_false_candidate_true"], c["official_false_candidate_false"])
    pe = ((a + b) / n) * ((a + cc) / n) + ((cc + d) / n) * ((b + d) / n)
    assert rec["kappa"] == pytest.approx(((a + d) / n - pe) / (1 - pe))
    assert sum(t["to_true"] + t["to_false"] for t in rec["per_type"].values()) == 2
    assert rec["candidate_model"] == "gpt-4o-mini-2024-07-18"  # upstream's alias, pinned like gpt-4o's
    assert rec["returned_models"] == ["gpt-4o-mini-2024-07-18"]

    assert run(project, "--run-id", "successor", "--judge-model", "openai:gpt-4o-mini") == 0
    record = scorecard_of(load_run(run_dir(project, "successor")))
    card = record.to_dict()
    assert card["judge"]["official"] is False
    judge_note = next(n for n in card["comparability_notes"] if n.startswith("judge is"))
    assert "a successor judge: agreement with the official gpt-4o-2024-08-06 verdicts" in judge_note
    assert card["judge_agreement"]["n"] == n and card["judge_agreement"]["flips"] == 2


def test_a_run_with_an_unmeasured_judge_says_its_agreement_was_never_measured(tmp_path):
    from factories import SSU, official_row, write_run

    done = write_run(tmp_path / "r", [("k1", SSU)], [official_row("k1", SSU, True, judge_model="claude-x",
                                                          judge_provider="anthropic", official=False)],
                     judge={"provider": "anthropic", "model": "claude-x", "official": False})
    notes = scorecard_of(load_run(done)).to_dict()["comparability_notes"]
    assert any("agreement with the official judge was never measured" in n for n in notes)


def test_kappa_is_undefined_when_every_label_is_the_same():
    assert agreement_figures.cohens_kappa(5, 0, 0, 0) is None
    assert agreement_figures.cohens_kappa(4, 1, 1, 4) == pytest.approx(0.6)


def test_runs_judged_by_the_snapshot_through_openai_and_through_azure_compare_like_for_like(tmp_path):
    from lme.score import run_comparison
    from factories import SSU, official_row, write_run

    items = [("k1", SSU), ("k2", SSU)]
    a = write_run(tmp_path / "a", items, [official_row("k1", SSU, True), official_row("k2", SSU, False)])
    b = write_run(tmp_path / "b", items, [official_row("k1", SSU, True, judge_provider="azure"),
                                          official_row("k2", SSU, True, judge_provider="azure")],
                  judge={"provider": "azure", "model": "gpt-4o-2024-08-06", "official": True})
    res_record = run_comparison.compare(a, b)
    res = res_record.to_dict()
    assert res["forced"] is False and res["fixes"] == 1
