"""The day the official judge is gone: archived verdicts still score (no judge call, no judge probe), new hypotheses
go to a calibrated successor or stay pending with one line, reasoning-model successors are called with their own
request shape, a response naming another model is refused, 404 and 410 give the same stop, the countdown, and an
empty reader reply is an answer. Against the fake server (tests/fake_llm_server.py), real SDKs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lme.cli import run_benchmark
from lme.core.errors import run_main
from lme.judge import agreement as judge_agreement
from lme.cli import judge_shim
from lme.cli import judge_agreement as judge_agreement_cli
from lme.run import preflight
from lme.cli import preflight as preflight_cli
from lme.store.run_store import load_run
from run_project import SAMPLE, expire_recent_probes, make_project, register_answers, run_dir
from upstream_standin import standin_print_qa_metrics
from factories import scorecard_of

ITEMS = json.loads(SAMPLE.read_text())
OFFICIAL = "gpt-4o-2024-08-06"


pytestmark = pytest.mark.usefixtures("fresh_probes")


def write_hyps(path: Path, changed: int = 0) -> dict[str, str]:
    """Upstream's hypotheses file over the sample: the gold answer for even items, "I don't know." for the rest;
    the last ``changed`` items get an edited answer."""
    hyps = {}
    for i, it in enumerate(ITEMS):
        hyps[it["question_id"]] = f"It is {it['answer']}." if i % 2 == 0 else "I don't know."
    for it in ITEMS[len(ITEMS) - changed:]:
        hyps[it["question_id"]] = f"Edited: it is {it['answer']}, I believe."
    path.write_text("".join(json.dumps({"question_id": q, "hypothesis": h}) + "\n" for q, h in hyps.items()))
    return hyps


def run(project: Path, *args: str, scorecard: bool = False) -> int:
    extra = [] if scorecard else ["--no-scorecard"]
    return run_main(run_benchmark.main, ["--project", str(project), "--progress", "quiet", "--yes", *extra, *args])


def rows_of(project: Path, run_id: str) -> list[dict]:
    path = run_dir(project, run_id) / "item-results.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


def judge_calls(server, model: str | None = None) -> list[dict]:
    calls = [q for q in server.requests
             if (q.get("body") or {}).get("max_tokens") == 10 or "max_completion_tokens" in (q.get("body") or {})]
    return [q for q in calls if model is None or q["body"]["model"] == model]


def error_lines(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]


def archived_project(tmp_path: Path, fake_llm, capsys) -> tuple[Path, Path]:
    """A project whose hypotheses file was judged officially and archived (export-verdicts, import-verdicts)."""
    project = make_project(tmp_path / "p", concurrency=4)
    register_answers(fake_llm)
    hyps = tmp_path / "hyps.jsonl"
    write_hyps(hyps)
    assert run(project, "--hypotheses", str(hyps), "--run-id", "official") == 0
    archive = tmp_path / "verdicts.jsonl"
    assert judge_shim.main(["export-verdicts", "--project", str(project), "--out", str(archive)]) == 0
    assert judge_shim.main(["import-verdicts", str(archive), "--project", str(project)]) == 0
    expire_recent_probes(project)  # the day after
    capsys.readouterr()
    fake_llm.reset()
    return project, hyps


# --------------------------------------------------------------------------- findings 1 and 2: the archive scores


def test_every_hypothesis_archived_scores_with_the_judge_gone_no_judge_call_no_judge_probe(
        fake_llm, tmp_path, capsys, upstream_prompt):
    project, hyps = archived_project(tmp_path, fake_llm, capsys)
    fake_llm.gone_models[OFFICIAL] = 404
    assert run(project, "--hypotheses", str(hyps), "--run-id", "after") == 0
    assert judge_calls(fake_llm) == [] and fake_llm.probes == [] and fake_llm.model_lookups == []
    assert "no judge call, no judge probe" in capsys.readouterr().err
    rows = rows_of(project, "after")
    assert len(rows) == len(ITEMS)
    assert all(r["judgment"]["source"] == "archive" and r["judgment"]["official"] for r in rows)
    record = scorecard_of(load_run(run_dir(project, "after")))
    card = record.to_dict()
    assert (card["verdicts"]["official_archived"], card["verdicts"]["official_live"]) == (len(ITEMS), 0)


def test_edited_hypotheses_with_the_judge_gone_score_the_archived_rest_and_stay_pending_with_one_line(
        fake_llm, tmp_path, capsys, upstream_prompt):
    project, hyps = archived_project(tmp_path, fake_llm, capsys)
    edited = write_hyps(hyps, changed=3)
    fake_llm.gone_models[OFFICIAL] = 404
    assert run(project, "--hypotheses", str(hyps), "--run-id", "after") == 2
    (line,) = error_lines(capsys)
    for named in ("import-verdicts", "Azure OpenAI", "--successor", "judge_agreement.py", "stay pending"):
        assert named in line
    rows = rows_of(project, "after")
    assert len(rows) == len(ITEMS) - 3  # every archived one scored: not stopped at the first edited one
    assert not {r["question_id"] for r in rows} & set(list(edited)[-3:])
    assert judge_calls(fake_llm) == []  # the probe saw 404: the official judge was not called again
    meta = json.loads((run_dir(project, "after") / "run-meta.json").read_text())
    assert meta["counts"]["pending"] == 3 and meta["status"] == "failed"

    # the same run, resumed with a successor: only the 3 edited ones are judged, by it, labelled
    assert run(project, "--run-id", "after", "--successor", "openai:o3-mini") == 0
    successor = [r for r in rows_of(project, "after") if r["judgment"].get("successor")]
    assert sorted(r["question_id"] for r in successor) == sorted(list(edited)[-3:])
    assert all(r["judgment"]["official"] is False and r["judgment"]["model"] == "o3-mini-2025-01-31"
               for r in successor)
    assert len(judge_calls(fake_llm, "o3-mini")) == 3 and judge_calls(fake_llm, OFFICIAL) == []
    record = scorecard_of(load_run(run_dir(project, "after")))
    card = record.to_dict()
    assert (card["verdicts"]["official_archived"], card["verdicts"]["successor"]) == (len(ITEMS) - 3, 3)
    assert card["verdicts"]["successors"][0]["calibration"] is None  # never measured: says so
    assert any("successor openai:o3-mini's (uncalibrated:" in n for n in card["comparability_notes"])


# --------------------------------------------------------------------------- finding 3: reasoning models


def test_a_reasoning_model_judge_and_candidate_are_called_with_max_completion_tokens_and_no_temperature(
        fake_llm, tmp_path, capsys, upstream_prompt):
    project = make_project(tmp_path / "p", concurrency=4, judgeReasoningEffort="low")
    register_answers(fake_llm)
    hyps = tmp_path / "hyps.jsonl"
    write_hyps(hyps)
    assert run(project, "--hypotheses", str(hyps), "--run-id", "official") == 0
    assert run(project, "--hypotheses", str(hyps), "--run-id", "o3", "--judge-model", "openai:o3-mini") == 0
    bodies = [q["body"] for q in judge_calls(fake_llm, "o3-mini")]
    assert len(bodies) == len(ITEMS)
    assert all("max_tokens" not in b and "temperature" not in b and "n" not in b for b in bodies)
    assert all(b["max_completion_tokens"] >= 1000 and b["reasoning_effort"] == "low" for b in bodies)
    row = rows_of(project, "o3")[0]
    assert row["judgment"]["request_shape"] == {"family": "reasoning", "max_completion_tokens": 2048,
                                                "reasoning_effort": "low"}
    assert judge_agreement_cli.main(["--run-id", "official", "--candidate", "openai:o3-mini", "--project",
                                 str(project), "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["n"] == len(ITEMS) and rec["errors"] == [] and rec["request_shape"]["family"] == "reasoning"
    assert rec["returned_models"] == ["o3-mini-2025-01-31"]


# --------------------------------------------------------------------------- finding 7: a silent model swap


def test_a_response_naming_another_model_stops_the_run_loudly_and_is_not_cached(fake_llm, tmp_path, capsys,
                                                                              upstream_prompt):
    project = make_project(tmp_path / "p", concurrency=1)
    register_answers(fake_llm)
    hyps = tmp_path / "hyps.jsonl"
    write_hyps(hyps)
    fake_llm.model_swap[OFFICIAL] = "gpt-5.1"  # an Azure auto-upgrade, an alias moved on
    assert run(project, "--hypotheses", str(hyps), "--run-id", "swap") == 2
    (line,) = error_lines(capsys)
    assert "answered as 'gpt-5.1'" in line and "stay pending" in line
    assert rows_of(project, "swap") == []  # stopped at the first mismatching response, nothing recorded
    assert len(judge_calls(fake_llm)) <= 2  # the intake stopped there (one more item was already queued)
    meta = json.loads((run_dir(project, "swap") / "run-meta.json").read_text())
    assert meta["status"] == "failed" and meta["counts"]["pending"] == len(ITEMS)

    fake_llm.model_swap.clear()  # the deployment is pinned again: the resume asks again (nothing was cached)
    assert run(project, "--run-id", "swap") == 0
    assert all(r["judgment"]["model"] == OFFICIAL and r["judgment"]["official"] for r in rows_of(project, "swap"))


def test_file_mode_refuses_a_swapped_model_and_writes_only_what_upstreams_tools_read(fake_llm, tmp_path, capsys,
                                                                                  upstream_prompt):
    project = make_project(tmp_path / "p")
    hyps = tmp_path / "hyps.jsonl"
    write_hyps(hyps)
    out = Path(f"{hyps}.eval-results-gpt-4o")
    root = str(project / "upstream" / "LongMemEval")
    args = ["--longmemeval-root", root, "--hyp-file", str(hyps), "--ref-file", str(SAMPLE), "--project",
            str(project)]
    fake_llm.model_swap[OFFICIAL] = "gpt-4o-2024-11-20"
    assert run_main(judge_shim.main, args) == 2
    (line,) = error_lines(capsys)
    assert "answered as 'gpt-4o-2024-11-20'" in line and "nothing was written" in line
    assert not out.exists()
    fake_llm.model_swap.clear()
    assert run_main(judge_shim.main, args) == 0
    assert standin_print_qa_metrics(out, SAMPLE)["overall"] == pytest.approx(0.5)  # upstream's tools read it

    # with the judge gone and a successor named: official (archived) lines in the upstream file, the successor's
    # beside it, never mixed in
    archive = tmp_path / "verdicts.jsonl"
    assert run(project, "--hypotheses", str(hyps), "--run-id", "official") == 0
    assert judge_shim.main(["export-verdicts", "--project", str(project), "--out", str(archive)]) == 0
    assert judge_shim.main(["import-verdicts", str(archive), "--project", str(project)]) == 0
    write_hyps(hyps, changed=2)
    fake_llm.gone_models[OFFICIAL] = 410
    capsys.readouterr()
    assert run_main(judge_shim.main, [*args, "--successor", "openai:o3-mini"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["verdicts"] == {"official_live": 0, "official_archived": len(ITEMS) - 2, "successor": 2,
                                  "other": 0}
    assert result["calibration"] == "uncalibrated"
    standin_print_qa_metrics(out, SAMPLE)  # no AssertionError: every line names the official snapshot
    successor_lines = [json.loads(x) for x in Path(result["successor_out"]).read_text().splitlines()]
    assert [x["successor_label"]["model"] for x in successor_lines] == ["o3-mini-2025-01-31"] * 2
    assert all("autoeval_label" not in x for x in successor_lines)


# --------------------------------------------------------------------------- finding 8: 404 and 410


@pytest.mark.parametrize("status", [404, 410])
def test_404_and_410_from_the_official_judge_give_the_same_stop_at_the_probe(fake_llm, tmp_path, capsys, status):
    project = make_project(tmp_path / "p")
    fake_llm.gone_models[OFFICIAL] = status
    assert run(project, "--max", "2") == 2
    (line,) = error_lines(capsys)
    assert f"is gone (HTTP {status})" in line and "nothing was started" in line
    for named in ("import-verdicts", "Azure OpenAI", "--successor"):
        assert named in line
    assert "check the model name" not in line
    assert not (project / ".longmemeval-benchmarks" / "runs").exists()


@pytest.mark.parametrize("fault", ["404", "410"])
def test_404_and_410_mid_run_stop_with_the_same_line_and_leave_items_pending(fake_llm, tmp_path, capsys, fault):
    project = make_project(tmp_path / "p", concurrency=1)
    register_answers(fake_llm)
    hyps = tmp_path / "hyps.jsonl"
    write_hyps(hyps)
    fake_llm.fail_next(fault)  # the probe passed; the first judge call gets it
    assert run(project, "--hypotheses", str(hyps), "--run-id", "mid") == 2
    (line,) = error_lines(capsys)
    for named in ("import-verdicts", "Azure OpenAI", "--successor", "stay pending"):
        assert named in line
    assert "bad_request" not in line and "resume to retry" not in line
    rows = rows_of(project, "mid")
    assert all(r["status"] == "judged" for r in rows)  # no junk error rows
    meta = json.loads((run_dir(project, "mid") / "run-meta.json").read_text())
    assert meta["counts"]["pending"] == len(ITEMS) - len(rows) >= 1


def test_a_404_that_says_nothing_of_the_model_mid_run_is_an_items_error_not_a_retirement(fake_llm, tmp_path, capsys):
    """A proxy answering one judge call with a bare 404 (no ``model_not_found``): that item's error row, and the run
    goes on; no retirement advice (issue 36, finding 9)."""
    project = make_project(tmp_path / "p", concurrency=1, maxAttempts=1, errorThreshold=5)
    register_answers(fake_llm)
    hyps = tmp_path / "hyps.jsonl"
    write_hyps(hyps)
    fake_llm.fail_next("404_plain")  # the probe passed; the first judge call gets it
    assert run(project, "--hypotheses", str(hyps), "--run-id", "mid") == 0  # one error row, under errorThreshold
    err = capsys.readouterr().err
    assert "--successor" not in err and "import-verdicts" not in err
    rows = rows_of(project, "mid")
    errors = [r for r in rows if r["status"] == "error"]
    assert len(rows) == len(ITEMS) and len(errors) == 1
    assert errors[0]["error"]["kind"] == "not_found" and "gone" not in errors[0]["error"]


# --------------------------------------------------------------------------- build 4: the countdown


def test_the_countdown_is_read_from_the_model_list_at_the_probe_and_in_preflight(fake_llm, tmp_path, capsys):
    project = make_project(tmp_path / "p")
    register_answers(fake_llm)
    fake_llm.model_entries[OFFICIAL] = {"shutdown_date": "2027-01-14"}
    assert run(project, "--max", "1") == 0
    err = capsys.readouterr().err
    assert f"the official judge {OFFICIAL} is retired on 2027-01-14 (in " in err or "was retired on 2027-01-14" in err
    assert "export-verdicts" in err and "archive-status" in err
    assert [q["path"] for q in fake_llm.model_lookups] == [f"/v1/models/{OFFICIAL}"]
    assert preflight_cli.main(["--project", str(project)]) == 0
    out = capsys.readouterr().out
    assert any(line.startswith("WARN the official judge") and "2027-01-14" in line for line in out.splitlines())


def test_the_model_list_read_and_the_judge_probe_cost_one_round_trip_not_two(fake_llm, tmp_path):
    """Both start-up requests for the official judge go at once: the second does not wait for the first's reply."""
    project = make_project(tmp_path / "p")
    register_answers(fake_llm)
    fake_llm.latency = 0.4
    assert run(project, "--max", "1") == 0
    (lookup,) = fake_llm.model_lookups
    judge_probes = [p for p in fake_llm.probes if p["body"]["model"].startswith("gpt-4o")]
    assert judge_probes and all(abs(p["t"] - lookup["t"]) < 0.3 for p in judge_probes)


def test_archive_status_counts_what_has_no_official_verdict_and_prices_it(fake_llm, tmp_path, capsys,
                                                                        upstream_prompt):
    project, hyps = archived_project(tmp_path, fake_llm, capsys)
    write_hyps(hyps, changed=4)
    assert run(project, "--hypotheses", str(hyps), "--run-id", "edited") == 0  # 4 judged live, officially
    assert judge_shim.main(["archive-status", "--project", str(project), "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert (status["archived"], status["official_in_runs_only"], status["without_official_verdict"]) == (
        len(ITEMS) + 4, 0, 0)  # the run archived the 4 it judged as it judged them: nothing to remember
    assert (status["archived_made_here"], status["archived_imported"]) == (len(ITEMS) + 4, 0)
    write_hyps(hyps, changed=6)  # 2 more edited, and the judge gone: a successor judges what the archive lacks
    fake_llm.gone_models[OFFICIAL] = 404
    assert run(project, "--hypotheses", str(hyps), "--run-id", "more", "--successor", "openai:gpt-4o-mini") == 0
    assert judge_shim.main(["archive-status", "--project", str(project), "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert (status["archived"], status["official_in_runs_only"], status["without_official_verdict"]) == (
        len(ITEMS) + 4, 0, 2)  # a successor's verdict is not an official one
    assert 0 < status["cost_batch_usd"] < status["cost_sync_usd"]
    assert judge_shim.main(["archive-status", "--project", str(project)]) == 0
    text = capsys.readouterr().out
    assert f"{len(ITEMS) + 4} archived ({len(ITEMS) + 4} judged here, 0 imported from files)" in text
    assert "2 without an official verdict" in text
    assert "through the Batch API" in text


# --------------------------------------------------------------------------- finding 11: an empty answer


def test_an_empty_reader_reply_after_its_retries_is_the_answer_and_is_judged(fake_llm, tmp_path):
    project = make_project(tmp_path / "p", concurrency=1, maxAttempts=2)
    register_answers(fake_llm)
    silent = ITEMS[0]["question"]
    fake_llm.answer_fn = lambda body: "" if silent in json.dumps(body) else None
    assert run(project, "--max", "2", "--run-id", "e", scorecard=True) == 0
    rows = {r["question_id"]: r for r in rows_of(project, "e")}
    row = rows[ITEMS[0]["question_id"]]
    assert row["status"] == "judged" and row["hypothesis"] == "" and row["judgment"]["label"] is False
    assert row["calls"][0]["stop_reason"] == "stop" and row["calls"][0]["attempts"] >= 2  # retried, then an answer
    judged_empty = [q for q in judge_calls(fake_llm) if q["body"]["messages"][0]["content"].endswith("R=")]
    assert len(judged_empty) == 1  # upstream judges "" like any answer
    metrics = json.loads((run_dir(project, "e") / "metrics.json").read_text())
    assert metrics["empty_hypotheses"] == {"n": 1, "judged": 1, "finish_reasons": {"stop": 1}}
    assert "Empty answers: 1" in (run_dir(project, "e") / "scorecard.md").read_text()


# --------------------------------------------------------------------------- end to end: the day after


def five_hundred_items() -> list[dict]:
    """500 synthetic items in LongMemEval's schema, the official set's type counts, 30 abstention ids."""
    from helpers_data import make_item

    counts = {"single-session-user": 70, "single-session-assistant": 56, "single-session-preference": 30,
              "multi-session": 133, "temporal-reasoning": 133, "knowledge-update": 78}
    items, n = [], 0
    for qtype, count in counts.items():
        for k in range(count):
            qid = f"e{n:03d}" + ("_abs" if k < 5 else "")
            item = make_item(qid, qtype, answer=f"shade{n}")
            item["question"] = f"Which shade did I pick, number {n}?"
            items.append(item)
            n += 1
    return items


def test_the_day_after_one_command_scores_490_archived_and_10_by_a_calibrated_reasoning_successor(
        fake_llm, tmp_path, capsys, upstream_prompt):
    from helpers_data import write_dataset

    items = five_hundred_items()
    data = write_dataset(tmp_path / "longmemeval_s_synthetic.json", items)
    project = make_project(tmp_path / "p", dataset=data, concurrency=16)
    hyps = tmp_path / "hyps.jsonl"

    def write(changed: int = 0) -> None:
        lines = []
        for i, it in enumerate(items):
            text = f"It is {it['answer']}." if i % 2 == 0 else "I don't know."
            if i >= len(items) - changed:
                text = f"On reflection, {it['answer']}."
            lines.append(json.dumps({"question_id": it["question_id"], "hypothesis": text}))
        hyps.write_text("\n".join(lines) + "\n")

    write()
    assert run(project, "--hypotheses", str(hyps), "--run-id", "official") == 0  # 500 official verdicts
    archive = tmp_path / "verdicts.jsonl"
    assert judge_shim.main(["export-verdicts", "--project", str(project), "--out", str(archive)]) == 0
    assert judge_shim.main(["import-verdicts", str(archive), "--project", str(project)]) == 0
    flipped = {it["question"] for it in items[:7]}
    fake_llm.judge_fn = lambda prompt: ("no" if fake_llm._default_judge(prompt) == "yes" else "yes") \
        if any(q in prompt for q in flipped) else fake_llm._default_judge(prompt)
    assert judge_agreement_cli.main(["--all", "--candidate", "openai:o3-mini", "--project", str(project)]) == 0
    capsys.readouterr()

    fake_llm.gone_models[OFFICIAL] = 404  # the official judge is gone, everywhere
    expire_recent_probes(project)  # the day after
    fake_llm.reset()
    write(changed=10)
    assert run(project, "--hypotheses", str(hyps), "--run-id", "after", "--successor", "openai:o3-mini",
               scorecard=True) == 0
    assert judge_calls(fake_llm, OFFICIAL) == []  # its one probe (free: a 404 model_not_found) said it is gone
    assert len([p for p in fake_llm.probes if p["body"]["model"] == OFFICIAL]) == 1
    assert len(judge_calls(fake_llm, "o3-mini")) == 10
    work = run_dir(project, "after")
    metrics = json.loads((work / "metrics.json").read_text())
    v = metrics["verdicts"]
    assert (v["official_live"], v["official_archived"], v["successor"], v["other"]) == (0, 490, 10, 0)
    (successor,) = v["successors"]
    calibration = successor["calibration"]
    assert successor["judge"] == "openai:o3-mini" and calibration["n"] == 500 and calibration["flips"] == 7
    assert calibration["request_shape"]["family"] == "reasoning" and calibration["kappa_ci95"]
    assert metrics["comparable"] is False and metrics["judge"]["official"] is False
    assert any("are the successor openai:o3-mini's (calibrated:" in n for n in metrics["comparability_notes"])
    line = "Verdicts: 0 official judged live, 490 official from the verdict archive, 10 by the successor openai:o3-mini"
    scorecard_text = (work / "scorecard.md").read_text()
    report = (work / "report.html").read_text()
    for text in (scorecard_text, report):
        assert line in text and "calibrated: agreement with the official gpt-4o-2024-08-06 verdicts" in text
        assert "not official" in text
    assert "(not the official judge)" in scorecard_text and "official=" not in scorecard_text


def test_with_the_cost_gate_the_judge_gone_at_the_probe_still_comes_first(fake_llm, tmp_path, capsys):
    """The gate's estimate is made while the probe is in flight; what the probe found is acted on first: the stop
    (exit 2, no cost block), or with a successor the gate asked on the settings the probe returned (exit 5)."""
    project = make_project(tmp_path / "p", confirmCostUsd=0)
    fake_llm.gone_models[OFFICIAL] = 404
    gated = ["--project", str(project), "--progress", "quiet", "--no-scorecard", "--max", "2"]  # no --yes
    assert run_main(run_benchmark.main, gated) == 2
    out, err = capsys.readouterr()
    assert "cost gate" not in out and "is gone (HTTP 404)" in err and "nothing was started" in err
    assert run_main(run_benchmark.main, [*gated, "--successor", "openai:o3-mini"]) == 5
    out, err = capsys.readouterr()
    assert out.startswith("cost gate: this run needs confirmation") and "judged by" in err
    assert judge_calls(fake_llm) == [] and not (project / ".longmemeval-benchmarks" / "runs").exists()
