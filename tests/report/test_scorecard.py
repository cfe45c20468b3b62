"""scorecard: every figure of a constructed run equals a hand computation; banner; gold-error figure; CLI forms."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lme.cli import scorecard
from lme.report import scorecard_md
from lme.score import scoring
from lme.store.run_store import load_run
from lme.core.errors import run_main
from command_env import clean_env
from factories import MS, OFFICIAL_SHA, SSU, TR, official_row, write_run, scorecard_of

ITEMS = [("370a8ff4", TR), ("a1", SSU), ("a2", SSU), ("a3_abs", SSU), ("b1", MS), ("b2_abs", MS), ("c2", TR)]


def cost(gen: float, judge: float) -> dict:
    return {"generation_usd": gen, "judge_usd": judge, "total_usd": gen + judge}


def seven_item_rows() -> list[dict]:
    """7 items over 3 types: one error row (b2_abs), one item never run (c2), one reported-bad gold (370a8ff4)."""
    return [
        official_row("370a8ff4", TR, True, latencyMs=500.0, cost=cost(0.004, 0.001)),
        official_row("a1", SSU, True, latencyMs=1000.0, cost=cost(0.008, 0.002)),
        official_row("a2", SSU, False, latencyMs=3000.0, cost=cost(0.015, 0.005),
            calls=[{"role": "reader", "cached": True, "attempts": 3}]),
        official_row("a3_abs", SSU, True, latencyMs=1500.0, cost=None),
        official_row("b1", MS, True, latencyMs=2000.0, cost=cost(0.02, 0.01),
            retrieval={"retrieved_session_ids": ["s2", "s3", "s1"], "gold_session_ids": ["s1"]}),
        official_row("b2_abs", MS, None, latencyMs=4000.0, error_kind="timeout"),
    ]


@pytest.fixture
def seven(tmp_path) -> Path:
    return write_run(tmp_path / "seven", ITEMS, seven_item_rows(), status="failed")


def test_every_figure_of_seven_item_run_matches_hand_computation(seven):
    record = scorecard_of(load_run(seven))
    card = record.to_dict()
    assert (card["n_total"], card["judged"], card["correct"], card["errors"], card["not_run"]) == (7, 5, 4, 1, 1)
    assert card["coverage"] == pytest.approx(5 / 7)
    assert card["overall"]["accuracy_strict"] == pytest.approx(4 / 7)
    assert card["overall"]["accuracy_judged"] == pytest.approx(4 / 5)
    assert card["task_averaged"]["accuracy_strict"] == pytest.approx(5 / 9)   # (2/3 + 1/2 + 1/2) / 3
    assert card["task_averaged"]["accuracy_judged"] == pytest.approx(8 / 9)   # (2/3 + 1 + 1) / 3
    assert (card["abstention"]["n"], card["abstention"]["correct"]) == (2, 1)
    assert card["per_type"][MS]["n"] == 2  # b2_abs counts in multi-session and in abstention
    assert card["per_type"][TR]["accuracy_strict"] == pytest.approx(0.5)

    # cost: two rows whose generation is unpriced (tokens at model "m", not in the price table) -> the memory
    # system's part and the total unknown, never 0; the judge's part stays known: a3_abs's recorded no cost, so its
    # judge call (50 in, 1 out at gpt-4o-2024-08-06: $0.000135) is priced from the row
    cost = card["cost"]
    assert cost["rows_unknown_cost"] == 2 and cost["total_usd"] is None
    assert (cost["rows_unknown_generation"], cost["generation_usd"]) == (2, None)
    assert cost["known_generation_usd"] == pytest.approx(0.047)
    assert cost["rows_unknown_judge"] == 0 and cost["judge_usd"] == pytest.approx(0.018135)
    assert cost["known_total_usd"] == pytest.approx(0.065135)
    # latency over [500, 1000, 1500, 2000, 3000, 4000] ms
    gen = card["latency"]["generation"]
    assert (gen["p50"], gen["p95"], gen["max"]) == (pytest.approx(1750), pytest.approx(3750), 4000)
    assert card["latency"]["judge"]["n"] == 5 and card["latency"]["judge"]["p50"] == pytest.approx(20.0)
    usage = card["usage"]
    assert usage["tokens"]["generation"] == {"in": 60, "out": 12}
    assert usage["tokens"]["judge"] == {"in": 250, "out": 5}
    assert usage["cache"]["generation_calls_cached"] == 1 and usage["retries"]["generation"] == 2
    assert usage["errors_by_kind"] == {"timeout": 1}

    # retrieval: only b1 carries ids; gold s1 at rank 3 (upstream DCG: rank i>=2 weighs 1/log2(i))
    ret = card["retrieval"]
    assert ret["scored"] == 1 and ret["skipped_abstention"] == 0
    assert ret["overall"]["recall_any@1"] == 0.0 and ret["overall"]["recall_any@3"] == 1.0
    assert ret["overall"]["ndcg_any@3"] == pytest.approx(0.6309, abs=1e-4)  # 1 / log2(3)


def test_second_figure_excludes_reported_gold_errors_without_replacing_official(seven):
    record = scorecard_of(load_run(seven))
    card = record.to_dict()
    ex = card["excluding_gold_errors"]
    assert ex["excluded"] == [{"question_id": "370a8ff4", "issues": [19, 26, 41], "status": "wrong"}]
    assert (ex["n_total"], ex["correct"]) == (6, 3)
    assert ex["overall"]["accuracy_strict"] == pytest.approx(0.5)
    assert ex["task_averaged"]["accuracy_strict"] == pytest.approx(7 / 18)  # (2/3 + 1/2 + 0/1) / 3
    assert card["overall"]["accuracy_strict"] == pytest.approx(4 / 7)  # official figure untouched
    md = scorecard_md.render_markdown(record)
    assert "Excluding reported gold errors" in md and "370a8ff4 (#19, #26, #41)" in md


def test_retrieval_skips_abstention_and_no_gold_items_and_says_how_many(tmp_path):
    rows = [official_row("x1", SSU, True, retrieval={"retrieved_session_ids": ["g"], "gold_session_ids": ["g"]}),
            official_row("x2_abs", SSU, True, retrieval={"retrieved_session_ids": ["g"], "gold_session_ids": []}),
            official_row("x3", SSU, False, retrieval={"retrieved_session_ids": ["h"], "gold_session_ids": []})]
    run = write_run(tmp_path / "r", [("x1", SSU), ("x2_abs", SSU), ("x3", SSU)], rows)
    ret = scorecard_of(load_run(run)).to_dict()["retrieval"]
    assert (ret["scored"], ret["skipped_abstention"], ret["skipped_no_gold"]) == (1, 1, 1)
    assert ret["overall"]["recall_all@1"] == 1.0


def _clean(tmp_path, **kw) -> Path:
    items = [("k1", SSU), ("k2", MS)]
    rows = kw.pop("rows", [official_row("k1", SSU, True), official_row("k2", MS, False)])
    return write_run(tmp_path / "clean", items, rows, **kw)


def test_complete_official_run_is_comparable(tmp_path, monkeypatch):
    monkeypatch.setattr(scoring, "OFFICIAL_SET_SIZE", 2)  # stands in for the 500 items of the official set
    record = scorecard_of(load_run(_clean(tmp_path)))
    card = record.to_dict()
    assert card["comparable"] is True and card["comparability_notes"] == []
    assert "NOT COMPARABLE" not in scorecard_md.render_markdown(record)


def test_a_judge_behind_another_endpoint_is_not_comparable(tmp_path, monkeypatch):
    monkeypatch.setattr(scoring, "OFFICIAL_SET_SIZE", 2)
    run = _clean(tmp_path)
    meta = json.loads((run / "run-meta.json").read_text())
    meta["endpoints"] = {"openai": "http://127.0.0.1:9/v1"}
    (run / "run-meta.json").write_text(json.dumps(meta))
    record = scorecard_of(load_run(run))
    card = record.to_dict()
    assert card["comparability_notes"] == ["judge endpoint is http://127.0.0.1:9/v1, not api.openai.com"]


def test_a_run_smaller_than_the_official_set_is_not_comparable(tmp_path):
    record = scorecard_of(load_run(_clean(tmp_path)))
    card = record.to_dict()
    assert card["comparability_notes"] == ["N = 2 items (the official set has 500)"]


def test_narrowing_the_strict_denominator_below_the_manifest_is_named(seven, capsys, monkeypatch):
    monkeypatch.setattr(scoring, "OFFICIAL_SET_SIZE", 7)
    assert scorecard.main([str(seven), "5", "_s", "seven", "--no-charts", "--format", "json"]) == 0
    notes = json.loads(capsys.readouterr().out)["comparability_notes"]
    assert "strict denominator narrowed to the first 5 of the run's 7 items (N_TOTAL / --n-total)" in notes
    assert "N = 5 items (the official set has 7)" in notes
    record = scorecard_of(load_run(seven), 7)
    card = record.to_dict()
    assert not any("narrowed" in n or "official set" in n for n in card["comparability_notes"])


def truncation(truncated, dropped_evidence=None, **extra):
    info = {"truncated": truncated, "dropped_sessions": 2 if truncated else 0, **extra}
    if dropped_evidence is not None:
        info["dropped_evidence"] = dropped_evidence
    return {"name": "full-context", "provider": "openai", "model": "gpt-4o", "debug": {"truncation": info}}


def test_truncation_is_counted_and_lost_evidence_makes_the_run_not_comparable(tmp_path, monkeypatch):
    monkeypatch.setattr(scoring, "OFFICIAL_SET_SIZE", 2)
    rows = [official_row("k1", SSU, True, target=truncation(True, 0)), official_row("k2", MS, False, target=truncation(True, 1))]
    record = scorecard_of(load_run(_clean(tmp_path, rows=rows)))
    card = record.to_dict()
    assert card["truncation"] == {"items_reporting": 2, "truncated": 2, "lost_evidence": 1,
                                  "lost_evidence_unknown": 0, "retried_after_too_long": 0}
    assert card["comparability_notes"] == ["history truncated to fit the context window on 2 item(s); 1 of them "
                                           "lost an evidence session the reader never saw"]
    assert "cut to fit the context window on 2 of 2 items" in scorecard_md.render_markdown(record)


def test_truncation_that_kept_every_evidence_session_stays_comparable(tmp_path, monkeypatch):
    monkeypatch.setattr(scoring, "OFFICIAL_SET_SIZE", 2)
    rows = [official_row("k1", SSU, True, target=truncation(True, 0, retried_after_too_long={"tokens": 9})),
            official_row("k2", MS, False, target=truncation(False, 0))]
    record = scorecard_of(load_run(_clean(tmp_path, rows=rows)))
    card = record.to_dict()
    assert card["comparable"] is True
    assert (card["truncation"]["truncated"], card["truncation"]["retried_after_too_long"]) == (1, 1)
    old = [official_row("k1", SSU, True, target=truncation(True)), official_row("k2", MS, False)]
    record = scorecard_of(load_run(_clean(tmp_path / "old", rows=old)))
    card = record.to_dict()
    assert card["truncation"]["lost_evidence_unknown"] == 1
    assert any("do not say whether an evidence session was dropped" in n for n in card["comparability_notes"])


def test_retrieval_section_names_its_level_and_granularity_and_metrics_json_has_every_k(tmp_path):
    target = {"name": "rag", "provider": "p", "model": "m", "debug": {"retrieval": {"granularity": "turn"}}}
    rows = [official_row("x1", SSU, True, target=target,
                retrieval={"retrieved_session_ids": ["g"], "gold_session_ids": ["g"]})]
    record = scorecard_of(load_run(write_run(tmp_path / "r", [("x1", SSU)], rows)))
    card = record.to_dict()
    ret = card["retrieval"]
    assert ret["ks"] == [1, 3, 5, 10, 30, 50] and "recall_all@50" in ret["overall"]
    assert ret["level"] == "session" and ret["granularity"] == {"turn": 1}
    md = scorecard_md.render_markdown(record)
    assert "## Session retrieval (session-level metrics)" in md and "granularity: turn (1)" in md
    assert "R_all@50" in md and "R_all@1 " not in md


def test_judged_only_task_average_says_how_many_types_it_averages(tmp_path):
    rows = [official_row("k1", SSU, True), official_row("k2", MS, None, error_kind="timeout")]
    md = scorecard_md.render_markdown(scorecard_of(load_run(_clean(tmp_path, rows=rows))))
    assert "| Task-averaged accuracy (macro, 2 types) | 0.5000 | 1.0000 (over 1 of 2 types, those with a judged item) |" in md


@pytest.mark.parametrize("kw,needle", [
    ({"judge": {"provider": "openai", "model": "gpt-4o-mini", "official": False}}, "judge is openai gpt-4o-mini-2024-07-18, not the official"),
    ({"judge": {"provider": "offline", "model": "containment", "official": False}}, "judge is offline containment"),
    ({"rows": [official_row("k1", SSU, True, official=False), official_row("k2", MS, False)]},
     "judge prompt is not upstream's get_anscheck_prompt on 1 of 2"),
    ({"rows": [official_row("k1", SSU, True, judge_model="gpt-4o-2024-05-13"), official_row("k2", MS, False)]}, "gpt-4o-2024-05-13"),
    ({"sha": "a" * 64}, "not a known official release"),
    ({"rows": [official_row("k1", SSU, True)], "status": "interrupted"}, "run incomplete: 1 of 2"),
    ({"status": "failed"}, "run status is 'failed'"),
    ({"rows": [official_row("k1", SSU, True), official_row("k2", MS, None, error_kind="rate_limit")]}, "errors present: 1"),
])
def test_banner_names_each_reason_a_run_is_not_comparable(tmp_path, kw, needle):
    record = scorecard_of(load_run(_clean(tmp_path, **kw)))
    card = record.to_dict()
    assert card["comparable"] is False
    assert any(needle in n for n in card["comparability_notes"]), card["comparability_notes"]
    md = scorecard_md.render_markdown(record)
    assert "NOT COMPARABLE" in md and needle in md


def test_four_argument_form_counts_missing_items_as_wrong_and_writes_files(seven, capsys):
    assert scorecard.main([str(seven), "7", "_s", "seven", "--no-charts"]) == 0
    out = capsys.readouterr().out
    assert "| Overall accuracy (micro) | 0.5714 (4/7) | 0.8000 (4/5) |" in out
    assert "| Task-averaged accuracy (macro, 3 types) | 0.5556 | 0.8889 |" in out
    assert "| Abstention accuracy (`_abs` ids) | 0.5000 (1/2) | 1.0000 (1/1) |" in out
    assert "unknown for 2 row(s)" in out
    saved = json.loads((seven / "metrics.json").read_text())
    assert saved["correct"] == 4 and saved["n_total"] == 7 and saved["variant"] == "_s"
    from lme.score import fingerprint as score_fingerprint

    assert score_fingerprint.unstamped((seven / "scorecard.md").read_text()) == out
    # N_TOTAL beyond the manifest: the extra items count as wrong in the strict overall figure
    assert scorecard.main([str(seven), "10", "_s", "seven", "--no-charts", "--format", "json"]) == 0
    card = json.loads(capsys.readouterr().out)
    assert card["n_total"] == 10 and card["overall"]["accuracy_strict"] == pytest.approx(0.4)
    assert card["unattributed"] == 3


def test_run_id_form_finds_run_in_project_and_renders_partial_and_failed_runs(tmp_path, capsys):
    runs = tmp_path / ".longmemeval-benchmarks" / "runs"
    write_run(runs / "partial", ITEMS, seven_item_rows()[:2], status="interrupted")
    write_run(runs / "failed", ITEMS, seven_item_rows(), status="failed")
    write_run(runs / "done", ITEMS[:2], seven_item_rows()[:2], status="completed")
    for run_id, expected in (("partial", "0.2857 (2/7)"), ("failed", "0.5714 (4/7)"), ("done", "1.0000 (2/2)")):
        assert scorecard.main(["--run-id", run_id, "--project", str(tmp_path)]) == 0
        out = capsys.readouterr().out
        assert f"| Overall accuracy (micro) | {expected} |" in out
        assert (runs / run_id / "charts" / "per-type-accuracy.svg").read_text().startswith("<svg ")
        assert not (runs / run_id / "charts" / "per-type-accuracy.png").exists()  # PNGs only with --png
    assert scorecard.main(["--latest", "--project", str(tmp_path), "--no-charts"]) == 0


@pytest.mark.parametrize("argv,needle", [
    (["--run-id", "nope"], "no run 'nope'"),
    (["--run-id", "../x"], "invalid run id"),
    ([], "no run given"),
    (["a", "b"], "4 arguments"),
])
def test_user_mistakes_exit_2_with_one_line(tmp_path, capsys, argv, needle):
    assert run_main(scorecard.main, [*argv, "--project", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1


def test_bad_n_total_writes_nothing(seven, capsys):
    assert run_main(scorecard.main, [str(seven), "lots", "_s", "seven"]) == 2
    assert not (seven / "metrics.json").exists()
    assert "N_TOTAL must be a whole number" in capsys.readouterr().err


def test_metrics_json_keeps_keys_other_scripts_read(seven):
    from lme.loop import state as loop_state
    from lme.store import run_store

    scorecard.main([str(seven), "7", "_s", "seven", "--no-charts"])
    saved = run_store.read_metrics(seven)
    figures = loop_state.RoundFigures.of_metrics(saved)
    assert (figures.correct, figures.n_total) == (4, 7) and figures.overall == pytest.approx(4 / 7)
    assert OFFICIAL_SHA  # the fixture's dataset sha is the known official one


def _bash_blocks(path: Path) -> list[str]:
    import re

    return re.findall(r"```bash\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.S)


def _project_with_venv(tmp_path: Path, *, runs: bool = True) -> Path:
    import sys as _sys

    project = tmp_path / "proj"
    (project / ".longmemeval-venv" / "bin").mkdir(parents=True)
    shim = project / ".longmemeval-venv" / "bin" / "python"
    shim.write_text(f'#!/bin/sh\nexec "{_sys.executable}" "$@"\n')
    shim.chmod(0o755)
    if runs:
        base = project / ".longmemeval-benchmarks" / "runs"
        write_run(base / "older", ITEMS, seven_item_rows()[:3], status="interrupted")
        write_run(base / "newer", ITEMS, seven_item_rows(), status="failed")
    return project


@pytest.mark.parametrize("arguments,expected,runs", [("--run-id older", "run `older`", True), ("", "run `newer`", True)])
def test_report_command_block_runs_as_written(tmp_path, repo_root, arguments, expected, runs):
    import subprocess

    project = _project_with_venv(tmp_path, runs=runs)
    (block,) = _bash_blocks(repo_root / "commands" / "longmemeval-report.md")
    script = block.replace("$ARGUMENTS", arguments)
    done = subprocess.run(["bash", "-c", script], cwd=project, capture_output=True, text=True, timeout=120,
                          env=clean_env(PATH="/usr/bin:/bin", HOME=str(tmp_path), CLAUDE_PLUGIN_ROOT=str(repo_root)))
    assert done.returncode == 0, done.stderr
    assert expected in done.stdout
    assert ("| Overall accuracy (micro) |" in done.stdout) is runs


def test_report_skill_blocks_run_as_written(tmp_path, repo_root):
    import subprocess

    project = _project_with_venv(tmp_path)
    blocks = _bash_blocks(repo_root / "skills" / "report" / "SKILL.md")
    assert len(blocks) == 3
    outputs = []
    for block in blocks:
        done = subprocess.run(["bash", "-c", block], cwd=project, capture_output=True, text=True, timeout=120,
                              env=clean_env(PATH="/usr/bin:/bin", HOME=str(tmp_path),
                                            CLAUDE_PLUGIN_ROOT=str(repo_root)))
        outputs.append(done)
    assert outputs[0].returncode == 0 and "| Overall accuracy (micro) |" in outputs[0].stdout
    assert outputs[1].returncode == 0 and "# Comparison:" in outputs[1].stdout
    assert outputs[2].returncode in (0, 1) and "| scenario | figure |" in outputs[2].stdout


def test_history_flag_adds_accuracy_over_rounds_chart(seven, tmp_path):
    history = tmp_path / "history_max_effort.md"
    history.write_text("| v0 | 2026-11-28 | 3/7 | 0.4286 | 0.4000 | 0.5000 | baseline |\n"
                       "| v1 | 2026-11-29 | 4/7 | 0.5714 | 0.5556 | 0.5000 | fix |\n")
    assert scorecard.main([str(seven), "7", "_s", "seven", "--history", str(history)]) == 0
    assert "accuracy over rounds" in (seven / "charts" / "accuracy-over-rounds.svg").read_text()
    assert scorecard.main([str(seven), "7", "_s", "seven", "--history", str(history), "--png"]) == 0
    for name in ("per-type-accuracy.png", "accuracy-over-rounds.png"):
        assert (seven / "charts" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_run_meta_that_is_not_a_run_meta_is_a_one_line_error(tmp_path, capsys):
    run = tmp_path / "runs" / "r"
    run.mkdir(parents=True)
    (run / "run-meta.json").write_text("{}")
    assert run_main(scorecard.main, [str(run), "10", "_s", "r"]) == 2
    err = capsys.readouterr().err
    assert "run-meta" in err and len(err.strip().splitlines()) == 1


def test_an_unchanged_run_is_not_scored_again_and_any_change_rescores_it(seven, capsys, monkeypatch):
    import factories
    from lme.store import run_store
    from lme.score import fingerprint as score_fingerprint

    args = [str(seven), "7", "_s", "seven", "--no-charts"]
    assert scorecard.main(args) == 0
    first = capsys.readouterr().out
    card = json.loads((seven / "metrics.json").read_text())
    assert len(card["fingerprint"]) == 64
    stamps = {name: (seven / name).stat().st_mtime_ns for name in ("metrics.json", "scorecard.md", "report.html")}

    def rescored() -> bool:
        now = {name: (seven / name).stat().st_mtime_ns for name in stamps}
        changed = now != stamps
        stamps.update(now)
        return changed

    assert scorecard.main(args) == 0
    out, err = capsys.readouterr()
    assert out == first and "unchanged since it was last scored" in err and not rescored()

    meta = json.loads((seven / "run-meta.json").read_text())  # a resume that ran nothing rewrites run-meta
    meta.update(finished_at="2026-11-30T00:00:00Z", invocations=[{"started_at": "x"}], duration_seconds=9.0,
                pacing=[], limiter={"initial": 8})
    run_store.write_atomic_json(seven / "run-meta.json", meta)
    assert scorecard.main(args) == 0 and not rescored()

    assert scorecard.main([*args, "--rescore"]) == 0 and rescored()
    assert scorecard.main(args) == 0 and not rescored()  # --rescore recorded what it scored: reused again
    assert scorecard.main([str(seven), "8", "_s", "seven", "--no-charts"]) == 0 and rescored()
    assert scorecard.main(args) == 0 and rescored()  # back to 7 items: the options differ from the last scoring

    monkeypatch.setattr(score_fingerprint, "_code", lambda: "a new plugin version")
    assert scorecard.main(args) == 0 and rescored()

    extra = dict(seven_item_rows()[0], question_id="q-new")
    factories.append_unmarked(seven, extra)
    assert scorecard.main(args) == 0 and rescored()


PAGES = ("scorecard.md", "report.html", "charts/per-type-accuracy.svg", "charts/per-type-accuracy.png")


def _pages(run_dir: Path) -> dict[str, bytes]:
    return {name: (run_dir / name).read_bytes() for name in PAGES}


@pytest.mark.parametrize("page", PAGES)
def test_a_kill_after_metrics_json_never_leaves_an_old_page_served(seven, capsys, page):
    """Killed after metrics.json was rewritten for new rows but before ``page`` was (each page is written on its
    own, so a kill can fall between any two): the next scorecard rebuilds the page from the rows, never reuses it
    as "unchanged since it was last scored"."""
    import factories

    args = [str(seven), "7", "_s", "seven", "--png"]
    assert scorecard.main(args) == 0
    old = _pages(seven)
    factories.append_row(seven, official_row("c2", TR, True))  # c2 had not run: 5/7 right now, 6 judged
    capsys.readouterr()
    assert scorecard.main(args) == 0
    new_out, new = capsys.readouterr().out, _pages(seven)
    assert "judged 6/7" in new_out and old[page] != new[page]

    (seven / page).write_bytes(old[page])  # the kill: every other output is the new scoring's, this page the old
    assert scorecard.main(args) == 0
    out, err = capsys.readouterr()
    assert "unchanged since it was last scored" not in err
    assert out == new_out and _pages(seven) == new
    assert scorecard.main(args) == 0  # repaired: reused again
    assert "unchanged since it was last scored" in capsys.readouterr().err


def test_a_page_that_records_no_fingerprint_is_rebuilt_once(seven, capsys):
    """A page that says nothing of what it was made from (written by an older version, or by report_html.py) is
    rebuilt by the next scorecard, then reused."""
    args = [str(seven), "7", "_s", "seven", "--no-charts"]
    assert scorecard.main(args) == 0
    first = (seven / "scorecard.md").read_text()
    capsys.readouterr()
    stamp = first.splitlines()[-1]
    assert stamp.startswith("<!-- score-fingerprint: ")
    (seven / "scorecard.md").write_text(first.removesuffix(stamp + "\n"))
    assert scorecard.main(args) == 0
    assert "unchanged since" not in capsys.readouterr().err and (seven / "scorecard.md").read_text() == first
    assert scorecard.main(args) == 0
    assert "unchanged since it was last scored" in capsys.readouterr().err
