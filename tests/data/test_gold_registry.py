"""The known-defect registry: every entry carries its upstream issues, a status and its variants; the scorecard
reports the figure with and without the wrong ones; the loop's clustering never chases a reported gold error."""

from __future__ import annotations

import json

import pytest

from lme.score import cluster_failures
from lme.data import gold_registry
from lme.report import scorecard_md
from lme.store.run_store import load_run
from factories import MS, SSU, TR, official_row, write_run, scorecard_of

DUPLICATED_54 = {"58bf7951", "1e043500", "001be529", "d23cf73b", "caf03d32", "91b15a6e", "078150f1",
                 "gpt4_4929293b", "gpt4_76048e76", "gpt4_c27434e8_abs", "18bc8abd", "c7dc5443", "1d4da289"}


@pytest.fixture(scope="module")
def entries():
    return gold_registry.load()


def test_every_entry_names_its_issues_status_and_variants(entries):
    for e in entries:
        assert e["issues"] and all(isinstance(i, int) for i in e["issues"]), e
        assert e["status"] in gold_registry.STATUSES, e
        assert e["variants"] and set(e["variants"]) <= set(gold_registry.VARIANTS), e


def test_the_registry_holds_what_upstream_reported(entries):
    by_id = {e["question_id"]: e for e in entries}
    expected = {"370a8ff4": ("wrong", [19, 26, 41]), "eac54add": ("wrong", [37]), "9aaed6a3": ("wrong", [50]),
                "gpt4_f420262d": ("wrong", [50]), "dd2973ad": ("wrong", [21]), "gpt4_88806d6e": ("disputed", [40])}
    for qid, (status, issues) in expected.items():
        assert (by_id[qid]["status"], by_id[qid]["issues"]) == (status, issues), qid
    assert by_id["ad7109d1"]["status"] == "fixed-in-cleaned" and 12 in by_id["ad7109d1"]["issues"]
    assert by_id["a3332713"]["variants"] == ["_m"] and 11 in by_id["a3332713"]["issues"]
    structural = {e["question_id"] for e in entries if e["status"] == "structural"}
    assert structural == DUPLICATED_54 and all(by_id[q]["issues"] == [54] for q in structural)


def test_only_wrong_entries_are_left_out_and_fixed_in_cleaned_only_on_the_original_release(entries):
    cleaned = gold_registry.excluded(entries, "_s", "cleaned")
    assert {"370a8ff4", "eac54add", "9aaed6a3", "gpt4_f420262d", "dd2973ad"} == set(cleaned)
    original = gold_registry.excluded(entries, "_s", "original")
    assert set(original) == set(cleaned) | {"ad7109d1"}
    assert "a3332713" in gold_registry.excluded(entries, "_m", "original")
    assert "a3332713" not in gold_registry.excluded(entries, "_s", "original")


def test_scorecard_reports_with_and_without_the_wrong_ones_and_lists_the_rest(tmp_path):
    items = [("370a8ff4", TR), ("gpt4_88806d6e", MS), ("001be529", SSU), ("ok1", SSU)]
    rows = [official_row("370a8ff4", TR, False), official_row("gpt4_88806d6e", MS, False), official_row("001be529", SSU, True),
            official_row("ok1", SSU, True)]
    record = scorecard_of(load_run(write_run(tmp_path / "r", items, rows)))
    card = record.to_dict()
    ex = card["excluding_gold_errors"]
    assert [e["question_id"] for e in ex["excluded"]] == ["370a8ff4"]  # disputed and structural stay counted
    assert (card["correct"], card["n_total"], ex["correct"], ex["n_total"]) == (2, 4, 2, 3)
    assert {e["question_id"]: e["status"] for e in ex["listed_not_excluded"]} == {
        "gpt4_88806d6e": "disputed", "001be529": "structural"}
    md = scorecard_md.render_markdown(record)
    assert "Left out (status wrong): 370a8ff4 (#19, #26, #41)" in md
    assert "1 disputed, 1 structural" in md


def test_an_original_release_run_also_leaves_out_what_the_cleaning_fixed(tmp_path):
    done = write_run(tmp_path / "r", [("ad7109d1", SSU), ("ok1", SSU)],
                     [official_row("ad7109d1", SSU, False), official_row("ok1", SSU, True)])
    meta = json.loads((done / "run-meta.json").read_text())
    meta["dataset"]["release"] = "original"
    (done / "run-meta.json").write_text(json.dumps(meta))
    ex = scorecard_of(load_run(done)).to_dict()["excluding_gold_errors"]
    assert [(e["question_id"], e["status"]) for e in ex["excluded"]] == [("ad7109d1", "fixed-in-cleaned")]


def test_clustering_never_chases_a_reported_gold_error_but_does_chase_a_structural_item():
    bad = cluster_failures.load_known_gold_errors(variant="_s", release="cleaned")
    assert {"370a8ff4", "gpt4_88806d6e", "eac54add"} <= bad
    assert not (bad & DUPLICATED_54) and "ad7109d1" not in bad
    assert "ad7109d1" in cluster_failures.load_known_gold_errors(variant="_s", release="original")


def test_an_unknown_status_is_refused_with_the_entry_named():
    with pytest.raises(ValueError, match="q1: unknown status 'maybe'"):
        gold_registry.normalize([{"question_id": "q1", "status": "maybe"}])


def test_the_loader_reports_a_haystack_that_lists_a_session_twice(tmp_path, capsys):
    from lme.cli import dataset as dataset_cli
    from lme.data import dataset
    from run_project import SAMPLE

    items = json.loads(SAMPLE.read_text())[:2]
    item = items[0]
    for key in ("haystack_session_ids", "haystack_dates", "haystack_sessions"):
        item[key] = item[key] + item[key][:1]  # the first session again, as in upstream #54
    path = tmp_path / "dup.json"
    path.write_text(json.dumps(items))
    info = dataset.scan(path)
    assert info.duplicate_sessions == {item["question_id"]: (item["haystack_session_ids"][0],)}
    assert dataset_cli.main([str(path)]) == 0
    assert f"1 item(s) list a haystack session twice (upstream issue #54; kept as given): {item['question_id']}" \
        in capsys.readouterr().err
