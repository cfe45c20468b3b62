"""compare_runs: fixes / regressions / net / exact McNemar on constructed runs, and refusal of unlike runs.

``factories.write_run`` and ``factories.official_row`` build the run directories the way the run driver does
(through run_store).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Mapping, Sequence

import pytest

from lme.cli import compare_runs
from lme.score import run_comparison
from lme.score import run_differences
from lme.store import run_store
from lme.core.errors import UserError, run_main
from factories import KU, MS, SSU, TR, official_row, write_run
from lme.core.facts import OFFICIAL_JUDGE_MODEL


def code(files: Mapping[str, str]) -> tuple[str, dict[str, Any]]:
    """A code version's id and its run-meta invocation entry, for files ``{path: content}``."""
    hashes = {p: hashlib.sha256(c.encode()).hexdigest() for p, c in files.items()}
    code_id = hashlib.sha256("".join(f"{p}\t{h}\n" for p, h in sorted(hashes.items())).encode()).hexdigest()[:16]
    return code_id, {"code": {"id": code_id, "files": hashes, "sources": ["python file memsys.py"], "git": None}}


def pair(tmp_path: Path, before: Mapping[str, bool | None], after: Mapping[str, bool | None],
         types: Mapping[str, str] | None = None, *, code_a: Mapping[str, str] | None = None,
         code_b: Mapping[str, str] | None = None, items_a: Sequence[str] | None = None,
         items_b: Sequence[str] | None = None, **kw_b: Any) -> tuple[Path, Path]:
    """Runs ``before`` and ``after`` (label per id; None: an error row), of the code ``code_a`` / ``code_b`` (files
    -> contents; None: rows that record none), over the item sets ``items_a`` / ``items_b`` (default: every id)."""
    ids = list(before) + [q for q in after if q not in before]
    types = types or {q: SSU for q in ids}
    dirs = []
    for name, letter, labels, files, item_ids, fields in (("before", "A", before, code_a, items_a, {}),
                                                          ("after", "B", after, code_b, items_b, kw_b)):
        code_id, invocation = code(files) if files is not None else (None, None)
        extra = {"code": code_id} if code_id else {}
        if invocation is not None:
            fields = {**fields, "invocations": [invocation]}
        rows = [official_row(q, types[q], v, hypothesis=f"{letter} {q}", **extra) for q, v in labels.items()]
        dirs.append(write_run(tmp_path / name, [(q, types[q]) for q in (item_ids or ids)], rows, **fields))
    return dirs[0], dirs[1]


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


def test_errors_and_items_not_run_are_counted_apart_never_as_fixes_or_regressions(tmp_path):
    types = {"s1": SSU, "s2": SSU, "m1": MS, "m2": MS, "t1": TR, "k1": KU}
    before = {"s1": True, "s2": None, "m1": True, "m2": True, "t1": True, "k1": None}   # s2, k1 errors
    after = {"s1": None, "s2": True, "m1": False, "m2": True}                # s1 error; t1, k1 not run
    a, b = pair(tmp_path, before, after, types)
    res_record = run_comparison.compare(a, b)
    res = res_record.to_dict()
    assert (res["n_compared"], res["fixes"], res["regressions"], res["net"]) == (2, 0, 1, -1)
    assert res["per_type"][MS] == {"n": 2, "fixes": 0, "regressions": 1, "net": -1, "both_right": 1,
                                   "both_wrong": 0}
    assert res["per_type"][SSU]["n"] == res["per_type"][TR]["n"] == res["per_type"][KU]["n"] == 0
    assert [c["question_id"] for c in res["changed"]] == ["m1"]
    assert res["not_compared"] == {"n": 4, "judged_only_in_a": ["t1"], "judged_only_in_b": [], "error_in_a": ["s2"],
                                   "error_in_b": ["s1"], "judged_in_neither": ["k1"]}
    assert res["accuracy_a"] == 1.0 and res["accuracy_b"] == 0.5  # over the two items both judged
    assert res["p_value"] == pytest.approx(1.0)  # one discordant pair: b=1, c=0
    markdown = run_comparison.render_markdown(res_record)
    assert ("Not compared (outside every figure above): 1 judged only in before, 1 an error in before, 1 an error "
            "in after, 1 judged in neither.") in markdown and "- an error in after: s1" in markdown


@pytest.mark.parametrize("items_b", [None, "own"], ids=["same item set", "a smaller item set"])
def test_a_run_of_twenty_items_against_one_of_forty_invents_no_fix(tmp_path, items_b, capsys):
    """The finding: a 40-item run compared with a 20-item run of the same code counted the 20 items the first run
    never ran as wrong there, so the second run's right answers on them became fixes (p 0.0039)."""
    labels = {f"q{i:02d}": i % 3 != 0 for i in range(40)}
    short = {q: v for q, v in labels.items() if int(q[1:]) < 20}
    same = {"memsys.py": "def generate(item, ctx): ..."}
    a, b = pair(tmp_path, short, labels, code_a=same, code_b=same,
                items_b=None if items_b is None else list(labels), items_a=None if items_b is None else list(short))
    res = run_comparison.compare(a, b).to_dict()
    assert (res["n_compared"], res["fixes"], res["regressions"], res["p_value"]) == (20, 0, 0, 1.0)
    assert res["not_compared"]["judged_only_in_b"] == [f"q{i:02d}" for i in range(20, 40)]
    assert res["forced"] is False and res["code"]["same"] is True
    assert compare_runs.main([str(a), str(b), "--html"]) == 0
    assert "Not compared (outside every figure above): 20 judged only in after." in capsys.readouterr().out
    page = (b / "compare-before.html").read_text(encoding="utf-8")
    assert ("The figures count the items both runs judged. Not compared: 20 judged only in after." in page
            and "20 items judged in both" in page)


@pytest.mark.parametrize("b,c,expected", [(0, 0, 1.0), (5, 0, 0.0625), (0, 5, 0.0625), (3, 3, 1.0),
                                          (10, 0, 2 / 1024), (6, 1, 16 / 128)])
def test_mcnemar_exact_p(b, c, expected):
    assert run_comparison.mcnemar_exact_p(b, c) == pytest.approx(expected)


@pytest.mark.parametrize("kw,needle", [
    ({"judge": {"provider": "openai", "model": "gpt-4o-mini", "official": False}}, "judge differs"),
    ({"judge": {"provider": "offline", "model": "containment", "official": False}}, "judge differs"),
    ({"sha": "0" * 64}, "dataset sha256 differs"),
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
    assert line == ("compare before (before) -> after (after), 7 items judged in both: fixes 5, regressions 1, net +4, "
                    "exact McNemar p 0.2188; what differs: target: t -> rag; target model: p:m -> openai:gpt-4o-mini; "
                    "target option top_k: (default) -> 5; judge repeats: 1 -> 3; the code of the compared rows is not "
                    "all recorded")
    page = (b / "compare-before.html").read_text(encoding="utf-8")
    assert "what differs: target: t -&gt; rag; target model: p:m -&gt; openai:gpt-4o-mini" in page
    res_record = run_comparison.compare(a, b)
    res = res_record.to_dict()
    assert res["differences"][-1] == "judge repeats: 1 -> 3"
    assert "Runs: what differs: target: t -> rag;" in run_comparison.render_markdown(res_record)
    unknown = run_comparison.compare(*pair(tmp_path / "unknown", before, after))
    assert unknown.differences == () and "code" not in run_differences.describe_runs(unknown).split(";")[0]
    assert run_differences.describe_runs(unknown) == ("same target, models and options; the code of the compared "
                                                      "rows is not all recorded")  # never "same code" unrecorded
    files = {"memsys.py": "v1"}
    same_record = run_comparison.compare(*pair(tmp_path / "same", before, after, code_a=files, code_b=files))
    assert same_record.differences == () and "same target, models, options and code" in \
        run_comparison.render_markdown(same_record)


def test_the_comparison_names_the_files_whose_code_differs(tmp_path, capsys):
    """The finding: after memsys.py was edited, ``scorecard.py --compare`` printed "same target, models, options
    and code" (the recorded hash was the adapter's). Each row now carries its code; the comparison names the files."""
    from lme.cli import scorecard

    before = {f"q{i}": i % 2 == 0 for i in range(6)}
    after = {f"q{i}": True for i in range(6)}
    v1 = {"memsys.py": "v1", "helpers.py": "h", "old.py": "o"}
    v2 = {"memsys.py": "v2", "helpers.py": "h", "new.py": "n"}
    a, b = pair(tmp_path, before, after, code_a=v1, code_b=v2)
    capsys.readouterr()
    assert scorecard.main([str(b), "6", "_s", "after", "--no-charts", "--compare", str(a)]) == 0
    line = capsys.readouterr().err.rstrip().splitlines()[-1]
    id1, id2 = code(v1)[0][:8], code(v2)[0][:8]
    assert line.endswith(f"what differs: code: {id1} -> {id2} (changed memsys.py; added new.py; removed old.py)")
    assert "same" not in line
    res = run_comparison.compare(a, b).to_dict()
    assert res["code"]["same"] is False and res["code"]["files"] == {"changed": ["memsys.py"], "added": ["new.py"],
                                                                    "removed": ["old.py"]}
    page = (b / "compare-before.html").read_text(encoding="utf-8")
    assert f"code: {id1} -&gt; {id2} (changed memsys.py; added new.py; removed old.py)" in page


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


def test_a_run_whose_rows_record_no_code_is_never_called_the_same_code(tmp_path):
    """Rows made before rows recorded their code: the comparison says the code is not recorded, whatever the other
    run holds, and names no files."""
    before, after = {"q1": True, "q2": False}, {"q1": True, "q2": True}
    res = run_comparison.compare(*pair(tmp_path, before, after, code_b={"memsys.py": "v2"}))
    assert res.code.same is None and res.code.files.to_dict() == {"changed": [], "added": [], "removed": []}
    assert res.differences[-1] == f"code: not recorded -> {code({'memsys.py': 'v2'})[0][:8]} (a run's rows do not " \
                                  "all record their code)"
    assert "same" not in run_differences.describe_runs(res) and "not all recorded" not in \
        run_differences.describe_runs(res)
