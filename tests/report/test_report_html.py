"""report.html and the diff page, read as files: self-contained, the scorecard's own figures, safe data, exact
prompts, evidence texts always and other texts within the budget, the flaky mark, one-line errors."""

from __future__ import annotations

import dataclasses
import json
import re
from html import unescape

import pytest

from lme.cli import compare_runs
from lme.score import run_comparison
from lme.store import run_store
from lme.store import prompt_store
from lme.store import run_rows
from lme.report import page_data as report_data
from lme.report import page as report_html
from lme.cli import report_html as report_html_cli
from lme.cli import run_benchmark
from lme.cli import scorecard
from lme.score import fingerprint as score_fingerprint
from lme.core.errors import run_main
from factories import result_row, scorecard_of
from report_testing import NASTY, make_report_run
from run_project import make_project, run_dir


def blobs(page: str) -> tuple[dict, dict]:
    """The page's two embedded JSON blobs, parsed as the browser parses them."""
    data = re.search(r'<script type="application/json" id="lme-data">(.*?)</script>', page, re.S).group(1)
    texts = re.search(r'<script type="application/octet-stream" id="lme-texts" data-encoding="deflate-base64">'
                      r'([A-Za-z0-9+/=]*)</script>', page).group(1)
    return json.loads(data), report_html.unpack_texts(texts)


@pytest.fixture
def report_run(tmp_path, fake_llm):
    return make_report_run(tmp_path, fake_llm)


def test_the_offline_sample_run_writes_a_self_contained_report(tmp_path):
    project = make_project(tmp_path / "p")
    assert run_benchmark.main(["--project", str(project), "--offline", "--run-id", "off", "--progress", "quiet"]) == 0
    page = (run_dir(project, "off") / "report.html").read_text(encoding="utf-8")
    assert "<link" not in page and "@import" not in page and not re.search(r'\bsrc\s*=', page)
    assert not re.search(r"""(?:href|url)\s*[=(]\s*["']?(?:https?:)?//""", page)  # nothing fetched from anywhere
    assert "default-src 'none'" in page  # and the page's own policy forbids it
    data, texts = blobs(page)
    assert len(data["questions"]) == 24
    assert all(q["qdate"] for q in data["questions"])  # dates come from the run's dataset file
    evidence = [ref for q in data["questions"] for ref in q["sess"] if "e" in ref[2]]
    assert evidence and all(texts["s"][ref[0]] for ref in evidence)  # evidence sessions are always embedded


def test_the_headline_is_the_scorecards_own_strings(report_run):
    page = (report_run.run_dir / "report.html").read_text(encoding="utf-8")
    markdown = (report_run.run_dir / "scorecard.md").read_text(encoding="utf-8")
    figures = re.search(r'<table class="figures" id="figures">(.*?)</table>', page, re.S).group(1)
    cells = [unescape(c) for c in re.findall(r"<td>(.*?)</td>", figures)]
    for label in ("Overall accuracy (micro)", "Task-averaged accuracy (macro", "Abstention accuracy"):
        md_row = next(line for line in markdown.splitlines() if line.startswith(f"| {label}"))
        strict, judged = [c.strip().replace("`", "") for c in md_row.strip("|").split("|")][1:3]
        i = next(i for i, c in enumerate(cells) if c.replace("`", "").startswith(label.split(" (")[0]))
        assert cells[i + 1:i + 3] == [strict, judged], label
    banner = re.search(r'<section class="banner" id="banner">(.*?)</section>', page, re.S).group(1)
    card = json.loads((report_run.run_dir / "metrics.json").read_text())
    assert card["comparability_notes"] and all(n in unescape(banner) for n in card["comparability_notes"])
    per_type = re.search(r'<table class="figures" id="per-type">(.*?)</table>', page, re.S).group(1)
    for qtype, block in card["per_type"].items():
        if block["n"]:
            assert f"[{block['wilson_strict'][0]:.3f}, {block['wilson_strict'][1]:.3f}]" in per_type, qtype


def test_data_that_closes_a_script_element_stays_data(report_run):
    page = (report_run.run_dir / "report.html").read_text(encoding="utf-8")
    assert "</script><script>window.pwned" not in page and "\u2028" not in page
    assert page.count("<script") == 3  # the two data blobs and the page's own code: nothing injected
    data, _ = blobs(page)
    nasty = next(q for q in data["questions"] if q["id"] == report_run.nasty_id)
    assert nasty["hyp"] == NASTY  # the exact text comes back


def test_the_drill_down_data_holds_the_exact_prompt_judge_reply_and_error(report_run, fake_llm):
    data, texts = blobs((report_run.run_dir / "report.html").read_text(encoding="utf-8"))
    by_id = {q["id"]: q for q in data["questions"]}
    sent = {r["body"]["messages"][-1]["content"] for r in fake_llm.requests if r["body"].get("max_tokens") != 10}
    for qid, row in report_run.rows.items():
        q = by_id[qid]
        assert q["hyp"] == row["hypothesis"] and q["gold"] == row["answer"]
        if row["status"] == "judged":
            assert q["judge"]["raw"] == row["judgment"]["raw"] and q["judge"]["prompt_sha256"]
        (prompt,) = q["prompts"]
        text = "\n".join(s if isinstance(s, str) else texts["l"][s] for s in prompt["messages"][-1]["seg"])
        assert text in sent and prompt["chars"] == len(text)  # rebuilt in the page exactly as the reader got it
    assert by_id[report_run.error_id]["state"] == "error" and by_id[report_run.error_id]["err"]["kind"]
    assert by_id[report_run.flaky_id]["flaky"] == {"yes": 2, "no": 1, "source": "registry (run test)"}
    assert sum(1 for q in data["questions"] if q["flaky"]) == 1


def test_texts_beyond_the_evidence_respect_the_budget_and_say_so(report_run):
    run = run_store.load_run(report_run.run_dir)
    card = scorecard_of(run)
    data, texts = blobs(report_html.build_report(run, card, project=report_run.project, max_text_mb=0))
    assert texts["l"] and all(t is None for t in texts["l"])
    assert any(f"{len(texts['l'])} session or prompt text(s) were left out" in n for n in data["notes"])
    evidence = {ref[0] for q in data["questions"] for ref in q["sess"] if "e" in ref[2]}
    assert evidence and all(texts["s"][i] for i in evidence)
    assert all(texts["s"][i] is None for i in range(len(texts["s"])) if i not in evidence)


def test_each_session_and_prompt_line_is_embedded_once(report_run):
    page = (report_run.run_dir / "report.html").read_text(encoding="utf-8")
    data, texts = blobs(page)
    ids = [s["id"] for s in data["sessions"]]
    assert len(ids) == len(set(ids))
    lines = [t for t in texts["l"] if t is not None]
    assert len(lines) == len(set(lines))
    assert len(lines) >= 24 and all(report_html.embed_json(line) not in page for line in lines)  # packed, once


def test_a_missing_dataset_still_gives_a_report_that_says_what_is_missing(report_run, tmp_path):
    run = run_store.load_run(report_run.run_dir)
    meta = run.meta.with_(dataset=run.meta.dataset.updated(path=str(tmp_path / "gone.json")))
    run = run_store.RunData(path=run.path, meta=meta, manifest=run.manifest, rows=run.rows)
    data, _ = blobs(report_html.build_report(run, scorecard_of(run)))
    assert any("is not here" in n for n in data["notes"])
    assert {q["hyp"] for q in data["questions"]} == {r.get("hypothesis") for r in report_run.rows.values()}


def test_the_prompt_command_prints_the_stored_prompt(report_run, capsys):
    qid = report_run.nasty_id
    assert report_html_cli.main([str(report_run.run_dir), "--prompt", qid]) == 0
    key = report_run.rows[qid]["prompt_keys"][0]
    stored = prompt_store.load(report_run.run_dir).request_text(key)
    assert capsys.readouterr().out == f"## user\n{stored['messages'][0]['content']}\n"


def test_compare_writes_a_diff_page_with_compare_runs_figures(tmp_path, fake_llm):
    first = make_report_run(tmp_path, fake_llm)
    second = make_report_run(tmp_path, fake_llm, run_id="r2", correct_share=0.9, project=first.project)
    assert scorecard.main(["--run-id", "r2", "--project", str(first.project), "--no-charts", "--compare", "r1"]) == 0
    page = (second.run_dir / "compare-r1.html").read_text(encoding="utf-8")
    result_record = run_comparison.compare(first.run_dir, second.run_dir)
    result = result_record.to_dict()
    data, _ = blobs(page)
    assert [f["id"] for f in data["flips"]] == [c["question_id"] for c in result["changed"]] and data["flips"]
    assert f"{result['p_value']:.4g}" in page and f"{result['net']:+d}" in page
    flip = data["flips"][0]
    assert [s["hyp"] for s in flip["sides"]] == [first.rows[flip["id"]].get("hypothesis"),
                                                  second.rows[flip["id"]].get("hypothesis")]
    out = tmp_path / "diff.html"
    assert compare_runs.main([str(first.run_dir), str(second.run_dir), "--html", str(out)]) == 0
    assert blobs(out.read_text(encoding="utf-8"))[0]["flips"] == data["flips"]


def test_a_bad_compare_run_is_one_line_and_writes_nothing(report_run, capsys):
    before = {p.name: p.stat().st_mtime_ns for p in report_run.run_dir.iterdir()}
    assert run_main(scorecard.main, ["--run-id", "r1", "--project", str(report_run.project), "--compare", "nope"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert {p.name: p.stat().st_mtime_ns for p in report_run.run_dir.iterdir()} == before


@pytest.mark.parametrize("text", ["</script><script>alert(1)</script>", "<!-- <script>", "a\u2028b\u2029c", "&amp; >"])
def test_embedded_json_has_no_markup_and_parses_back(text):
    blob = report_html.embed_json({"t": text})
    assert "<" not in blob and ">" not in blob and "\u2028" not in blob
    assert json.loads(blob) == {"t": text}


def test_the_flaky_mark_reads_the_rows_repeats_or_the_registrys_exact_prompt():
    row = run_rows.row_of(result_row("q1", judgment={"model": "gpt-4o-2024-08-06", "prompt_sha256": "a" * 64}))
    key = ("q1", "gpt-4o-2024-08-06", "a" * 64)
    assert report_data.flaky_mark(row, {}) is None
    assert report_data.flaky_mark(row, {key: {"yes": 3, "no": 0, "flaky": False}}) is None
    assert report_data.flaky_mark(row, {key: {"yes": 1, "no": 2}})["no"] == 2  # both labels: flaky
    assert report_data.flaky_mark(row, {("q1", "gpt-4o-2024-08-06", "b" * 64): {"yes": 1, "no": 1}}) is None
    repeated = row.with_(judgment=dataclasses.replace(row.judgment, stability={"n": 3, "yes": 2, "no": 1, "flaky": True}))
    assert report_data.flaky_mark(repeated, {})["source"] == "this run's repeated verdicts"


def test_the_pipeline_panel_shows_the_stages_and_truncation_a_target_declared_not_its_debug():
    row = run_rows.row_of(result_row("q1", target={
        "name": "memsys.py", "provider": "openai", "model": "m", "debug": {"symbolic": {"bypass": {"taken": True}}},
        "stages": [{"name": "index", "status": "ok", "detail": "40 sessions"}, {"name": "graph", "status": "fallback"}],
        "truncation": {"truncated": True, "dropped_sessions": 2, "dropped_session_ids": ["s1", "s2"]}}))
    assert report_data._stages(row) == ["index: ok — 40 sessions", "graph: fallback"]
    assert report_data._truncation(row)["dropped_sessions"] == 2
    assert report_data._session_refs(row.with_(retrieval=None), None) == []


def test_a_row_written_before_the_contract_keeps_memory_refs_panel_through_its_old_debug():
    row = run_rows.row_of(result_row("q1", target={"name": "memory-ref", "provider": "openai", "model": "m",
                                                       "debug": {"health": {"writer": {"facts": 3},
                                                                            "retrieval": {"ranked": 4},
                                                                            "bypass": {"taken": True}},
                                                                 "reader": {"skipped": "bypass"}}}))
    assert report_data._stages(row) == ["writer: ok — 3 facts, 0 malformed writer lines", "retrieval: ok — 4 ranked",
                                        "bypass: ok — answered", "reader: skipped — the bypass answered"]


def test_a_loop_run_charts_accuracy_over_the_rounds(report_run, tmp_path):
    history = tmp_path / "history_max_effort.md"
    history.write_text("| round | date | correct/n | overall | task-avg | abstention | note |\n|---|---|---|---|---|---|---|\n"
                       "| v1 | 2026-12-01 | 400/500 | 0.8000 | 0.7900 | 0.7000 | base |\n"
                       "| v2 | 2026-12-02 | 450/500 | 0.9000 | 0.8800 | 0.8000 | fix |\n", encoding="utf-8")
    assert scorecard.main(["--run-id", "r1", "--project", str(report_run.project), "--no-charts",
                           "--history", str(history)]) == 0
    page = (report_run.run_dir / "report.html").read_text(encoding="utf-8")
    assert "Accuracy over the loop&#x27;s rounds" in page and page.count("<polyline") == 3


def test_the_loops_jsonl_history_charts_each_type_at_its_baselines_and_after_its_fixes(report_run, tmp_path):
    def step(label, step, figures):
        per_type = {t: {"n": 10, "correct": round(a * 10), "accuracy": a} for t, a in figures.items()}
        return json.dumps({"label": label, "step": step, "overall": 0.8, "task_averaged": 0.8, "abstention": 0.7,
                           "per_type": per_type})
    history = tmp_path / "history.jsonl"
    history.write_text("\n".join([
        step("v1 baseline", "baseline", {"multi-session": 0.5, "temporal-reasoning": 0.7}),
        step("v1 re-test", "re-test", {"multi-session": 0.8, "temporal-reasoning": 0.7}),
        step("v1 decision", "decision", {"multi-session": 0.8, "temporal-reasoning": 0.7}),
        step("v2 baseline", "baseline", {"multi-session": 0.8, "temporal-reasoning": 0.7}),
    ]) + "\n", encoding="utf-8")
    assert scorecard.main(["--run-id", "r1", "--project", str(report_run.project), "--no-charts",
                           "--history", str(history)]) == 0
    page = (report_run.run_dir / "report.html").read_text(encoding="utf-8")
    assert "Per type over the loop&#x27;s rounds" in page
    chart = page[page.index("per-type accuracy over rounds"):]
    assert chart.count("<polyline") == 2 and chart.count('fill="white"') == 2  # 2 types, 1 hollow post-fix point each
    assert "v1 decision" not in chart  # the decision row repeats the re-test figures: not plotted twice


def test_every_report_names_the_dataset_and_what_it_is_in_the_same_words(report_run, capsys):
    """scorecard.md, its terminal copy, metrics.json and report.html: one dataset line (the item fingerprints'
    recognition, not only an exact-bytes match) and one name for the shipped sample."""
    from lme.data import fingerprints

    oracle = next(ref for ref in fingerprints.reference_sets() if ref["variant"] == "_oracle")
    run = run_store.load_run(report_run.run_dir)
    recognition = fingerprints.recognize(oracle["item_sha256"])
    run_store.write_meta(run.path, run.meta.with_(dataset=run.meta.dataset.updated(recognition=recognition)))
    capsys.readouterr()
    assert scorecard.main(["--run-id", "r1", "--project", str(report_run.project), "--no-charts", "--rescore"]) == 0
    terminal = capsys.readouterr().out
    line = "matches the cleaned release (_oracle) on 500/500 items (release: cleaned)"
    name = "synthetic sample in the _s schema, not LongMemEval _s"
    card = json.loads((report_run.run_dir / "metrics.json").read_text())
    assert (card["dataset"]["line"], card["dataset"]["name"]) == (line, name)
    markdown = (report_run.run_dir / "scorecard.md").read_text()
    assert terminal == score_fingerprint.unstamped(markdown) and f"· dataset {line}\n" in markdown and f"({name})" in markdown.splitlines()[0]
    page = (report_run.run_dir / "report.html").read_text(encoding="utf-8")
    status = unescape(re.sub(r"<[^>]+>", "", re.search(r'<p class="status">(.*?)</p>', page, re.S).group(1)))
    assert status.endswith(f"· dataset {line}")
    assert unescape(re.search(r"<title>(.*?)</title>", page).group(1)) == f"LongMemEval report — run r1 ({name})"


def test_the_texts_blob_packed_piece_by_piece_is_the_plain_json_of_the_texts():
    turns = [["user", "I named my cat Luna 😀", 1], ["assistant", "Lovely name.", 0]]
    texts = {"s": [report_data.PackedJson(turns), None, report_data.PackedJson([["user", "x\u2028</script>", 0]])],
             "l": ["a line", None, "ü" * 3000]}
    plain = {"s": [turns, None, [["user", "x\u2028</script>", 0]]], "l": texts["l"]}
    assert report_html.unpack_texts(report_html.pack_texts(texts)) == plain
    assert b"".join(report_html._json_pieces(texts)) == json.dumps(
        plain, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    assert report_html.unpack_texts(report_html.pack_texts({})) == {}


def test_prompts_whose_short_lines_pass_their_share_of_the_budget_show_one_note_per_message(tmp_path):
    """Short lines live inside prompt records and were embedded whole, outside the budget: a memory-ref run's
    writer prompts made a 212 MB page. Now they have a share of the budget; a prompt past it keeps its size and
    shows "not embedded" once per message."""
    from lme.core.records import ChatRequest

    def request(n: int) -> ChatRequest:
        text = "\n".join(f"user: short turn {n}.{i}" for i in range(50))
        return ChatRequest(provider="openai", model="gpt-4o-mini", messages=({"role": "user", "content": text},))

    store_dir = tmp_path / "run"
    store_dir.mkdir()
    keys = prompt_store.PromptStore(store_dir).add([request(1), request(2)])
    store = prompt_store.load(store_dir)
    first_inline = len("\n".join(f"user: short turn 1.{i}" for i in range(50))) - 49
    texts = report_data._Texts(int(first_inline / report_data.INLINE_SHARE) + 1, {}, store)
    kept, cut = (report_data._prompt_view(k, store, texts) for k in keys)
    assert all(isinstance(s, str) for s in kept["messages"][0]["seg"]) and "left_out" not in kept
    assert cut["left_out"] and len(cut["messages"][0]["seg"]) == 1
    note = cut["messages"][0]["seg"][0]
    assert texts.lines[note] is None and texts.line_chars[note] == cut["chars"] == len(request(2).messages[0]["content"])
    assert f"prompt {keys[1]}" in texts.left_out
