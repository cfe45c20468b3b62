"""The run driver end to end: real SDKs against the fake server, resume, failure policy, cache, guards."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from lme.core import command_names
from lme.core.errors import UserError
from lme.cli import run_benchmark
from lme.core.errors import run_main
from lme.run import cost_gate
from run_project import SAMPLE, judged_rows, make_project, register_answers, run_dir
from lme.store import run_rows
from factories import result_row, write_run

N_SAMPLE = len(json.loads(SAMPLE.read_text()))


def run(project, *args):
    return run_benchmark.main(["--project", str(project), "--progress", "quiet", "--no-scorecard", *args])


def meta(project, run_id):
    return json.loads((run_dir(project, run_id) / "run-meta.json").read_text())


def completed(project, run_id):
    path = run_dir(project, run_id) / "questions_completed.jsonl"
    return [json.loads(line)["question_id"] for line in path.read_text().splitlines() if line.strip()]


def test_offline_run_on_the_sample_needs_no_network_or_keys(tmp_path):
    project = make_project(tmp_path / "p")
    assert run(project, "--offline", "--run-id", "off") == 0
    rows = judged_rows(project, "off")
    assert len(rows) == N_SAMPLE
    assert {r["judgment"]["provider"] for r in rows} == {"offline"}
    assert not any(r["judgment"]["official"] for r in rows)
    m = meta(project, "off")
    assert m["status"] == "completed" and m["judge"]["official"] is False
    assert m["duration_seconds"] >= 0 and m["counts"]["completed"] == N_SAMPLE


def test_fake_server_run_labels_follow_the_answer_policy(tmp_path, fake_llm):
    project = make_project(tmp_path / "p")
    gold = register_answers(fake_llm, correct_share=0.5)
    assert run(project, "--run-id", "r1") == 0
    rows = judged_rows(project, "r1")
    assert sorted(r["question_id"] for r in rows) == sorted(gold)
    for r in rows:
        answered_gold = str(gold[r["question_id"]]).lower() in r["hypothesis"].lower()
        assert r["judgment"]["label"] == answered_gold, r["question_id"]
        assert r["judgment"]["model"] == "gpt-4o-2024-08-06"
        assert r["judgment"]["official"] is False  # a stand-in template is never the official judge
    labels = Counter(r["judgment"]["label"] for r in rows)
    assert labels[True] and labels[False]
    assert meta(project, "r1")["judge"]["official"] is False  # openai gpt-4o, but not upstream's prompt
    assert meta(project, "r1")["judge"]["model"] == "gpt-4o-2024-08-06"  # the alias is recorded as its snapshot
    judge_calls = [q for q in fake_llm.requests if q["body"].get("max_tokens") == 10]
    assert len(judge_calls) == N_SAMPLE
    assert all(q["body"]["temperature"] == 0 and q["body"]["n"] == 1 for q in judge_calls)


def test_max_picks_the_runs_items_once_and_a_resume_adds_none(tmp_path, fake_llm, capsys):
    project = make_project(tmp_path / "p")
    register_answers(fake_llm)
    assert run(project, "--run-id", "r", "--max", "5") == 0
    first_five = [it["question_id"] for it in json.loads(SAMPLE.read_text())[:5]]
    assert sorted(completed(project, "r")) == sorted(first_five)
    manifest = json.loads((run_dir(project, "r") / "manifest.json").read_text())
    assert manifest["n_total"] == 5 and [i["question_id"] for i in manifest["items"]] == first_five
    assert "not run yet" not in capsys.readouterr().err  # the run is complete: its items were five
    assert run(project, "--run-id", "r") == 0
    rows = judged_rows(project, "r")
    assert len(rows) == 5 and len({r["question_id"] for r in rows}) == 5
    m = meta(project, "r")
    assert len(m["invocations"]) == 2 and m["invocations"][-1]["planned_now"] == 0
    assert m["dataset"]["items"] == N_SAMPLE and m["counts"]["n_total"] == 5


def test_item_error_is_recorded_not_completed_and_retried_on_resume(tmp_path, fake_llm):
    project = make_project(tmp_path / "p", concurrency=1)
    register_answers(fake_llm)
    fake_llm.fail_next("400")  # not retryable: the first item's generation fails
    assert run(project, "--run-id", "e") == 1
    m = meta(project, "e")
    assert m["status"] == "failed" and "bad_request" in m["error"]
    lines = [json.loads(x) for x in (run_dir(project, "e") / "item-results.jsonl").read_text().splitlines()]
    errors = [r for r in lines if r["status"] == "error"]
    assert len(errors) == 1 and errors[0]["error"]["stage"] == "generate"
    assert errors[0]["question_id"] not in completed(project, "e")
    assert run(project, "--run-id", "e") == 0
    assert sorted(completed(project, "e")) == sorted(json.loads(SAMPLE.read_text())[i]["question_id"] for i in range(N_SAMPLE))


def test_error_threshold_lets_a_run_continue_past_tolerated_errors(tmp_path, fake_llm):
    project = make_project(tmp_path / "p", concurrency=1)
    register_answers(fake_llm)
    fake_llm.fail_next("400")
    assert run(project, "--run-id", "t", "--error-threshold", "1") == 0
    assert len(completed(project, "t")) == N_SAMPLE - 1


def test_billing_error_stops_the_run_with_its_own_exit_status(tmp_path, fake_llm):
    project = make_project(tmp_path / "p", concurrency=1)
    register_answers(fake_llm)
    fake_llm.fail_next("insufficient_quota")
    assert run(project, "--run-id", "b") == 3
    m = meta(project, "b")
    assert m["status"] == "failed" and "billing" in m["error"]
    rows = [json.loads(x) for x in (run_dir(project, "b") / "item-results.jsonl").read_text().splitlines()]
    billing = [r for r in rows if r["status"] == "error"]
    assert len(billing) == 1 and billing[0]["error"]["kind"] == "billing" and billing[0]["error"]["attempts"] == 1
    assert len(fake_llm.requests) <= 3  # the billing call (never retried) and at most one item already started


def test_second_identical_run_is_served_entirely_from_the_cache(tmp_path, fake_llm):
    project = make_project(tmp_path / "p")
    register_answers(fake_llm)
    assert run(project, "--run-id", "first") == 0
    calls = len(fake_llm.requests)
    assert run(project, "--run-id", "second") == 0
    assert len(fake_llm.requests) == calls
    rows = judged_rows(project, "second")
    assert all(r["judgment"]["cached"] for r in rows)
    assert [r["judgment"]["label"] for r in sorted(rows, key=lambda r: r["question_id"])] == [
        r["judgment"]["label"] for r in sorted(judged_rows(project, "first"), key=lambda r: r["question_id"])
    ]
    assert run(project, "--run-id", "third", "--no-cache") == 0
    assert len(fake_llm.requests) == 2 * calls


def test_retries_are_counted_in_run_meta(tmp_path, fake_llm):
    project = make_project(tmp_path / "p", concurrency=1)
    register_answers(fake_llm)
    fake_llm.fail_next("503", count=2)
    assert run(project, "--run-id", "rt") == 0
    m = meta(project, "rt")
    assert m["retries"] == 2
    assert m["invocations"][-1]["retries_by_kind"] == {"server": 2}


def test_run_meta_as_written_matches_its_schema_and_the_spec(tmp_path, fake_llm):
    from lme.core import schemas

    project = make_project(tmp_path / "p")
    register_answers(fake_llm)
    assert run(project, "--run-id", "m", "--max", "2") == 0
    m = meta(project, "m")
    schemas.validate("run-meta", m, where="run-meta.json")
    schema = json.loads((schemas.SCHEMA_DIR / "run-meta.schema.json").read_text())
    spec = (schemas.SCHEMA_DIR.parent / "SPEC.md").read_text(encoding="utf-8")
    assert "prompt_hashes" not in m and "package_versions" not in m  # they live under provenance
    provenance = m["provenance"]
    assert set(provenance) == set(schema["properties"]["provenance"]["properties"])
    assert set(provenance["prompt_hashes"]) == set(
        schema["properties"]["provenance"]["properties"]["prompt_hashes"]["properties"])
    assert {"matplotlib", "tiktoken", "anthropic", "openai"} <= set(provenance["package_versions"])
    assert m["endpoints"] and set(m["endpoints"]) == {m["judge"]["provider"], m["target"]["provider"]} - {"offline"}
    for key in m:
        assert key in schema["properties"], f"run-meta writes {key!r}, which its schema does not name"
        assert f"`{key}`" in spec, f"run-meta writes {key!r}, which SPEC.md does not document"
    for key in (*provenance, *provenance["prompt_hashes"]):
        assert f"`{key}`" in spec, key


def test_rate_limit_storm_is_counted_and_loses_no_item(tmp_path, fake_llm):
    project = make_project(tmp_path / "p", concurrency=8, maxAttempts=8)
    register_answers(fake_llm)
    fake_llm.fail_next("429", count=6, retry_after=0.05)
    assert run(project, "--run-id", "rl") == 0
    m = meta(project, "rl")
    assert len(completed(project, "rl")) == N_SAMPLE
    assert sum(p["rate_limited"] for p in m["pacing"]) == 6
    assert sum(o.get("rate_limit", 0) for o in m["limiter"]["outcomes"].values()) == 6
    assert m["limiter"]["concurrency"] == 8


def test_shards_split_the_items_without_overlap(tmp_path, fake_llm):
    import factories
    from lme.store import run_store

    project = make_project(tmp_path / "p")
    register_answers(fake_llm)
    assert run(project, "--run-id", "sh", "--shard", "1/2") == 0
    assert run(project, "--run-id", "sh", "--shard", "2/2") == 0
    root = run_dir(project, "sh")
    one = run_store.load_completed(root / "shard-1of2")
    two = run_store.load_completed(root / "shard-2of2")
    assert one and two and not (one & two) and len(one | two) == N_SAMPLE
    assert len(factories.load_rows(root)) == N_SAMPLE
    assert json.loads((root / "run-meta.json").read_text())["status"] == "completed"


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--run-id", "../escape"], "run id"),
        (["--variant", "_x"], "variant"),
        (["--shard", "3/2"], "--shard"),
        (["--target-option", "novalue"], "key=value"),
        (["--concurrency", "0"], "--concurrency"),
    ],
)
def test_bad_arguments_are_one_line_errors_with_exit_2_and_nothing_written(tmp_path, capsys, args, needle):
    project = make_project(tmp_path / "p")
    code = run_main(run_benchmark.main, ["--project", str(project), *args])
    err = capsys.readouterr().err
    assert code == 2
    assert needle in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (project / ".longmemeval-benchmarks" / "runs").exists() or not any(
        (project / ".longmemeval-benchmarks" / "runs").iterdir()
    )


def test_resume_with_a_different_judge_is_refused(tmp_path, fake_llm, capsys):
    project = make_project(tmp_path / "p")
    register_answers(fake_llm)
    assert run(project, "--run-id", "j", "--max", "2") == 0
    code = run_main(
        run_benchmark.main,
        ["--project", str(project), "--run-id", "j", "--judge-model", "openai:gpt-4o-mini", "--progress", "quiet"],
    )
    assert code == 2 and "judge" in capsys.readouterr().err


def test_missing_config_says_to_run_setup(tmp_path, capsys):
    code = run_main(run_benchmark.main, ["--project", str(tmp_path)])
    assert code == 2 and command_names.SETUP in capsys.readouterr().err


def test_no_api_key_lands_in_any_run_file(tmp_path, fake_llm):
    project = make_project(tmp_path / "p")
    register_answers(fake_llm)
    fake_llm.fail_next("401")
    run(project, "--run-id", "k", "--error-threshold", "100")
    for path in (project / ".longmemeval-benchmarks").rglob("*"):
        if path.is_file():
            blob = path.read_bytes()
            assert b"DUMMY-openai-key" not in blob and b"DUMMY-anthropic-key" not in blob, path


def test_dry_run_estimates_without_calling_any_model(tmp_path, fake_llm, capsys):
    project = make_project(tmp_path / "p")
    assert run_benchmark.main(["--project", str(project), "--dry-run", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["items"] == N_SAMPLE and out["generation"]["tokens_in"] > 0 and out["judge"]["tokens_in"] > 0
    assert fake_llm.requests == []
    assert not (project / ".longmemeval-benchmarks" / "runs").exists()


def _python_target_settings(tmp_path):
    from lme.run.settings import RunSettings

    return RunSettings(
        project=str(tmp_path), dataset_path=str(SAMPLE), variant="_s", runs_dir=str(tmp_path), longmemeval_root=None,
        target="python", target_provider="offline", target_model="mine", target_options={"path": str(tmp_path / "mine.py")},
        judge_provider="offline", judge_model="offline-containment-v1", max_evals=1, concurrency=1,
        cache_enabled=False, cache_read=False, cache_dir=str(tmp_path / "cache"), error_threshold=0, timeout_s=5,
        max_attempts=1,
    )


def test_a_users_system_that_reports_tokens_has_unknown_cost_not_zero(tmp_path):
    from lme.run.item_runner import run_item
    from lme.core.records import Question

    (tmp_path / "mine.py").write_text(
        "def generate(item, ctx):\n    return {'hypothesis': 'no idea', 'tokensIn': 900, 'tokensOut': 5}\n"
    )
    row = run_item(Question.from_dict(json.loads(SAMPLE.read_text())[0]), _python_target_settings(tmp_path),
                   llm=None).to_dict()
    assert row["status"] == "judged"
    assert row["cost"]["generation_usd"] is None and row["cost"]["total_usd"] is None


def test_resume_refuses_a_dataset_file_whose_content_changed(tmp_path, fake_llm, capsys):
    data = tmp_path / "data.json"
    items = json.loads(SAMPLE.read_text())
    data.write_text(json.dumps(items))
    project = make_project(tmp_path / "p", dataset=data)
    register_answers(fake_llm)
    assert run(project, "--run-id", "d", "--max", "2") == 0
    items[0]["answer"] = "something else"
    data.write_text(json.dumps(items))
    code = run_main(run_benchmark.main, ["--project", str(project), "--run-id", "d", "--progress", "quiet"])
    assert code == 2 and "dataset sha256" in capsys.readouterr().err


def test_an_unexpected_failure_mid_run_leaves_run_meta_failed_not_running(tmp_path, monkeypatch):
    from lme.store import run_store

    project = make_project(tmp_path / "p", concurrency=1)  # one item at a time: one row per write
    real_append = run_store.append_rows
    calls = {"n": 0}

    def flaky_append(run_dir, rows):  # the disk fills up at the third row (rows of one batch go in one write)
        if calls["n"] + len(rows) >= 3:
            raise OSError(28, "No space left on device")
        calls["n"] += len(rows)
        real_append(run_dir, rows)

    monkeypatch.setattr(run_store, "append_rows", flaky_append)
    with pytest.raises(UserError, match="run disk stopped: the disk is full"):  # one line, the resume command
        run(project, "--offline", "--run-id", "disk")
    m = meta(project, "disk")
    assert m["status"] == "failed" and "No space left" in m["error"] and "--run-id disk" in m["error"]
    assert len(completed(project, "disk")) == calls["n"] == 2
    monkeypatch.setattr(run_store, "append_rows", real_append)
    assert run(project, "--offline", "--run-id", "disk") == 0
    assert len(completed(project, "disk")) == N_SAMPLE


def test_the_hypothesis_is_stripped_before_judging_as_upstream_does(tmp_path):
    from lme.run.item_runner import run_item
    from lme.core.records import Question

    (tmp_path / "mine.py").write_text("def generate(item, ctx):\n    return {'hypothesis': '  Asheville.\\n\\n'}\n")
    row = run_item(Question.from_dict(json.loads(SAMPLE.read_text())[0]), _python_target_settings(tmp_path),
                   llm=None).to_dict()
    assert row["hypothesis"] == "Asheville."


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--target", "nosuch"], "unknown target"),
        (["--target", "rag", "--target-option", "top_k=abc"], "bad target options"),
        (["--longmemeval-root", "/nonexistent/LongMemEval"], "LongMemEval checkout not found"),
        (["--error-threshold", "-1"], "--error-threshold"),
        (["--target-model", "antropic:claude-sonnet-4-6"], "unknown provider"),
    ],
)
def test_inputs_that_would_fail_every_item_are_refused_before_anything_is_written(tmp_path, capsys, args, needle):
    project = make_project(tmp_path / "p")
    code = run_main(run_benchmark.main, ["--project", str(project), "--run-id", "x", *args])
    err = capsys.readouterr().err
    assert code == 2 and needle in err and "Traceback" not in err
    assert not run_dir(project, "x").exists()


@pytest.mark.parametrize("content", ["[]", "[{\"question_id\": 1}]", "{\"not\": \"a list\"}"])
def test_a_bad_or_empty_dataset_leaves_no_run_directory_behind(tmp_path, capsys, content):
    data = tmp_path / "bad.json"
    data.write_text(content)
    project = make_project(tmp_path / "p", dataset=data)
    code = run_main(run_benchmark.main, ["--project", str(project), "--run-id", "x", "--offline"])
    assert code == 2 and "Traceback" not in capsys.readouterr().err
    assert not run_dir(project, "x").exists()


def test_an_unusable_cache_is_a_one_line_error(tmp_path, capsys):
    project = make_project(tmp_path / "p")
    cache_dir = project / ".longmemeval-benchmarks" / "cache"
    cache_dir.mkdir(parents=True)
    (cache_dir / "calls.sqlite3").write_text("not a database")
    code = run_main(run_benchmark.main, ["--project", str(project), "--run-id", "x", "--offline"])
    err = capsys.readouterr().err
    assert code == 2 and "call cache" in err and "cacheEnabled" in err


def test_resume_with_different_target_options_is_refused(tmp_path, capsys):
    project = make_project(tmp_path / "p")
    assert run(project, "--offline", "--run-id", "o", "--max", "2", "--target-option", "min_coverage=0.2") == 0
    code = run_main(run_benchmark.main, ["--project", str(project), "--offline", "--run-id", "o",
                                         "--target-option", "min_coverage=0.5"])
    assert code == 2 and "target options" in capsys.readouterr().err


def test_a_shard_with_other_settings_is_refused_and_shards_never_redo_finished_items(tmp_path, fake_llm, capsys):
    project = make_project(tmp_path / "p")
    register_answers(fake_llm)
    assert run(project, "--run-id", "s", "--shard", "1/2") == 0
    code = run_main(run_benchmark.main, ["--project", str(project), "--run-id", "s", "--shard", "2/2",
                                         "--judge-model", "openai:gpt-4o-mini", "--progress", "quiet"])
    assert code == 2 and "judge" in capsys.readouterr().err
    assert not (run_dir(project, "s") / "shard-2of2" / "item-results.jsonl").exists()
    code = run_main(run_benchmark.main, ["--project", str(project), "--run-id", "s", "--progress", "quiet"])
    assert code == 2 and "--shard i/n" in capsys.readouterr().err
    code = run_main(run_benchmark.main, ["--project", str(project), "--run-id", "s", "--shard", "1/3",
                                         "--progress", "quiet"])
    assert code == 2 and "sharded differently" in capsys.readouterr().err


def test_an_unsharded_run_cannot_be_continued_as_shards(tmp_path, capsys):
    project = make_project(tmp_path / "p")
    assert run(project, "--offline", "--run-id", "u", "--max", "2") == 0
    code = run_main(run_benchmark.main, ["--project", str(project), "--offline", "--run-id", "u",
                                         "--shard", "1/2"])
    assert code == 2 and "without --shard" in capsys.readouterr().err


def test_variant_picks_the_downloaded_file_or_refuses_a_file_of_another_variant(tmp_path, capsys):
    import shutil

    project = make_project(tmp_path / "p")
    data = project / ".longmemeval-benchmarks" / "data"
    data.mkdir(parents=True)
    shutil.copy(SAMPLE, data / "longmemeval_s_cleaned.json")
    from lme.core import config as config_mod

    cfg = config_mod.load_config(project)
    cfg["datasetPath"] = str(data / "longmemeval_s_cleaned.json")
    config_mod.write_config(project, cfg, force=True)
    code = run_main(run_benchmark.main, ["--project", str(project), "--offline", "--variant", "_oracle"])
    assert code == 2 and f"download it with {command_names.SETUP} --download _oracle" in capsys.readouterr().err
    shutil.copy(SAMPLE, data / "longmemeval_oracle.json")
    assert run(project, "--offline", "--variant", "_oracle", "--run-id", "orc", "--max", "1") == 0
    assert meta(project, "orc")["dataset"]["path"].endswith("longmemeval_oracle.json")
    code = run_main(run_benchmark.main, ["--project", str(project), "--offline", "--variant", "_oracle",
                                         "--dataset", str(data / "longmemeval_s_cleaned.json")])
    assert code == 2 and "is a _s file" in capsys.readouterr().err


def test_an_unforeseen_judge_failure_is_an_error_row_not_a_crash(tmp_path, monkeypatch):
    from lme.judge import offline_judge

    def broken(*args, **kwargs):
        raise AttributeError("'NoneType' object has no attribute 'content'")

    monkeypatch.setattr(offline_judge, "offline_verdict", broken)
    project = make_project(tmp_path / "p")
    assert run(project, "--offline", "--run-id", "j", "--max", "1") == 1
    rows = [json.loads(x) for x in (run_dir(project, "j") / "item-results.jsonl").read_text().splitlines()]
    assert rows[0]["status"] == "error" and rows[0]["error"]["stage"] == "judge"
    assert rows[0]["error"]["kind"] == "malformed" and "NoneType" in rows[0]["error"]["message"]


def test_a_resume_continues_with_the_runs_own_settings_after_the_config_changed(tmp_path, fake_llm):
    from lme.core import config as config_mod

    project = make_project(tmp_path / "p", concurrency=1)
    register_answers(fake_llm)
    fake_llm.fail_next("400")  # the first item fails: the run stops with items pending
    assert run(project, "--run-id", "keep", "--target-option", "mode=direct") == 1
    cfg = config_mod.load_config(project)
    cfg.update(target="offline", targetProvider="offline", targetModel="extractive", judgeProvider="offline",
               judgeModel="offline-containment-v1", targetOptions={})
    config_mod.write_config(project, cfg, force=True)
    assert run(project, "--run-id", "keep") == 0  # no arguments: the run's settings, not the edited config's
    rows = judged_rows(project, "keep")
    assert len(rows) == N_SAMPLE and {r["target"]["name"] for r in rows} == {"full-context"}
    assert {r["judgment"]["provider"] for r in rows} == {"openai"}


def test_resume_under_a_different_judge_prompt_file_is_refused(tmp_path, fake_llm, capsys):
    project = make_project(tmp_path / "p")
    register_answers(fake_llm)
    assert run(project, "--run-id", "jp", "--max", "2") == 0
    judge_file = json.loads((run_dir(project, "jp") / "run-meta.json").read_text())["settings"]["longmemeval_root"]
    target = Path(judge_file) / "src" / "evaluation" / "evaluate_qa.py"
    target.write_text(target.read_text() + "\n# edited\n")
    code = run_main(run_benchmark.main, ["--project", str(project), "--run-id", "jp", "--progress", "quiet"])
    assert code == 2 and "judge prompt file" in capsys.readouterr().err


def test_a_variant_other_than_the_configs_needs_its_own_file(tmp_path, capsys):
    project = make_project(tmp_path / "p")
    code = run_main(run_benchmark.main, ["--project", str(project), "--offline", "--variant", "_m"])
    err = capsys.readouterr().err
    assert code == 2 and "--download _m" in err


# --------------------------------------------------------------------------- cost gate, cost cap, resume details


def _nothing_written(project):
    state = project / ".longmemeval-benchmarks"
    return not (state / "runs").exists() and not (state / "cache").exists()


def test_the_cost_cap_counts_the_priced_part_of_a_partly_priced_row(tmp_path, monkeypatch):
    """A row whose memory system used a model not in the price table still paid its judge: the cap counts that."""
    monkeypatch.setattr(cost_gate.dry_run, "Estimator", lambda settings: None)  # the cap's per-item estimate
    cost = {"generation_usd": None, "judge_usd": 0.002, "total_usd": None}
    work = write_run(tmp_path / "r", {"q1": "multi-session", "q2": "multi-session"},
                     [result_row("q1", cost=cost), result_row("q2", cost={**cost, "generation_usd": 0.001,
                                                                               "total_usd": 0.003})])
    assert cost_gate.CostCap(1.0, None, work).spent == pytest.approx(0.005)


def test_the_cost_gate_refuses_above_the_threshold_with_nothing_written_and_runs_with_yes(tmp_path, fake_llm, capsys):
    project = make_project(tmp_path / "p", confirmCostUsd=0.001)
    register_answers(fake_llm)
    assert run(project, "--run-id", "g") == 5
    out = capsys.readouterr().out
    assert out.startswith("cost gate: this run needs confirmation: estimated <= $") and "confirmCostUsd $0.00" in out
    assert f"estimate: {N_SAMPLE} items" in out and "tokens in" in out and "at concurrency 4" in out
    assert out.rstrip().splitlines()[-1] == cost_gate.ASK_LINE
    assert "run the same command again with --yes" in cost_gate.ASK_LINE and "asks the user" in cost_gate.ASK_LINE
    assert fake_llm.requests == [] and _nothing_written(project)
    assert run(project, "--run-id", "g", "--background") == 5 and _nothing_written(project)
    assert run(project, "--run-id", "g", "--max", "2", "--confirm-cost") == 0
    assert len(completed(project, "g")) == 2
    assert run(project, "--run-id", "g2", "--yes") == 0
    assert len(completed(project, "g2")) == N_SAMPLE


def test_the_gate_counts_only_the_items_this_invocation_runs(tmp_path, fake_llm, capsys):
    from lme.core import config as config_mod

    project = make_project(tmp_path / "p", confirmCostUsd=1000, concurrency=1)
    register_answers(fake_llm)
    fake_llm.fail_next("400")  # the first item fails: the run stops with most items pending
    assert run(project, "--run-id", "part") == 1
    done = len(completed(project, "part"))
    cfg = config_mod.load_config(project)
    config_mod.write_config(project, {**cfg, "confirmCostUsd": 0.001}, force=True)
    capsys.readouterr()
    assert run(project, "--run-id", "part") == 5
    assert f"estimate: {N_SAMPLE - done} items" in capsys.readouterr().out


def test_an_unknown_price_gates_and_offline_or_dry_runs_never_do(tmp_path, fake_llm, capsys):
    project = make_project(tmp_path / "p", confirmCostUsd=1000)
    assert run(project, "--target-model", "openai:gpt-unpriced-9") == 5
    out = capsys.readouterr().out
    assert "a price is unknown" in out and "no price for openai:gpt-unpriced-9" in out and _nothing_written(project)
    zero = make_project(tmp_path / "z", confirmCostUsd=0)
    assert run(zero, "--dry-run") == 0
    assert run(zero, "--offline", "--run-id", "off") == 0


def test_max_cost_pauses_between_items_and_resumes_to_one_row_per_question(tmp_path, fake_llm, capsys):
    from lme.models import prices

    project = make_project(tmp_path / "p", cacheEnabled=False)
    register_answers(fake_llm)
    assert run(project, "--run-id", "cap", "--max-cost", "0.004") == 6
    err = capsys.readouterr().err
    assert "paused at the cost cap" in err and "--max-cost <a higher USD>" in err
    m = meta(project, "cap")
    assert m["status"] == "paused" and m["exit_status"] == 6 and m["error"].startswith("cost cap reached")
    rows = [json.loads(x) for x in (run_dir(project, "cap") / "item-results.jsonl").read_text().splitlines()]
    assert 0 < len(rows) < N_SAMPLE and all(r["status"] == "judged" for r in rows)
    assert sorted(completed(project, "cap")) == sorted(r["question_id"] for r in rows)  # nothing half-recorded
    spent = prices.spend(run_rows.row_of(r) for r in rows).total_usd
    assert spent is not None and 0 < spent <= 0.004 and m["invocations"][-1]["spent_usd"] == pytest.approx(spent, abs=1e-6)
    # the cap counts the run's whole spending: resumed under the same cap, it never passes it in total
    assert run(project, "--run-id", "cap", "--max-cost", "0.004") == 6
    rows = [json.loads(x) for x in (run_dir(project, "cap") / "item-results.jsonl").read_text().splitlines()]
    assert prices.spend(run_rows.row_of(r) for r in rows).total_usd <= 0.004 and len(rows) < N_SAMPLE
    assert run(project, "--run-id", "cap", "--max-cost", "1") == 0
    rows = judged_rows(project, "cap")
    assert len(rows) == N_SAMPLE == len({r["question_id"] for r in rows})
    assert sorted(completed(project, "cap")) == sorted(r["question_id"] for r in rows)


def test_an_approved_run_paused_at_max_cost_resumes_without_a_second_approval(tmp_path, fake_llm, capsys):
    import shlex

    project = make_project(tmp_path / "p", confirmCostUsd=0.001, cacheEnabled=False)
    register_answers(fake_llm)
    assert run(project, "--run-id", "ok", "--yes", "--max-cost", "0.004") == 6
    err = capsys.readouterr().err
    approved = meta(project, "ok")["invocations"][-1]["approved_usd"]
    assert approved > 0.004  # the whole run's estimate, approved by the user's --yes
    # the pause says how the cap was reached: what was spent, what was in flight, what the next item needs
    error = meta(project, "ok")["error"]
    assert "spent + up to $" in error and "in flight" in error and "the next item's up to $" in error, error
    # the printed resume line, a higher cap in place of the placeholder: it runs, no second approval (exit 5)
    line = err.split("resume with: ", 1)[1].splitlines()[0].replace("<a higher USD>", "1")
    args = shlex.split(line)[2:]  # past the python and the script
    assert "--yes" not in args
    assert run_benchmark.main([*args, "--progress", "quiet", "--no-scorecard"]) == 0
    assert "cost gate: within the $" in capsys.readouterr().err
    assert len(completed(project, "ok")) == N_SAMPLE


def test_an_approval_covers_only_its_own_estimate(tmp_path, fake_llm, capsys):
    project = make_project(tmp_path / "p", confirmCostUsd=0.001, cacheEnabled=False, concurrency=1)
    register_answers(fake_llm)
    fake_llm.fail_next("400")
    assert run(project, "--run-id", "part", "--yes") == 1  # approved: the whole run; it stopped at an error
    path = run_dir(project, "part") / "run-meta.json"
    m = json.loads(path.read_text())
    approved = m["invocations"][-1]["approved_usd"]
    m["invocations"][-1]["approved_usd"] = approved / 1000  # as if the approval had covered a few items only
    path.write_text(json.dumps(m))
    done = len(completed(project, "part"))
    assert run(project, "--run-id", "part") == 5  # the rest was never approved: the gate asks
    assert "cost gate: this run needs confirmation" in capsys.readouterr().out
    assert len(completed(project, "part")) == done


def test_max_cost_needs_prices_and_a_positive_amount(tmp_path, capsys):
    from lme.core.errors import run_main

    project = make_project(tmp_path / "p", confirmCostUsd=1000)
    args = ["--project", str(project), "--progress", "quiet"]
    assert run_main(run_benchmark.main, [*args, "--max-cost", "-1"]) == 2
    assert "--max-cost -1 is negative" in capsys.readouterr().err
    assert run_main(run_benchmark.main, [*args, "--max-cost", "5", "--target-model", "openai:gpt-unpriced-9"]) == 2
    assert "not in the price table" in capsys.readouterr().err and _nothing_written(project)


def test_a_resume_keeps_the_runs_no_cache(tmp_path, fake_llm):
    project = make_project(tmp_path / "p")
    register_answers(fake_llm)
    assert run(project, "--run-id", "warm") == 0  # every call is now in the cache
    fake_llm.fail_next("400")  # the cold run stops at its first item's error, the rest pending
    assert run(project, "--run-id", "cold", "--no-cache", "--concurrency", "1") == 1
    calls, done = len(fake_llm.requests), len(completed(project, "cold"))
    assert run(project, "--run-id", "cold") == 0  # no --no-cache: the run's own choice is kept
    m = meta(project, "cold")
    assert m["settings"]["cache_read"] is False
    assert m["invocations"][-1]["cache"]["read"] is False and m["invocations"][-1]["cached_calls"] == 0
    assert len(fake_llm.requests) - calls == 2 * (N_SAMPLE - done)  # a reader and a judge call per item, afresh


def test_a_failed_max_run_prints_the_command_that_finishes_its_items(tmp_path, fake_llm, capsys):
    import shlex
    import subprocess

    project = make_project(tmp_path / "p", concurrency=1)
    register_answers(fake_llm)
    fake_llm.fail_next("400")
    assert run(project, "--run-id", "cut", "--max", "5") == 1
    err = capsys.readouterr().err
    pending = 5 - len(completed(project, "cut"))
    assert f"{pending} of this run's 5 items pending; resume with: " in err
    assert f"in Claude Code: {command_names.RUN} --run-id cut" in err
    command = err.split("resume with: ", 1)[1].splitlines()[0]
    assert subprocess.run(shlex.split(command) + ["--progress", "quiet", "--no-scorecard"], capture_output=True,
                          text=True, timeout=120).returncode == 0
    assert len(completed(project, "cut")) == 5


def test_progress_status_prints_the_status_line_at_the_end(tmp_path, capsys):
    project = make_project(tmp_path / "p")
    assert run_benchmark.main(["--project", str(project), "--offline", "--run-id", "st", "--progress", "status",
                               "--no-scorecard", "--max", "4"]) == 0
    assert run_benchmark.main(["--project", str(project), "--offline", "--run-id", "st2", "--progress", "status",
                               "--no-scorecard"]) == 0
    lines = [x for x in capsys.readouterr().err.splitlines() if x.startswith("completed")]
    assert lines[0].startswith("completed  4/4 done (4 judged, 0 errors)  acc ")
    assert lines[1].startswith(f"completed  {N_SAMPLE}/{N_SAMPLE} done ({N_SAMPLE} judged, 0 errors)")
    assert "$0.0000" in lines[1] and "items/min" in lines[1] and lines[1].endswith("run st2")


def test_resuming_a_finished_run_reuses_its_scorecard(tmp_path, capsys):
    project = make_project(tmp_path / "p")
    argv = ["--project", str(project), "--progress", "quiet", "--offline", "--run-id", "again"]
    assert run_benchmark.main(argv) == 0
    outputs = [run_dir(project, "again") / name for name in ("metrics.json", "scorecard.md", "report.html")]
    stamps = [p.stat().st_mtime_ns for p in outputs]
    capsys.readouterr()
    assert run_benchmark.main(argv) == 0  # nothing to do: run-meta is rewritten, the scorecard is not
    assert [p.stat().st_mtime_ns for p in outputs] == stamps
    assert "unchanged since it was last scored" in capsys.readouterr().err


def test_the_end_of_a_resume_remakes_a_page_a_kill_left_from_other_rows(tmp_path, capsys):
    """Killed after metrics.json was rewritten but before scorecard.md was: the page still holds figures of other
    rows (here a 2-item run's). The end of the next invocation makes it again from the rows, never reuses it."""
    project = make_project(tmp_path / "p")
    quiet = ["--project", str(project), "--progress", "quiet", "--offline"]
    assert run_benchmark.main([*quiet, "--run-id", "two", "--max", "2"]) == 0
    assert run_benchmark.main([*quiet, "--run-id", "r"]) == 0
    page = run_dir(project, "r") / "scorecard.md"
    made = page.read_text()
    page.write_text((run_dir(project, "two") / "scorecard.md").read_text())  # judged 2/2: not this run's figures
    capsys.readouterr()
    assert run_benchmark.main([*quiet, "--run-id", "r"]) == 0
    assert "unchanged since it was last scored" not in capsys.readouterr().err
    assert page.read_text() == made and f"judged {N_SAMPLE}/{N_SAMPLE}" in made


def test_a_run_scored_by_its_driver_is_reused_by_the_report_command_from_the_project(tmp_path, capsys, monkeypatch):
    """The driver scores with the project's absolute path; the report command runs ``scorecard.py --latest`` from
    the project root (``--project .``): the same files, so the run is shown, not scored again."""
    from lme.cli import scorecard

    project = make_project(tmp_path / "p")
    assert run_benchmark.main(["--project", str(project), "--progress", "quiet", "--offline", "--run-id", "r"]) == 0
    metrics = run_dir(project, "r") / "metrics.json"
    stamp = metrics.stat().st_mtime_ns
    capsys.readouterr()
    monkeypatch.chdir(project)
    assert scorecard.main(["--latest"]) == 0
    assert "unchanged since it was last scored" in capsys.readouterr().err and metrics.stat().st_mtime_ns == stamp
