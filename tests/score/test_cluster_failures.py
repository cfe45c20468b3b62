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
from lme.core.run_records import ResultRow

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
                                                "target": {"name": "memory-ref", "debug": {"symbolic": {"temporal": {"fired": True}}}}}),
        ("tmp2", "temporal-reasoning", False, {"target": {"name": "memory-ref", "debug": {"symbolic_temporal": True, "symbolic_bypass": {"answered": True}}}}),
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


def test_clusters_group_by_type_and_count_symbolic_layers_biggest_first():
    rows, types = rows_and_types()
    result = cf.cluster(typed(rows), types, gold_bad=set(), top_k=2)
    temporal = next(c for c in result["clusters"] if c["question_type"] == "temporal-reasoning" and c["mode"] == "temporal_arithmetic")
    assert temporal["count"] == 3  # 370a8ff4 is not excluded without the gold list
    assert temporal["symbolic_layers"] == {"symbolic_bypass": 1, "symbolic_temporal": 2}
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


def test_symbolic_layers_are_read_from_memory_refs_debug_shape():
    from lme.score.cluster_failures import symbolic_layers

    def row(symbolic):
        return ResultRow.from_dict({"question_id": "q", "target": {"debug": {"symbolic": symbolic}}})

    acted = row({
        "temporal": {"resolved": [{"text": "last Saturday", "start": "2023/05/20"}]},
        "resolver": {"superseded": [], "deduplicated": 2},
        "bypass": {"taken": True, "reason": "date span"},
    })
    assert set(symbolic_layers(acted)) == {"symbolic_resolver", "symbolic_temporal", "symbolic_bypass"}
    idle = row({
        "temporal": {"resolved": []},
        "resolver": {"superseded": [], "deduplicated": 0},
        "bypass": {"taken": False, "reason": "no dated match"},
    })
    assert symbolic_layers(idle) == []


def test_ids_prints_the_chosen_clusters_question_ids_one_per_line(tmp_path, capsys):
    rows, types = rows_and_types()
    write_run(tmp_path, "loop", types, {q: None for q in types}, rows=rows)
    result = cf.cluster_run(tmp_path / ".longmemeval-benchmarks" / "runs" / "loop")
    first = result["clusters"][0]
    assert run_main(cluster_failures_cli.main, ["--project", str(tmp_path), "--run-id", "loop", "--ids", "1"]) == 0
    printed = trigger_set.parse(capsys.readouterr().out)
    assert list(printed.failing) == first["question_ids"]


def _fair_run(tmp_path):
    """40 items: 8 wrong multi-session, 2 wrong temporal, the rest right (6 types)."""
    types = {f"m{i:02d}": "multi-session" for i in range(20)} | {f"t{i:02d}": "temporal-reasoning" for i in range(12)}
    types |= {f"u{i:02d}": "single-session-user" for i in range(8)}
    wrong = {f"m{i:02d}" for i in range(8)} | {"t00", "t01"}
    write_run(tmp_path, "loop", types, {q: q not in wrong for q in types})
    return types, wrong


@pytest.mark.parametrize("ratio", [1.0, 1.5])
def test_ids_adds_a_seeded_control_sample_of_correct_items_of_the_same_types(tmp_path, capsys, ratio):
    types, wrong = _fair_run(tmp_path)
    out = tmp_path / ".longmemeval-benchmarks" / "trigger_set.txt"
    argv = ["--project", str(tmp_path), "--run-id", "loop", "--ids", "1", "--out", str(out),
            "--control-ratio", str(ratio)]
    assert run_main(cluster_failures_cli.main, argv) == 0
    chosen = trigger_set.parse(out.read_text())
    failing = [q for q in types if q in wrong and types[q] == "multi-session"]
    assert sorted(chosen.failing) == failing
    assert len(chosen.control) == math.ceil(len(failing) * ratio)
    assert all(types[q] == "multi-session" and q not in wrong for q in chosen.control)
    assert "+ %d control id(s) (seed v0)" % len(chosen.control) in capsys.readouterr().err
    assert run_main(cluster_failures_cli.main, argv) == 0 and trigger_set.parse(out.read_text()) == chosen  # same round, same sample
    assert run_main(cluster_failures_cli.main, [*argv, "--seed", "v7"]) == 0
    assert trigger_set.parse(out.read_text()).control != chosen.control


def test_control_ratio_below_one_is_refused_and_a_short_type_is_named(tmp_path, capsys):
    types, wrong = _fair_run(tmp_path)
    argv = ["--project", str(tmp_path), "--run-id", "loop", "--ids", "1"]
    assert run_main(cluster_failures_cli.main, [*argv, "--control-ratio", "0.5"]) == 2
    assert "at least as many control items" in capsys.readouterr().err
    assert run_main(cluster_failures_cli.main, [*argv, "--control-ratio", "3"]) == 0  # 24 wanted, 12 correct multi-session items
    text = capsys.readouterr().out
    assert "control short by 12 for multi-session" in text and len(trigger_set.parse(text).control) == 12


def test_ids_refuses_infrastructure_gold_bad_and_missing_clusters(tmp_path, capsys):
    rows, types = rows_and_types()
    result = cf.cluster(typed(rows), types, gold_bad={"370a8ff4"}, top_k=2)
    numbers = {c["mode"]: i for i, c in enumerate(result["clusters"], 1)}
    for mode, needle in (("error:rate_limit", "infrastructure"), ("gold_reported_bad", "reported wrong")):
        with pytest.raises(cf.UserError, match=needle):
            cf.cluster_ids(result, numbers[mode])
    write_run(tmp_path, "loop", types, {q: None for q in types}, rows=rows)
    assert run_main(cluster_failures_cli.main, ["--project", str(tmp_path), "--run-id", "loop", "--ids", "99"]) == 2
    assert "no cluster 99" in capsys.readouterr().err


@pytest.mark.parametrize("hypothesis,mode", [
    ("The information provided is not enough to answer: you did not mention a piano.", "abstention_refused_judged_wrong"),
    ("I don\u2019t know which gym you joined.", "abstention_refused_judged_wrong"),
    ("You joined the Northside gym.", "abstention_answered"),
])
def test_a_wrong_abstention_item_that_refused_is_not_called_answered(hypothesis, mode):
    rows = {"gym_abs": make_row("gym_abs", "multi-session", False, hypothesis=hypothesis)}
    result = cf.cluster(typed(rows), {"gym_abs": "multi-session"})
    assert modes(result) == {"gym_abs": mode} and mode in cf.MODES


def test_the_refusal_check_is_the_offline_judges_phrase_list(monkeypatch):
    from lme.judge import offline_judge

    assert cf.says_it_cannot_answer("x_abs", "That is unanswerable from our chats.")
    monkeypatch.setattr(offline_judge, "ABSTENTION_PHRASES", ("zebra-phrase",))
    assert not cf.says_it_cannot_answer("x_abs", "That is unanswerable from our chats.")
    assert cf.says_it_cannot_answer("x_abs", "zebra-phrase")
    assert not cf.says_it_cannot_answer("x", "zebra-phrase") and not cf.says_it_cannot_answer("x_abs", None)


def test_ids_out_writes_the_trigger_set_file_and_counts_it_on_stderr(tmp_path, capsys):
    rows, types = rows_and_types()
    write_run(tmp_path, "loop", types, {q: None for q in types}, rows=rows)
    first = cf.cluster_run(tmp_path / ".longmemeval-benchmarks" / "runs" / "loop")["clusters"][0]
    out = tmp_path / ".longmemeval-benchmarks" / "trigger_set.txt"
    out.write_text("stale-id\n")
    assert run_main(cluster_failures_cli.main, ["--project", str(tmp_path), "--run-id", "loop", "--ids", "1", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert list(trigger_set.parse(out.read_text()).failing) == first["question_ids"] and captured.out == ""
    assert f"trigger set: {len(first['question_ids'])} failing id(s) of cluster 1" in captured.err
    assert run_main(cluster_failures_cli.main, ["--project", str(tmp_path), "--run-id", "loop", "--out", str(out)]) == 2
    assert "needs --ids" in capsys.readouterr().err


@pytest.mark.parametrize("question,mode", [
    ("Which did I do first, the charity run or the bake sale?", "temporal_order"),
    ("Which event happened first, my cousin's wedding or the concert?", "temporal_order"),
    ("Who did I meet last, Anna or Ben?", "temporal_order"),
    ("How many days passed between my first yoga class and the retreat?", "temporal_arithmetic"),
    ("How many weeks before the move did I sell the car?", "temporal_arithmetic"),
    ("What was the date two weeks after I adopted Biscuit?", "temporal_arithmetic"),
])
def test_which_first_items_are_ordering_not_date_arithmetic(question, mode):
    row = make_row("t1", "temporal-reasoning", False,
                   retrieval={"retrieved_session_ids": GOLD, "gold_session_ids": GOLD}) | {"question": question}
    assert modes(cf.cluster(typed({"t1": row}), {"t1": "temporal-reasoning"})) == {"t1": mode}
