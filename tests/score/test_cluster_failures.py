"""cluster_failures: each failure lands in the mode its row shows, grouped by type, with counts and examples."""

from __future__ import annotations

import json
import math

import pytest

from lme.score import cluster_failures as cf
from lme.cli import cluster_failures as cluster_failures_cli
from lme.score import trigger_set
from lme.core.errors import run_main
from factories import typed
from loop_testing import make_row, write_run
from lme.store import run_rows

GOLD = ["answer_a1", "answer_a2"]


def rows_and_types():
    specs = [
        # (qid, type, label, extra row fields)
        ("ok1", "multi-session", True, {}),
        ("err1", "multi-session", None, {"kind": "rate_limit"}),
        ("370a8ff4", "temporal-reasoning", False, {}),
        ("abs1_abs", "knowledge-update", False, {"hypothesis": "You moved to Lisbon."}),
        ("ref1", "single-session-user", False, {"hypothesis": "I don't know; that was not mentioned."}),
        ("miss1", "multi-session", False, {"retrieval": {"retrieved_session_ids": ["s1", "s2"], "gold_session_ids": GOLD}}),
        ("part1", "multi-session", False, {"retrieval": {"retrieved_session_ids": ["answer_a1", "s2"], "gold_session_ids": GOLD}}),
        ("tmp1", "temporal-reasoning", False, {"retrieval": {"retrieved_session_ids": GOLD, "gold_session_ids": GOLD},
                                                "target": {"name": "mine", "stages": [{"name": "temporal", "status": "failed"}]}}),
        ("tmp2", "temporal-reasoning", False, {"target": {"name": "mine", "stages": [
            {"name": "temporal", "status": "failed", "detail": "no date"}, {"name": "reader", "status": "skipped"},
            {"name": "writer", "status": "ok"}]}}),
        ("ku1", "knowledge-update", False, {}),
        ("pref1", "single-session-preference", False, {}),
        ("read1", "single-session-assistant", False, {}),
    ]
    types = {q: t for q, t, _, _ in specs}
    rows = {q: make_row(q, t, label, **dict(extra)) for q, t, label, extra in specs}
    return rows, types


def modes(result):
    return {q: c["mode"] for c in result["clusters"] for q in c["question_ids"]}


def test_each_failure_gets_the_mode_its_row_shows():
    rows, types = rows_and_types()
    result = cf.cluster(typed(rows), types, gold_bad={"370a8ff4"}, top_k=2)
    assert modes(result) == {
        "err1": "error:rate_limit",
        "370a8ff4": "gold_reported_bad",
        "abs1_abs": "abstention_answered",
        "ref1": "refused_should_answer",
        "miss1": "retrieval_miss",
        "part1": "retrieval_partial",
        "tmp1": "temporal_arithmetic",
        "tmp2": "temporal_arithmetic",
        "ku1": "stale_value",
        "pref1": "preference_not_personalised",
        "read1": "reading_error",
    }
    assert result["failures"] == 11 and result["n_total"] == 12


def test_top_k_decides_what_counts_as_retrieved():
    rows, types = rows_and_types()
    rows["late"] = make_row("late", "multi-session", False,
                            retrieval={"retrieved_session_ids": ["x", "y", *GOLD], "gold_session_ids": GOLD})
    types["late"] = "multi-session"
    assert modes(cf.cluster(typed(rows), types, top_k=2))["late"] == "retrieval_miss"
    assert modes(cf.cluster(typed(rows), types, top_k=4))["late"] == "reading_error"


def test_clusters_group_by_type_and_count_the_stages_that_did_not_run_as_meant_biggest_first():
    rows, types = rows_and_types()
    result = cf.cluster(typed(rows), types, gold_bad=set(), top_k=2)
    temporal = next(c for c in result["clusters"] if c["question_type"] == "temporal-reasoning" and c["mode"] == "temporal_arithmetic")
    assert temporal["count"] == 3  # 370a8ff4 is not excluded without the gold list
    assert temporal["stages"] == {"reader skipped": 1, "temporal failed": 2}
    assert result["clusters"][0] is temporal
    assert result["clusters"][-1]["infrastructure"] is True


def test_items_never_run_are_failures_of_mode_not_run():
    rows, types = rows_and_types()
    types["ghost"] = "multi-session"
    assert modes(cf.cluster(typed(rows), types))["ghost"] == "not_run"


def test_known_gold_error_list_is_read_from_references():
    assert {"370a8ff4", "gpt4_88806d6e", "eac54add", "9aaed6a3"} <= cf.load_known_gold_errors()


def test_cli_markdown_and_json_on_a_run(tmp_path, capsys):
    rows, types = rows_and_types()
    write_run(tmp_path, "loop", types, {q: None for q in types}, rows=rows)
    assert run_main(cluster_failures_cli.main, ["--project", str(tmp_path), "--run-id", "loop", "--top-k", "2"]) == 0
    md = capsys.readouterr().out
    assert md.startswith("# Failure clusters: 11 of 12") and "| multi-session | retrieval_miss | 1 |" in md
    assert run_main(cluster_failures_cli.main, ["--project", str(tmp_path), "--run-id", "loop", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["by_mode"]["gold_reported_bad"] == 1


def test_unknown_run_is_a_user_error(tmp_path, capsys):
    assert run_main(cluster_failures_cli.main, ["--project", str(tmp_path), "--run-id", "nope"]) == 2
    assert "no run" in capsys.readouterr().err


def test_stages_are_read_from_the_declared_stages_never_from_a_targets_debug():
    from lme.score.cluster_failures import stage_marks

    declared = run_rows.row_of({"question_id": "q", "question_type": "multi-session", "status": "error", "target": {"debug": {"symbolic": {"bypass": {"taken": True}}},
                                                                   "stages": [{"name": "bypass", "status": "ok"},
                                                                              {"name": "reader", "status": "skipped"}]}})
    assert stage_marks(declared) == ["reader skipped"]
    private = run_rows.row_of({"question_id": "q", "question_type": "multi-session", "status": "error", "target": {"debug": {"symbolic_bypass": {"answered": True}},
                                                                  "stages": None}})
    assert stage_marks(private) == []
