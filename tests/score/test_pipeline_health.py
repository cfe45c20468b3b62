"""Pipeline health: a stage broken across the run is a loud line on the scorecard and the clusters, and no round
starts on it; memory-ref reports each stage's health per item."""

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


def _debug(facts: int, malformed: int = 0, ranked: int = 5, dropped: int = 0) -> dict:
    return {"target": {"name": "memory-ref", "provider": "openai", "model": "m", "debug": {
        "writer": {"facts": facts, "malformed_lines": malformed, "sessions": 40, "calls": 40},
        "retrieval": {"top": [f"s{i}" for i in range(ranked)], "shown": ranked},
        "symbolic": {"bypass": {"taken": False, "reason": "no dated match"}},
        "reader": {"sessions_dropped": dropped}}}}


def _rows(types, **debug):
    return {q: make_row(q, t, i % 2 == 0) | _debug(**debug) for i, (q, t) in enumerate(types.items())}


def test_a_writer_with_no_facts_on_every_item_is_named_broken_with_the_count_of_malformed_lines():
    types = item_ids(12)
    summary = pipeline_health.summarise(typed(_rows(types, facts=0, malformed=1984)).values())
    assert [p["stage"] for p in summary["broken"]] == ["writer"]
    [line] = pipeline_health.loud_lines(summary)
    assert line.startswith("PIPELINE BROKEN: writer: 0 facts extracted on all 12 items (23,808 malformed")
    healthy = pipeline_health.summarise(typed(_rows(types, facts=30, malformed=2)).values())
    assert healthy["broken"] == [] and healthy["facts"] == 360
    garbled = pipeline_health.summarise(typed(_rows(types, facts=3, malformed=9)).values())
    assert "malformed writer lines against" in garbled["broken"][0]["line"]
    empty = pipeline_health.summarise(typed(_rows(types, facts=3, ranked=0, dropped=2)).values())
    assert [p["stage"] for p in empty["broken"]] == ["retrieval"] and empty["warnings"][0]["stage"] == "reader"


def test_the_scorecard_the_clusters_and_rounds_begin_all_say_the_stack_is_broken(tmp_path, capsys):
    project = make_loop_project(tmp_path)
    types = item_ids(12)
    write_run(project, "loop", types, {q: None for q in types}, rows=_rows(types, facts=0, malformed=1984))
    measure_noise_floor(project, "loop")
    report_outputs.score_project_run(project, "loop", charts=False)
    card = (project / ".longmemeval-benchmarks/runs/loop/scorecard.md").read_text()
    assert card.splitlines()[2].startswith("> **PIPELINE BROKEN: writer: 0 facts extracted on all 12 items")
    capsys.readouterr()
    assert run_main(cluster_failures_cli.main, ["--project", str(project), "--run-id", "loop"]) == 0
    assert capsys.readouterr().out.startswith("> **PIPELINE BROKEN: writer")
    with pytest.raises(UserError, match="the stack is broken across the run: writer: 0 facts"):
        loop_steps.begin(project, "loop")


def test_memory_ref_reports_each_stages_health_per_item():
    from plugins.memory_ref import health

    out = health.item_health({"writer": {"facts": 4, "malformed_lines": 1, "sessions": 3, "calls": 3},
                              "retrieval": {"top": ["a", "b"], "shown": 2},
                              "symbolic": {"bypass": {"taken": True, "reason": "order"}},
                              "reader": {"skipped": "bypass"}})
    assert out["writer"] == {"off": False, "facts": 4, "malformed_lines": 1, "sessions": 3, "calls": 3}
    assert out["retrieval"] == {"ranked": 2, "shown": 2} and out["bypass"]["taken"] is True
    assert out["reader"] == {"skipped": "bypass", "sessions_dropped": 0}


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
    assert everything["broken"] == [] and everything["retrieval_items"] == 12
    chose = pipeline_health.summarise(typed(_rag_rows(types, ranked=40, covers_all=False)).values())
    assert chose["broken"] == []
    nothing = pipeline_health.summarise(typed(_rag_rows(types, ranked=0, covers_all=False)).values())
    assert [p["line"] for p in nothing["broken"]] == ["retrieval: nothing ranked on all 12 items"]


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
