"""compare_runs: fixes / regressions / net / exact McNemar on constructed runs, and refusal of unlike runs.

``factories.write_run`` and ``factories.official_row`` build the run directories the way the run driver does
(through run_store).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

import pytest

from lme.cli import compare_runs
from lme.score import run_comparison
from lme.store import run_store
from lme.core.errors import UserError, run_main
from factories import KU, MS, SSU, TR, official_row, write_run
from lme.core.facts import OFFICIAL_JUDGE_MODEL


def pair(tmp_path: Path, before: Mapping[str, bool | None], after: Mapping[str, bool | None],
         types: Mapping[str, str] | None = None, **kw_b: Any) -> tuple[Path, Path]:
    ids = list(before) + [q for q in after if q not in before]
    types = types or {q: SSU for q in ids}
    items = [(q, types[q]) for q in ids]
    a = write_run(tmp_path / "before", items, [official_row(q, types[q], v, hypothesis=f"A {q}") for q, v in before.items()])
    b = write_run(tmp_path / "after", items, [official_row(q, types[q], v, hypothesis=f"B {q}") for q, v in after.items()],
                  **kw_b)
    return a, b


def test_five_fixes_no_regressions_gives_p_0_0625(tmp_path):
    before = {f"q{i}": False for i in range(5)} | {"r1": True, "r2": False}
    after = {f"q{i}": True for i in range(5)} | {"r1": True, "r2": False}
    a, b = pair(tmp_path, before, after)
    res_record = run_comparison.compare(a, b)
    res = res_record.to_dict()
    assert (res["fixes"], res["regressions"], res["net"]) == (5, 0, 5)
    assert (res["both_right"], res["both_wrong"]) == (1, 1)
    assert res["p_value"] == pytest.approx(0.0625)
    assert res["accuracy_a"] == pytest.approx(1 / 7) and res["accuracy_b"] == pytest.approx(6 / 7)
    assert {c["question_id"] for c in res["changed"]} == {f"q{i}" for i in range(5)}
    q0 = next(c for c in res["changed"] if c["question_id"] == "q0")
    assert q0 == {"question_id": "q0", "question_type": SSU, "before": False, "after": True,
                  "before_status": "judged", "after_status": "judged", "hypothesis_before": "A q0",
                  "hypothesis_after": "B q0", "flaky": False}
    assert res["forced"] is False


def test_errors_and_not_run_count_as_wrong_and_net_is_per_type(tmp_path):
    types = {"s1": SSU, "s2": SSU, "m1": MS, "m2": MS, "t1": TR}
    before = {"s1": True, "s2": None, "m1": True, "m2": True, "t1": True}   # s2 error
    after = {"s1": None, "s2": True, "m1": False, "m2": True}                # s1 error, t1 not run
    a, b = pair(tmp_path, before, after, types)
    res_record = run_comparison.compare(a, b)
    res = res_record.to_dict()
    assert (res["fixes"], res["regressions"], res["net"]) == (1, 3, -2)
    assert res["per_type"][SSU] == {"n": 2, "fixes": 1, "regressions": 1, "net": 0, "both_right": 0,
                                        "both_wrong": 0}
    assert res["per_type"][MS]["net"] == -1 and res["per_type"][TR]["net"] == -1
    assert res["per_type"][KU]["n"] == 0
    t1 = next(c for c in res["changed"] if c["question_id"] == "t1")
    assert t1["after_status"] == "not_run" and t1["hypothesis_after"] is None
    s1 = next(c for c in res["changed"] if c["question_id"] == "s1")
    assert s1["after_status"] == "error"
    # b=3 regressions, c=1 fix: p = 2 * (C(4,0)+C(4,1)) / 16 = 10/16
    assert res["p_value"] == pytest.approx(0.625)


@pytest.mark.parametrize("b,c,expected", [(0, 0, 1.0), (5, 0, 0.0625), (0, 5, 0.0625), (3, 3, 1.0),
                                          (10, 0, 2 / 1024), (6, 1, 16 / 128)])
def test_mcnemar_exact_p(b, c, expected):
    assert run_comparison.mcnemar_exact_p(b, c) == pytest.approx(expected)


@pytest.mark.parametrize("kw,needle", [
    ({"judge": {"provider": "openai", "model": "gpt-4o-mini", "official": False}}, "judge differs"),
    ({"judge": {"provider": "offline", "model": "containment", "official": False}}, "judge differs"),
    ({"sha": "0" * 64}, "dataset sha256 differs"),
    ({"n_total": 9}, "n_total differs"),
])
def test_unlike_runs_are_refused_unless_forced(tmp_path, kw, needle, capsys):
    a, b = pair(tmp_path, {"q1": False, "q2": True}, {"q1": True, "q2": True}, **kw)
    with pytest.raises(UserError, match=needle):
        run_comparison.compare(a, b)
    assert run_main(compare_runs.main, [str(a), str(b)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and needle in captured.err and "--force" in captured.err

    res_record = run_comparison.compare(a, b, force=True)
    res = res_record.to_dict()
    assert res["forced"] is True and any(needle in m for m in res["mismatches"])
    assert res["fixes"] == 1
    assert compare_runs.main([str(a), str(b), "--force"]) == 0
    out = capsys.readouterr().out
    assert "FORCED" in out and needle in out


def test_cli_json_is_valid_and_markdown_lists_changed_questions(tmp_path, capsys):
    a, b = pair(tmp_path, {"q1": False, "q2": True}, {"q1": True, "q2": False})
    assert compare_runs.main([str(a), str(b), "--json"]) == 0
    parsed = json.loads(capsys.readouterr().out)
    assert parsed["net"] == 0 and parsed["fixes"] == 1 and parsed["regressions"] == 1
    assert compare_runs.main([str(a), str(b)]) == 0
    md = capsys.readouterr().out
    assert "| q1 | single-session-user | fix | A q1 | B q1 |" in md
    assert "| q2 | single-session-user | regression |" in md


def test_snapshot_dir_without_questions_completed_compares(tmp_path):
    a, b = pair(tmp_path, {"q1": False}, {"q1": True})
    (a / "questions_completed.jsonl").unlink()
    assert run_comparison.compare(a, b).to_dict()["fixes"] == 1


def test_missing_run_dir_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="does not exist"):
        run_comparison.compare(tmp_path / "nope", tmp_path / "nope2")


@pytest.mark.parametrize("judge", [
    {"provider": "openai", "model": "gpt-4o", "official": True},  # a run recorded with upstream's alias
    {"provider": "openai", "model": OFFICIAL_JUDGE_MODEL, "official": False},  # same judge, verdicts not official
])
def test_runs_with_the_same_judge_model_compare_whatever_alias_or_official_flag(tmp_path, judge):
    a, b = pair(tmp_path, {"q1": False, "q2": True}, {"q1": True, "q2": True}, judge=judge)
    assert run_comparison.compare(a, b).to_dict()["fixes"] == 1


def _started(run_dir: Path, started_at: str) -> Path:
    meta = run_store.read_json(run_dir / "run-meta.json")
    meta["started_at"] = started_at
    run_store.write_atomic_json(run_dir / "run-meta.json", meta)
    return run_dir


def test_latest_compares_the_two_most_recently_started_runs_older_first(tmp_path, capsys):
    runs = tmp_path / ".longmemeval-benchmarks" / "runs"
    items = [("q1", SSU), ("q2", SSU)]
    _started(write_run(runs / "oldest", items, [official_row("q1", SSU, False), official_row("q2", SSU, False)]), "2026-11-27T09:00:00Z")
    _started(write_run(runs / "middle", items, [official_row("q1", SSU, False), official_row("q2", SSU, True)]), "2026-11-28T09:00:00Z")
    newest = _started(write_run(runs / "newest", items, [official_row("q1", SSU, True), official_row("q2", SSU, True)]),
                      "2026-11-29T09:00:00Z")
    import os
    os.utime(runs / "middle", (1e10, 1e10))  # re-scored last: folder time must not matter
    assert compare_runs.latest_two(tmp_path) == (runs / "middle", newest)
    assert run_main(compare_runs.main, ["--latest", "--project", str(tmp_path), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["run_a"]["run_id"], result["run_b"]["run_id"], result["net"]) == ("middle", "newest", 1)


def test_latest_agrees_with_the_scorecards_latest_run(tmp_path):
    from lme.store import run_store

    runs = tmp_path / ".longmemeval-benchmarks" / "runs"
    for name, started in (("b", "2026-11-29T09:00:00Z"), ("a", "2026-11-29T10:00:00Z")):
        _started(write_run(runs / name, [("q1", SSU)], [official_row("q1", SSU, True)]), started)
    assert compare_runs.latest_two(tmp_path)[1] == run_store.latest_run(tmp_path) == runs / "a"


@pytest.mark.parametrize("n_runs", [0, 1])
def test_latest_with_fewer_than_two_runs_says_so_and_exits_0(tmp_path, capsys, n_runs):
    runs = tmp_path / ".longmemeval-benchmarks" / "runs"
    for i in range(n_runs):
        write_run(runs / f"r{i}", [("q1", SSU)], [official_row("q1", SSU, True)])
    assert run_main(compare_runs.main, ["--latest", "--project", str(tmp_path)]) == 0
    assert capsys.readouterr().out == "need two runs to compare\n"


def test_latest_and_directories_together_or_neither_is_a_user_error(tmp_path, capsys):
    assert run_main(compare_runs.main, ["--latest", str(tmp_path), str(tmp_path)]) == 2
    assert "either --latest or BEFORE_DIR AFTER_DIR" in capsys.readouterr().err
    assert run_main(compare_runs.main, []) == 2
    assert "or --latest" in capsys.readouterr().err


def test_scorecard_compare_prints_one_line_with_the_figures_and_what_differs_between_the_runs(tmp_path, capsys):
    from lme.cli import scorecard

    before = {f"q{i}": False for i in range(5)} | {"r1": True, "r2": True}
    after = {f"q{i}": True for i in range(5)} | {"r1": False, "r2": True}
    a, b = pair(tmp_path, before, after, target={"name": "rag", "provider": "openai", "model": "gpt-4o-mini",
                                                  "options": {"top_k": 5}}, settings={"judge_repeat": 3})
    capsys.readouterr()
    assert scorecard.main([str(b), "7", "_s", "after", "--no-charts", "--compare", str(a)]) == 0
    line = capsys.readouterr().err.rstrip().splitlines()[-1]
    assert line == ("compare before (before) -> after (after), 7 items: fixes 5, regressions 1, net +4, exact McNemar "
                    "p 0.2188; what differs: target: t -> rag; target model: p:m -> openai:gpt-4o-mini; target option "
                    "top_k: (default) -> 5; judge repeats: 1 -> 3")
    page = (b / "compare-before.html").read_text(encoding="utf-8")
    assert "what differs: target: t -&gt; rag; target model: p:m -&gt; openai:gpt-4o-mini" in page
    res_record = run_comparison.compare(a, b)
    res = res_record.to_dict()
    assert res["differences"][-1] == "judge repeats: 1 -> 3"
    assert "Runs: what differs: target: t -> rag;" in run_comparison.render_markdown(res_record)
    same_record = run_comparison.compare(*pair(tmp_path / "same", before, after))
    same = same_record.to_dict()
    assert same["differences"] == [] and "same target, models, options and code" in run_comparison.render_markdown(same_record)


def test_the_comparison_is_a_record_whose_json_is_compare_runs_json(tmp_path, capsys):
    """``compare_runs.py --json`` prints ``Comparison.to_dict`` (schema-checked); the record reads it back whole, and
    the Markdown and the terminal line read its attributes."""
    from lme.core import schemas
    from lme.score import run_differences
    from lme.score.comparison_record import Comparison

    a, b = pair(tmp_path, {"q1": False, "q2": True, "q3": None}, {"q1": True, "q2": False, "q3": True})
    record = run_comparison.compare(a, b)
    printed = record.to_dict()
    schemas.validate("comparison", printed, where="the comparison")
    assert Comparison.from_dict(json.loads(json.dumps(printed))) == record
    assert record.changed[0].question_id == printed["changed"][0]["question_id"]
    assert run_differences.summary_line(record).startswith(f"compare {record.run_a.run_id} (before)")
