"""Benchmark report.html on the real 499-item `_s` copy: file size, build time, and load / filter / drill-down times
in headless Chromium. Prints figures.

    bash tests/venv_python.sh tests/benchmarks/bench_report_html.py [--max-text-mb 24] [--keep DIR]

1. An offline run of every `_s` item (the offline target ranks all sessions, so rows carry retrieval ids; no model
   call, so no prompt is stored): run time, report build time and size.
2. The same rows with the prompts a full-context reader sends for each item (built with scripts/lme/target_kit/reader.py, as the
   full-context target builds them, and stored through prompt_store as a run's writer does): the store's size on
   disk against the prompts' raw size (each long line once, zlib), then the report's size and times. This is the
   heavy case: ~200 MB of distinct session text that the report must not carry whole.
3. In Chromium (Debian's, through Playwright, from file://), measured in the page with performance.now(): when the
   table is built and usable, first paint, when the whole file is parsed (the packed texts come last), a filter
   change, a search keystroke, when the packed texts are unpacked (on idle after load), and drill-downs; medians of
   3 loads.

Needs ../shared/data/longmemeval/longmemeval_s_cleaned.499of500.json.xz (or LONGMEMEVAL_DATA_DIR) and Chromium;
says "skipped" without them.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from factories import scorecard_of

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path[:0] = [str(REPO / "scripts"), str(REPO / "tests")]

DATA_DIR = Path(os.environ.get("LONGMEMEVAL_DATA_DIR", REPO.parent / "shared" / "data" / "longmemeval"))
S_FILE = DATA_DIR / "longmemeval_s_cleaned.499of500.json.xz"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]


def mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB"


def offline_run(root: Path) -> Path:
    from lme.cli import run_benchmark
    from run_project import make_project, run_dir

    project = make_project(root / "p", dataset=S_FILE, concurrency=2)
    t0 = time.perf_counter()
    code = run_benchmark.main(["--project", str(project), "--offline", "--run-id", "s-offline", "--progress", "quiet",
                               "--no-scorecard"])
    print(f"offline run         {time.perf_counter() - t0:.1f} s for the _s items (exit {code})")
    return run_dir(project, "s-offline")


def with_full_context_prompts(src: Path, dst: Path) -> Path:
    """A copy of run ``src`` whose rows name the prompt a full-context gpt-4o reader would have been sent."""
    import factories
    from lme.store import run_store
    from lme.data import dataset
    from lme.store import prompt_store
    from lme.target_kit import reader
    from lme.core.records import Question

    shutil.copytree(src, dst)
    (dst / run_store.RESULTS_FILE).unlink()
    rows = factories.load_rows(src)
    store = prompt_store.PromptStore(dst)
    raw = 0
    t_build = t_store = 0.0
    for item in dataset.iter_items(S_FILE):
        t0 = time.perf_counter()
        public = Question.from_dict(item).public()
        request = reader.build_reader_request(public, reader.render_history(public.sessions), provider="openai",
                                              model="gpt-4o-2024-08-06")
        t_build += time.perf_counter() - t0
        raw += len(request.messages[0]["content"].encode("utf-8"))
        t0 = time.perf_counter()
        keys = store.add([request])
        t_store += time.perf_counter() - t0
        row = dict(rows[item["question_id"]], prompt_keys=keys)
        factories.append_unmarked(dst, row)
    size = (dst / prompt_store.PROMPTS_FILE).stat().st_size
    print(f"prompts (raw)       {mb(raw)} in {len(rows)} full-context prompts (built in {t_build:.1f} s)")
    print(f"prompts.jsonl       {mb(size)} on disk = {size / raw:.2f} of raw (each long line once, zlib); "
          f"writer time {t_store:.1f} s ({t_store / len(rows) * 1000:.0f} ms per item)")
    return dst


def build(run_path: Path, max_text_mb: float, label: str) -> Path:
    from lme.report import page as report_html
    from lme.store.run_store import load_run

    t0 = time.perf_counter()
    run = load_run(run_path)
    card = scorecard_of(run)
    t1 = time.perf_counter()
    page = report_html.build_report(run, card, max_text_mb=max_text_mb)
    t2 = time.perf_counter()
    path = report_html.write_report(run_path, page)
    size = path.stat().st_size
    data_len = len(page.split('id="lme-data">', 1)[1].split("</script>", 1)[0])
    packed = len(page.split('id="lme-texts"', 1)[1].split("</script>", 1)[0])
    print(f"{label:<19} report.html {mb(size)} (table data {mb(data_len)}, packed texts {mb(packed)}); "
          f"scorecard {t1 - t0:.1f} s, page {t2 - t1:.1f} s")
    return path


READY_JS = """() => [window.lmeReport.readyAt,
    (performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime,
    performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd]"""


def browser_times(paths: list[tuple[str, Path]]) -> None:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("browser             skipped: playwright not installed (bash tests/run_tests.sh installs it)")
        return
    if not Path(CHROMIUM).is_file():
        print(f"browser             skipped: {CHROMIUM} not present")
        return
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        for label, path in paths:
            loads, paints, whole, filters, searches, first_open, later_open, texts_at = [], [], [], [], [], [], [], []
            for attempt in range(3):
                page = browser.new_page(viewport={"width": 1366, "height": 768})
                errors: list[str] = []
                page.on("pageerror", lambda e: errors.append(str(e)))
                page.goto(path.as_uri(), wait_until="load")
                page.wait_for_selector("#shown-count")
                ready, painted, parsed = page.evaluate(READY_JS)
                loads.append(ready)
                paints.append(painted or float("nan"))
                whole.append(parsed)
                filters.append(page.evaluate("""() => { const s = document.getElementById('f-state');
                    const t = performance.now(); s.value = 'wrong'; s.dispatchEvent(new Event('change'));
                    const c = document.getElementById('shown-count').textContent; const dt = performance.now() - t;
                    s.value = ''; s.dispatchEvent(new Event('change')); return dt; }"""))
                searches.append(page.evaluate("""() => { const s = document.getElementById('f-search');
                    const t = performance.now(); s.value = 'gpt4'; s.dispatchEvent(new Event('input'));
                    const dt = performance.now() - t; s.value = ''; s.dispatchEvent(new Event('input')); return dt; }"""))
                ids = page.evaluate("Array.from(document.querySelectorAll('#questions tbody tr')).map(r => r.dataset.qid)")
                texts_at.append(page.evaluate("window.lmeReport.texts().then(() => window.lmeReport.textsAt)"))
                opens = page.evaluate("""async (ids) => { const out = [];
                    for (const id of ids) { const t = performance.now(); window.lmeReport.open(id);
                      await new Promise(r => { const check = () => document.querySelector('#d-texts[data-ready]')
                        ? r() : setTimeout(check, 0); check(); });
                      document.getElementById('drawer').offsetHeight; out.push(performance.now() - t); }
                    return out; }""", ids[:1] + ids[-5:])
                first_open.append(opens[0])
                later_open.extend(opens[1:])
                rows = page.locator("#questions tbody tr").count()
                page.close()
                if errors:
                    print(f"  page errors: {errors[:3]}")
            print(f"{label:<19} {rows} rows; table usable {statistics.median(loads):.0f} ms after navigation start, "
                  f"first paint {statistics.median(paints):.0f} ms, whole file parsed {statistics.median(whole):.0f} ms "
                  f"(medians of 3); filter {statistics.median(filters):.1f} ms, search {statistics.median(searches):.1f} ms, "
                  f"texts unpacked (in the background after load) at {statistics.median(texts_at):.0f} ms; drill-down "
                  f"first {statistics.median(first_open):.0f} ms, later {statistics.median(later_open):.0f} ms")
        browser.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-text-mb", type=float, default=24.0, help="the report's text budget (default 24)")
    parser.add_argument("--keep", type=Path, help="build in this directory and keep it (default: a temp dir)")
    args = parser.parse_args(argv)
    if not S_FILE.exists():
        print(f"skipped: {S_FILE} not present")
        return 0
    root = Path(tempfile.mkdtemp(prefix="bench-report-")) if args.keep is None else args.keep
    root.mkdir(parents=True, exist_ok=True)
    try:
        offline = offline_run(root)
        first = build(offline, args.max_text_mb, "offline run")
        full = with_full_context_prompts(offline, root / "s-full-context")
        second = build(full, args.max_text_mb, "full-context")
        browser_times([("offline run", first), ("full-context", second)])
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
