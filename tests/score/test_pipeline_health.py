"""Pipeline health: a stage broken across the run is a loud line on the scorecard and the clusters, and no round
starts on it. Read from the stages rows declare (``target.stages``: any target's, memory-ref's like a user's),
never from a target's debug; rows written before the contract still count, through memory-ref's old keys."""

from __future__ import annotations

import pytest

from lme.score import cluster_failures
from lme.cli import cluster_failures as cluster_failures_cli
from lme.loop import steps as loop_steps
from lme.score import pipeline_health
from lme.report import outputs as report_outputs
from lme.core.errors import UserError, run_main
from factories import typed
from loop_testing import item_ids, make_loop_project, make_row, measure_noise_floor, write_run


def _memory_ref_debug(facts: int, malformed: int, ranked: int, dropped: int) -> dict:
    return {"writer": {"facts": facts, "malformed_lines": malformed, "sessions": 40, "calls": 40},
            "retrieval": {"top": [f"s{i}" for i in range(ranked)], "shown": ranked},
            "symbolic": {"bypass": {"taken": False, "reason": "no dated match"}},
            "reader": {"sessions": 3, "facts": 2, "sessions_dropped": dropped}}


def _debug(facts: int, malformed: int = 0, ranked: int = 5, dropped: int = 0) -> dict:
    """A memory-ref row as it writes them now: its stages and truncation declared, its debug its own."""
    from plugins.memory_ref import health

    debug = _memory_ref_debug(facts, malformed, ranked, dropped)
    return {"target": {"name": "memory-ref", "provider": "openai", "model": "m", "debug": debug,
                       "stages": health.item_stages(debug), "truncation": health.item_truncation(debug)}}


def _rows(types, **debug):
    return {q: make_row(q, t, i % 2 == 0) | _debug(**debug) for i, (q, t) in enumerate(types.items())}


def test_a_writer_with_no_facts_on_every_item_is_named_broken_with_the_count_of_malformed_lines():
    types = item_ids(12)
    summary = pipeline_health.summarise(typed(_rows(types, facts=0, malformed=1984)).values())
    assert [p.stage for p in summary.broken] == ["writer"]
    [line] = pipeline_health.loud_lines(summary)
    assert line.startswith("PIPELINE BROKEN: writer: failed on all 12 items (0 facts from 40 sessions, 1,984 "
                           "malformed writer lines; check the writer model")
    healthy = pipeline_health.summarise(typed(_rows(types, facts=30, malformed=2)).values())
    assert healthy.broken == () and healthy.stages["writer"] == {"ok": 12}
    garbled = pipeline_health.summarise(typed(_rows(types, facts=3, malformed=9)).values())
    assert "3 facts from 40 sessions, 9 malformed writer lines" in garbled.broken[0].line
    empty = pipeline_health.summarise(typed(_rows(types, facts=3, ranked=0, dropped=2)).values())
    assert [p.stage for p in empty.broken] == ["retrieval"] and empty.warnings[0].stage == "truncation"


def test_a_users_own_system_declares_its_stages_and_gets_the_same_loud_line():
    types = item_ids(6)
    rows = {q: make_row(q, t, True) | {"target": {"name": "memsys.py", "provider": "openai", "model": "m",
                                                      "debug": {"whatever": 1},
                                                      "stages": [{"name": "index", "status": "ok"},
                                                                 {"name": "graph", "status": "failed",
                                                                  "detail": "neo4j unreachable"}]}}
            for q, t in types.items()}
    summary = pipeline_health.summarise(typed(rows).values())
    assert summary.stages == {"graph": {"failed": 6}, "index": {"ok": 6}}
    assert pipeline_health.loud_lines(summary) == [
        "PIPELINE BROKEN: graph: failed on all 6 items (neo4j unreachable). Fix: read the graph stage of a row "
        "(target.stages, and the target's debug)"]


def test_rows_written_before_the_contract_still_show_memory_refs_broken_writer():
    types = item_ids(6)
    old = {q: make_row(q, t, True) | {"target": {"name": "memory-ref", "provider": "openai", "model": "m", "debug": {
        **_memory_ref_debug(0, 50, 5, 0), "health": {"writer": {"off": False, "facts": 0, "malformed_lines": 50},
                                                       "retrieval": {"ranked": 5}, "bypass": {"taken": False},
                                                       "reader": {"sessions_dropped": 0}}}}}
           for q, t in types.items()}
    summary = pipeline_health.summarise(typed(old).values())
    assert [p.stage for p in summary.broken] == ["writer"]
    assert summary.broken[0].line.startswith("writer: failed on all 6 items (0 facts, 50 malformed")


def test_the_scorecard_the_clusters_and_rounds_begin_all_say_the_stack_is_broken(tmp_path, capsys):
    project = make_loop_project(tmp_path)
    types = item_ids(12)
    write_run(project, "loop", types, {q: None for q in types}, rows=_rows(types, facts=0, malformed=1984))
    measure_noise_floor(project, "loop")
    report_outputs.score_project_run(project, "loop", charts=False)
    card = (project / ".longmemeval-benchmarks/runs/loop/scorecard.md").read_text()
    assert card.splitlines()[2].startswith("> **PIPELINE BROKEN: writer: failed on all 12 items (0 facts from")
    capsys.readouterr()
    assert run_main(cluster_failures_cli.main, ["--project", str(project), "--run-id", "loop"]) == 0
    assert capsys.readouterr().out.startswith("> **PIPELINE BROKEN: writer")
    with pytest.raises(UserError, match="the stack is broken across the run: writer: failed on all 12 items"):
        loop_steps.begin(project, "loop")


def test_memory_ref_reports_each_stage_per_item_as_any_target_may():
    from plugins.memory_ref import health

    debug = {"writer": {"facts": 4, "malformed_lines": 1, "sessions": 3, "calls": 3},
             "retrieval": {"top": ["a", "b"], "shown": 2},
             "symbolic": {"temporal": {"off": True}, "resolver": {"superseded": [{}], "count_noun": "books", "count": 3},
                          "bypass": {"taken": True, "reason": "order"}},
             "reader": {"skipped": "bypass"}}
    assert [(s["name"], s["status"], s["detail"]) for s in health.item_stages(debug)] == [
        ("writer", "ok", "4 facts from 3 sessions, 1 malformed writer lines"),
        ("retrieval", "ok", "2 of 2 ranked sessions shown"), ("temporal", "skipped", "off"),
        ("resolver", "ok", "1 superseded fact(s), counted 3 'books'"), ("bypass", "ok", "answered alone: order"),
        ("reader", "skipped", "the symbolic bypass answered")]
    assert health.item_truncation(debug) is None


def _rag_rows(types, ranked: int, covers_all: bool):
    """Rows as the rag target writes them: the whole ranking in ``retrieval``, a debug without a ``top`` list."""
    rows = {}
    for i, (q, t) in enumerate(types.items()):
        row = make_row(q, t, i % 2 == 0)
        row["target"] = {"name": "rag", "provider": "openai", "model": "m", "debug": {"retrieval": {
            "granularity": "session", "top_k": 10, "retrievers": ["bm25:best"], "shown": min(ranked, 3),
            "top_k_covers_all": covers_all}}}
        row["retrieval"] = {"retrieved_session_ids": [f"s{k}" for k in range(ranked)], "gold_session_ids": ["s0"]}
        rows[q] = row
    return rows


def test_a_retriever_that_ranked_every_session_is_not_called_broken_but_an_empty_ranking_is():
    types = item_ids(12)
    everything = pipeline_health.summarise(typed(_rag_rows(types, ranked=3, covers_all=True)).values())
    assert everything.broken == () and everything.retrieval_items == 12
    chose = pipeline_health.summarise(typed(_rag_rows(types, ranked=40, covers_all=False)).values())
    assert chose.broken == ()
    nothing = pipeline_health.summarise(typed(_rag_rows(types, ranked=0, covers_all=False)).values())
    assert [p.line for p in nothing.broken] == ["retrieval: nothing ranked on all 12 items"]


def test_rag_on_items_it_can_return_whole_gets_the_top_k_note_and_no_broken_line(tmp_path, fake_llm, capsys):
    """The sample has 5-7 sessions per item, under rag's default top_k 10: as on the oracle file, retrieval had
    nothing to choose from. The banner says so; no PIPELINE BROKEN line."""
    from lme.cli import run_benchmark
    from run_project import make_project, register_answers, run_dir

    project = make_project(tmp_path / "p", target="rag")
    register_answers(fake_llm)
    assert run_benchmark.main(["--project", str(project), "--progress", "quiet", "--run-id", "rag", "--yes"]) == 0
    card = (run_dir(project, "rag") / "scorecard.md").read_text()
    assert "top_k >= the number of sessions on 24 item(s)" in card
    assert "PIPELINE BROKEN" not in card and "PIPELINE BROKEN" not in capsys.readouterr().out
