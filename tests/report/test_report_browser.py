"""report.html and the diff page in a real headless Chromium, opened from file:// as a user opens them.

One browser for the whole module (Playwright driving Debian's /usr/bin/chromium; tests/run_tests.sh installs it).
Without a browser the tests skip locally and fail under CI. Screenshots at laptop size (1366x768) are saved under
tests/artifacts/ (ignored by git) for review; their paths are printed.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from report_testing import NASTY, make_report_run

CHROMIUM = os.environ.get("LONGMEMEVAL_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
LAPTOP = {"width": 1366, "height": 768}
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"browser tests need {reason} under CI (tests/run_tests.sh installs it)")
    pytest.skip(f"{reason} not available: run tests/run_tests.sh to install it")


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the playwright Python package")
    if not Path(CHROMIUM).is_file():
        _unavailable(f"Chromium ({CHROMIUM})")
    with sync_playwright() as pw:
        instance = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            yield instance
        finally:
            instance.close()


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two runs of the sample against the fake server, scored (report.html) and compared (compare-r1.html)."""
    from lme.cli import scorecard
    from fake_llm_server import FakeLLMServer

    root = tmp_path_factory.mktemp("report-browser")
    server = FakeLLMServer()
    server.start()
    try:
        with pytest.MonkeyPatch.context() as mp:
            for var in ("OPENAI_ORG_ID", "OPENAI_ORGANIZATION"):
                mp.delenv(var, raising=False)
            mp.setenv("HOME", str(root / "home"))
            mp.setenv("LONGMEMEVAL_TIKTOKEN", "0")
            mp.setenv("OPENAI_BASE_URL", server.openai_base_url)
            mp.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
            mp.setenv("OPENAI_API_KEY", "sk-test-DUMMY-openai-key-0000")
            mp.setenv("ANTHROPIC_API_KEY", "sk-ant-test-DUMMY-anthropic-key-0000")
            first = make_report_run(root, server)
            second = make_report_run(root, server, run_id="r2", correct_share=0.9, project=first.project)
            assert scorecard.main(["--run-id", "r2", "--project", str(first.project), "--no-charts",
                                   "--compare", "r1"]) == 0
    finally:
        server.stop()
    return first, second


@pytest.fixture
def page(browser):
    """A fresh laptop-sized page; fails the test on any console error or uncaught exception."""
    context = browser.new_context(viewport=LAPTOP)
    tab = context.new_page()
    problems: list[str] = []
    tab.on("console", lambda msg: problems.append(f"console.{msg.type}: {msg.text}") if msg.type == "error" else None)
    tab.on("pageerror", lambda err: problems.append(f"uncaught: {err}"))
    tab.on("request", lambda req: problems.append(f"network request: {req.url}")
           if not req.url.startswith(("file:", "data:", "about:")) else None)
    yield tab
    context.close()
    assert problems == []


def _shot(tab, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / name
    tab.screenshot(path=str(path))
    print(f"screenshot: {path}")
    return path


def _open(tab, run) -> None:
    tab.goto((run.run_dir / "report.html").as_uri())
    tab.wait_for_selector("#shown-count")


def _visible_rows(tab) -> int:
    return tab.locator("#questions tbody tr:visible").count()


def test_the_table_has_one_row_per_question(page, runs):
    first, _ = runs
    _open(page, first)
    assert page.locator("#questions tbody tr").count() == len(first.rows) == 24
    assert page.inner_text("#shown-count") == "24 of 24 questions shown"
    assert "NOT COMPARABLE" in page.inner_text("#banner")
    _shot(page, "report-overview-1366x768.png")


def test_filters_and_search_change_the_count_shown(page, runs):
    first, _ = runs
    _open(page, first)
    wrong = sum(1 for r in first.rows.values() if r["status"] == "judged" and not r["judgment"]["label"])
    page.select_option("#f-state", "wrong")
    assert page.inner_text("#shown-count") == f"{wrong} of 24 questions shown" and _visible_rows(page) == wrong
    page.select_option("#f-state", "error")
    assert page.inner_text("#shown-count") == "1 of 24 questions shown"
    page.select_option("#f-state", "")
    page.select_option("#f-abs", "yes")
    assert _visible_rows(page) == sum(1 for q in first.rows if "_abs" in q)
    page.select_option("#f-abs", "")
    page.select_option("#f-flaky", "yes")
    assert page.locator("#questions tbody tr:visible").get_attribute("data-qid") == first.flaky_id
    page.select_option("#f-flaky", "")
    page.fill("#f-search", first.nasty_id)
    assert page.inner_text("#shown-count") == "1 of 24 questions shown"


def test_the_drill_down_shows_hypothesis_judge_reply_and_the_exact_prompt(page, runs):
    first, _ = runs
    _open(page, first)
    row = first.rows[first.nasty_id]
    page.click(f'#questions tr[data-qid="{first.nasty_id}"]')
    page.wait_for_selector("#drawer:not([hidden])")
    assert page.inner_text("#d-hyp") == NASTY  # shown as text, not parsed as markup
    assert page.evaluate("window.pwned") is None
    assert page.inner_text("#d-judge-raw") == row["judgment"]["raw"]
    assert page.inner_text("#d-gold") == str(row["answer"])
    page.wait_for_selector("#d-texts[data-ready]")  # the packed texts are unpacked on the first drill-down
    assert row["question"] in page.inner_text(".prompt-text")
    assert page.locator("#d-sessions .session.evidence").count() >= 1
    _shot(page, "report-drilldown-1366x768.png")
    page.keyboard.press("Escape")
    assert page.locator("#drawer").is_hidden()


def test_an_error_row_and_a_deep_link_open_their_question(page, runs):
    first, _ = runs
    page.goto((first.run_dir / "report.html").as_uri() + f"#q={first.error_id}")
    page.wait_for_selector("#drawer:not([hidden])")
    text = page.inner_text("#drawer")
    assert first.error_id in text and "bad_request" in text and "— (no hypothesis)" in page.inner_text("#d-hyp")


def test_the_diff_page_lists_each_flip_side_by_side(page, runs):
    first, second = runs
    page.goto((second.run_dir / "compare-r1.html").as_uri())
    flips = page.locator(".flip")
    assert flips.count() >= 1
    total = flips.count()
    page.select_option("#f-kind", "fix")
    fixes = page.locator(".flip:visible").count()
    assert page.inner_text("#shown-count") == f"{fixes} of {total} flipped questions shown"
    card = page.locator(".flip:visible").first
    qid = card.get_attribute("data-qid")
    sides = card.locator(".side .box")
    assert [sides.nth(0).inner_text(), sides.nth(1).inner_text()] == [
        (first.rows[qid].get("hypothesis") or "— (no hypothesis)"),
        (second.rows[qid].get("hypothesis") or "— (no hypothesis)")]
    _shot(page, "compare-1366x768.png")


def _absolute_paths(text: str, roots: list[str]) -> list[str]:
    """Where ``text`` names one of ``roots`` (the test's temp root, its HOME, the checkout): a path of this machine."""
    return [root for root in roots if root in text]


def test_the_pages_show_the_recognised_dataset_line_and_no_path_of_this_machine(page, runs):
    first, second = runs
    roots = [str(first.project.parent), str(Path.home()), os.environ.get("HOME", "/root"),
             str(Path(__file__).resolve().parents[2])]
    line = next(part for part in (first.run_dir / "scorecard.md").read_text().splitlines()
                if part.startswith("Status:")).rsplit(" · dataset ", 1)[1]
    assert "unrecognised" not in line and line == json.loads((first.run_dir / "metrics.json").read_text())[
        "dataset"]["line"]
    _open(page, first)
    assert page.inner_text("p.status").endswith(f"· dataset {line}")
    assert "synthetic sample in the _s schema, not LongMemEval _s" in page.title()
    page.click(f'#questions tr[data-qid="{first.error_id}"]')
    page.wait_for_selector("#drawer:not([hidden])")
    for text in (page.content(), page.inner_text("body"), (first.run_dir / "report.html").read_text()):
        assert _absolute_paths(text, roots) == []
    page.goto((second.run_dir / "compare-r1.html").as_uri())
    assert page.inner_text(".sub") == ".longmemeval-benchmarks/runs/r1 → .longmemeval-benchmarks/runs/r2"
    assert f"dataset {line}" in page.inner_text("#differences")
    for text in (page.content(), page.inner_text("body"), (second.run_dir / "compare-r1.html").read_text()):
        assert _absolute_paths(text, roots) == []


def test_the_drill_down_says_an_imported_verdict_is_its_authors_claim(page, tmp_path, fake_llm, upstream_prompt):
    """A run scored from an upstream eval-results file: the question's judge block names the file, label only."""
    from lme.cli import judge_shim, run_benchmark
    from run_project import SAMPLE, make_project, register_answers

    items = json.loads(SAMPLE.read_text())
    project = make_project(tmp_path / "p")
    register_answers(fake_llm)
    hyps, published = tmp_path / "h.jsonl", tmp_path / "team.eval-results-gpt-4o"
    hyps.write_text("".join(json.dumps({"question_id": it["question_id"], "hypothesis": "x"}) + "\n" for it in items))
    published.write_text("".join(json.dumps({"question_id": it["question_id"], "hypothesis": "x", "autoeval_label": {
        "model": "gpt-4o-2024-08-06", "label": True}}) + "\n" for it in items))
    assert judge_shim.main(["import-verdicts", str(published), "--project", str(project)]) == 0
    fake_llm.gone_models["gpt-4o-2024-08-06"] = 404
    assert run_benchmark.main(["--project", str(project), "--progress", "quiet", "--yes", "--hypotheses", str(hyps),
                               "--run-id", "imported"]) == 0
    page.goto((project / ".longmemeval-benchmarks" / "runs" / "imported" / "report.html").as_uri())
    page.wait_for_selector("#shown-count")
    assert "imported from team.eval-results-gpt-4o" in page.inner_text("#verdict-sources")
    page.click(f'#questions tr[data-qid="{items[0]["question_id"]}"]')
    assert "imported from team.eval-results-gpt-4o" in page.inner_text("#d-judge-origin")
    assert "author's claim" in page.inner_text("#d-judge-origin")
    assert page.inner_text("#d-judge-raw").startswith("(label only")
