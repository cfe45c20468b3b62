"""Honest schema versions and one migration path: every file the plugin writes carries its kind's version, each
kind's numbered steps reach that version, an older file is read in today's shape where it is read (and left as it
was on disk), a file of today's version passes through unchanged."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

import factories
from lme.cli import run_benchmark, scorecard
from lme.core import migrations, schemas
from lme.core.facts import OFFICIAL_JUDGE_MODEL, SCHEMA_VERSION, SCHEMA_VERSIONS
from lme.core.run_records import JudgeIdentity
from lme.judge import verdict_archive
from lme.loop import decide
from lme.loop import session as loop_session
from lme.score import trigger_set
from lme.score.scorecard_record import Scorecard
from lme.store import run_rows, run_store
from run_project import make_project, run_dir

# --------------------------------------------------------------------------- older shapes, from the history

ROW_B52F42F = {
    "schemaVersion": "1.0.0", "question_id": "e47becba", "question_type": "multi-session",
    "question": "How many bikes do I own?", "answer": "3", "abstention": False, "status": "judged",
    "hypothesis": "You own 3 bikes.",
    "judgment": {"label": True, "raw": "yes", "model": "gpt-4o-2024-08-06", "official": True},
    "latencyMs": 812.5, "tokensIn": 1200, "tokensOut": 9,
    "target": {"name": "memory-ref", "provider": "openai", "model": "gpt-4o-mini",
               "debug": {"health": {"writer": {"facts": 3}, "retrieval": {"ranked": 4}, "bypass": {"taken": False}},
                         "retrieval": {"top_k": 5, "granularity": "session"},
                         "truncation": {"truncated": True, "dropped_sessions": 2, "kept_sessions": 38}}},
    "retrieval": {"retrieved_session_ids": ["s1", "s2"], "gold_session_ids": ["s2"]},
    "cost": {"generation_usd": 0.0002, "judge_usd": 0.0001, "total_usd": 0.0003},
    "calls": [], "error": None, "finished_at": "2026-11-29T19:40:00Z",
}
"""A judged row as ``item_runner.run_item`` wrote it at b52f42f (2026-11-29): a 1.0.0 judgment with only the
fields 7894b38's schema required and the flag of the old meaning (official at any host); memory-ref's health,
retrieval and the reader's truncation in ``debug`` (before the debug contract, f9d68a7); no ``top_k`` key."""

META_BEFORE_D58E599 = {"judge": {"provider": "openai", "model": "gpt-4o", "official": True}}
"""The judge block of a run-meta written before d58e599 recorded upstream's alias as its snapshot."""

LOOP_ROWS_BEFORE_EC6ED1A = {"kept_rounds": [1], "retested": 3, "pre_fix": 7, "n_total": 10}
"""``loop_rows.summary`` as ec6ed1a^ wrote it in metrics.json (``n_total``, named ``rows`` since)."""

ARCHIVE_LINE_D0BF04D = {
    "schemaVersion": "1.1.0", "prompt_sha256": "ab" * 32, "model": OFFICIAL_JUDGE_MODEL, "provider": "openai",
    "official": True, "label": True, "raw": "Yes", "endpoint_host": "api.openai.com",
    "request_shape": {"family": "upstream", "max_tokens": 10, "temperature": 0, "n": 1}, "question_id": "e47becba",
    "question_type": "multi-session", "question": "q", "answer": "a", "hypothesis": "h",
}
"""A verdict-archive line as d0bf04d's ``verdict_archive`` wrote it (1.1.0): no ``origin``, no ``verdict_id``."""


# --------------------------------------------------------------------------- the steps


def test_every_kind_with_steps_reaches_its_written_version_in_order_and_each_step_says_what_it_does():
    for kind, steps in migrations.STEPS.items():
        assert kind in SCHEMA_VERSIONS, kind
        versions = [migrations.version_key(s.to_version) for s in steps]
        assert versions == sorted(set(versions)) and versions[0] > migrations.version_key(SCHEMA_VERSION), kind
        assert steps[-1].to_version == SCHEMA_VERSIONS[kind], kind
        assert all(s.what and (s.apply.__doc__ or s.apply is migrations._no_change) for s in steps), kind
    for kind, version in SCHEMA_VERSIONS.items():  # a kind past 1.0.0 got there by steps
        assert version == SCHEMA_VERSION or kind in migrations.STEPS, kind


def test_a_row_of_b52f42f_is_read_in_todays_shape_and_keeps_its_version_and_its_flag():
    before = copy.deepcopy(ROW_B52F42F)
    row = run_rows.row_of(ROW_B52F42F)
    assert ROW_B52F42F == before  # the step is pure
    assert row.schemaVersion == "1.0.0"  # its claims stay as made: the flag is recomputed by every reader
    assert (row.judgment.provider, row.judgment.requested_model, row.judgment.official) == ("", OFFICIAL_JUDGE_MODEL,
                                                                                            True)
    assert [s.name for s in row.target.stages] == ["writer", "retrieval", "bypass"]
    assert row.target.truncation.dropped_sessions == 2
    assert (row.retrieval.detail.top_k, row.retrieval.detail.granularity) == (5, "session")


def test_the_row_step_is_idempotent_and_a_row_of_today_passes_through_unchanged():
    once = migrations.upgrade("item-result", ROW_B52F42F)
    assert migrations.upgrade("item-result", once) == once
    today = run_rows.row_of(ROW_B52F42F).with_(schemaVersion=SCHEMA_VERSIONS["item-result"]).to_dict()
    assert migrations.upgrade("item-result", today) == today
    assert run_rows.row_of(today).to_dict() == today


def test_an_old_runs_judge_alias_is_read_as_its_snapshot_and_the_file_is_left_as_it_was(tmp_path):
    run = factories.write_run(tmp_path / "old", {"q1": "single-session-user"}, [],
                              judge=META_BEFORE_D58E599["judge"])
    before = (run / "run-meta.json").read_bytes()
    assert run_store.read_meta(run).judge.model == OFFICIAL_JUDGE_MODEL
    assert run_store.load_run(run).judge == JudgeIdentity(provider="openai", model=OFFICIAL_JUDGE_MODEL, official=True)
    assert (run / "run-meta.json").read_bytes() == before


def test_a_run_meta_of_today_passes_through_unchanged():
    meta = factories.run_meta("r", 2, schemaVersion=SCHEMA_VERSIONS["run-meta"])
    assert migrations.upgrade("run-meta", meta) == meta


def test_a_metrics_files_loop_rows_of_ec6ed1a_count_their_rows_as_rows_today():
    card = {"schemaVersion": "1.0.0", "loop_rows": LOOP_ROWS_BEFORE_EC6ED1A}
    assert migrations.upgrade("metrics", card)["loop_rows"] == {"kept_rounds": [1], "retested": 3, "pre_fix": 7,
                                                                 "rows": 10}
    assert Scorecard.from_dict(card).loop_rows.rows == 10
    assert card["loop_rows"] == LOOP_ROWS_BEFORE_EC6ED1A


def test_an_archive_line_of_d0bf04d_is_served_as_imported_before_origins_were_recorded(tmp_path):
    path = tmp_path / ".longmemeval-benchmarks" / "verdicts.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(ARCHIVE_LINE_D0BF04D) + "\n")
    before = path.read_bytes()
    served = verdict_archive.VerdictArchive(path).lookup("ab" * 32, OFFICIAL_JUDGE_MODEL)
    assert verdict_archive.origin_of(served) == migrations.BEFORE_ORIGINS
    assert path.read_bytes() == before
    line = migrations.upgrade("verdict-archive", {**ARCHIVE_LINE_D0BF04D, "schemaVersion": "1.2.0",
                                                  "origin": {"kind": "made", "by": "run r"}})
    assert line["origin"] == {"kind": "made", "by": "run r"}


# --------------------------------------------------------------------------- versions on every file


def test_the_schema_files_say_the_version_the_code_writes():
    for name in schemas.schema_names():
        prop = schemas._schema(name).get("properties", {}).get("schemaVersion")
        if prop is None:
            assert name == "item", name  # a dataset item: upstream's, not ours
            continue
        assert prop.get("default") == SCHEMA_VERSIONS[name], name


def _json_objects(path: Path) -> list[dict]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    return [json.loads(text)]


@pytest.fixture(scope="module")
def scored_project(tmp_path_factory):
    project = make_project(tmp_path_factory.mktemp("versions") / "p")
    assert run_benchmark.main(["--project", str(project), "--progress", "quiet", "--offline", "--run-id", "r",
                               "--max", "3", "--no-scorecard"]) == 0
    assert scorecard.main(["--project", str(project), "--run-id", "r", "--no-charts", "--no-html"]) == 0
    decide.append_decision(project, {"round": 1, "decision": "keep"})
    trigger_set.record_retest(project, trigger_set.TriggerSet(("q1",)), run_id="r", round_no=1)
    loop_session._write_state(project, {"started_at": "2026-12-06T08:00:00Z"})
    return project


def test_every_json_file_and_line_a_project_holds_carries_the_version_of_its_kind(scored_project):
    state = scored_project / ".longmemeval-benchmarks"
    kinds = {"config.json": "config", "run-meta.json": "run-meta", "manifest.json": "manifest",
             "item-results.jsonl": "item-result", "questions_completed.jsonl": "completed",
             "prompts.jsonl": "prompt-store", "metrics.json": "metrics", "decisions.jsonl": "loop-decision",
             "retest.json": "loop-retest", "loop-session.json": "loop-session"}
    seen = set()
    for path in sorted(state.rglob("*.json*")):
        if "cache" in path.relative_to(state).parts or path.suffix not in (".json", ".jsonl"):
            continue  # caches are keyed by their own format version, not records
        kind = kinds.get(path.name)
        assert kind is not None, f"{path.relative_to(state)}: a file kind this test does not know"
        for obj in _json_objects(path):
            assert obj.get("schemaVersion") == SCHEMA_VERSIONS[kind], path
        seen.add(path.name)
    assert {"item-results.jsonl", "questions_completed.jsonl", "run-meta.json", "metrics.json"} <= seen
    assert (run_dir(scored_project, "r") / "item-results.jsonl").is_file()


def test_a_row_written_without_abstention_is_read_by_the_protocols_rule_from_its_question_id():
    """``abstention`` was optional in 1.0.0 rows: a row without it is an abstention item when ``'_abs' in
    question_id`` (the judge's prompt depends on it), never silently not one."""
    old = {"schemaVersion": "1.0.0", "question_id": "q7_abs", "question_type": "multi-session", "status": "failed"}
    assert migrations.upgrade("item-result", old)["abstention"] is True
    assert migrations.upgrade("item-result", {**old, "question_id": "q7"})["abstention"] is False
    assert migrations.upgrade("item-result", {**old, "abstention": False})["abstention"] is False
