"""report.html: one self-contained page per run (no network; inline CSS, JS and SVG; data as embedded JSON).

The command (its parser, ``main()`` and help text) is ``lme/cli/report_html.py``."""

from __future__ import annotations

import base64
import json
import zlib
from html import escape
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from lme.data import dataset_label
from lme.report import charts
from lme.report import estimate_text
from lme.score import run_comparison
from lme.core import fileio
from lme.score import metrics
from lme.report import page_data
from lme.report import svg
from lme.report import shown_paths
from lme.score import run_differences
from lme.store import run_store
from lme.report import scorecard_md
from lme.score.comparison_record import Comparison
from lme.score.scorecard_record import Scorecard, require
from lme.core.facts import HISTORY_FILE, HISTORY_RECORDS, QUESTION_TYPES
from lme.report.page_data import DEFAULT_MAX_TEXT_MB, flaky_mark, stability_path, stability_registry
from lme.core.run_records import ResultRow
from lme.store.run_store import RunData, load_run

ASSETS = Path(__file__).resolve().parents[2] / "report_assets"


# --------------------------------------------------------------------------- small pieces


def embed_json(obj: Any) -> str:
    """JSON safe inside ``<script type="application/json">``: no ``</script>``, ``<!--`` or line separators can
    end or confuse the element (``<``, ``>``, ``&`` only ever occur inside JSON strings, so escaping them is
    lossless). ASCII with ``\\u`` escapes: a string of one byte a character (one emoji in tens of MB of data made
    Python hold all of it at four), and U+2028/U+2029 come out escaped."""
    text = json.dumps(obj, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    for raw, safe in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(raw, safe)
    return text


PACK_LEVEL = 1
"""zlib's fastest level: a 200-item oracle page packs in a quarter of level 6's time for a blob about a fifth
larger (measured in tests/benchmarks/bench_tax.py); packing runs after every run, unpacking on the reader's idle."""


def _json(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


def _json_pieces(texts: Mapping[str, Sequence[Any]]) -> Iterator[bytes]:
    """``json.dumps(texts)`` (compact) as UTF-8, one list element at a time (``PackedJson`` elements as they are):
    no string ever holds the whole blob (24 MB of text, four bytes a character once one emoji is in it)."""
    yield b"{"
    for i, (key, values) in enumerate(texts.items()):
        yield (b"," if i else b"") + _json(key) + b":["
        for j, value in enumerate(values):
            piece = value.json_bytes() if isinstance(value, page_data.PackedJson) else _json(value)
            yield (b"," + piece) if j else piece
        yield b"]"
    yield b"}"


def pack_texts(texts: Mapping[str, Sequence[Any]]) -> str:
    """The texts blob (``{name: [element, ...]}``) as base64 of zlib-compressed JSON (about 0.35 of the JSON's
    size): the page's bulk, which the browser decompresses (``DecompressionStream``) only when a drill-down first
    needs it. Compressed as it is serialized, piece by piece."""
    packer = zlib.compressobj(PACK_LEVEL)
    packed = [packer.compress(piece) for piece in _json_pieces(texts)]
    packed.append(packer.flush())
    return base64.b64encode(b"".join(packed)).decode("ascii")


def unpack_texts(blob: str) -> Any:
    return json.loads(zlib.decompress(base64.b64decode(blob)).decode("utf-8"))


def _asset(name: str) -> str:
    return (ASSETS / name).read_text(encoding="utf-8")


def _page(title: str, body: str, data: Any, texts: Any, script: str) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
            "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">"
            f"<title>{escape(title)}</title><style>{_asset('report.css')}</style></head><body>{body}"
            f"<script type=\"application/json\" id=\"lme-data\">{embed_json(data)}</script>"
            f"<script>{_asset('dom.js')}\n{_asset(script)}</script>"  # before the bulk: the table works while the parser reads on
            f"<script type=\"application/octet-stream\" id=\"lme-texts\" data-encoding=\"deflate-base64\">"
            f"{pack_texts(texts)}</script></body></html>\n")


# --------------------------------------------------------------------------- the page


def _figures_html(card: Scorecard) -> str:
    """The scorecard's headline, formatted by the scorecard's own helpers (the same strings as scorecard.md)."""
    ta = card.task_averaged
    n_types = len(ta.types_strict)
    judged_ta = scorecard_md.task_averaged_judged(card)
    parts = [_banner_html(card)]
    big = [("Overall (micro)", card.overall.accuracy_strict, scorecard_md.acc(card.overall, "judged")),
           (f"Task-averaged (macro, {n_types} types)", ta.accuracy_strict, judged_ta),
           ("Abstention (_abs ids)", card.abstention.accuracy_strict, scorecard_md.acc(card.abstention, "judged"))]
    parts.append('<section class="tiles">' + "".join(
        f'<div class="tile"><div class="tile-label">{escape(label)}</div><div class="tile-value">'
        f'{escape(metrics.fmt(value))}</div><div class="tile-sub">strict · judged only {escape(judged)}</div></div>'
        for label, value, judged in big) + "</section>")
    status = (f"Status: <b>{escape(scorecard_md.status_text(card))}</b> · judged {card.judged}/{card.n_total} · "
              f"errors {card.errors} · not run {card.not_run} · judge {escape(scorecard_md.judge_text(card))} · "
              f"dataset {escape(dataset_label.recognition_line(card.dataset.to_dict()))}")
    rows = [
        ("Overall accuracy (micro)", scorecard_md.acc(card.overall, "strict"), scorecard_md.acc(card.overall, "judged")),
        (f"Task-averaged accuracy (macro, {n_types} types)", metrics.fmt(ta.accuracy_strict), judged_ta),
        ("Abstention accuracy (_abs ids)", scorecard_md.acc(card.abstention, "strict"),
         scorecard_md.acc(card.abstention, "judged")),
        *estimate_text.rows(card),
    ]
    table = (f'<table class="figures" id="figures"><thead><tr><th>figure</th><th>strict (all {card.n_total} items; '
             f'errors/not run = wrong)</th><th>judged only ({card.judged} items)</th></tr></thead><tbody>'
             + "".join(f"<tr><td>{escape(a)}</td><td>{escape(b)}</td><td>{escape(c)}</td></tr>" for a, b, c in rows)
             + "</tbody></table>")
    estimated = card.official_estimate is not None
    per_type = ('<table class="figures" id="per-type"><thead><tr><th>question type</th><th>n</th><th>judged</th>'
                '<th>correct</th><th>strict</th><th>judged only</th><th>95% Wilson (strict)</th>'
                + ("<th>estimated for the official judge (strict, not official)</th>" if estimated else "")
                + "</tr></thead><tbody>"
                + "".join(f"<tr><td>{escape(t)}</td><td>{b.n}</td><td>{b.judged}</td><td>{b.correct}</td>"
                          f"<td>{escape(metrics.fmt(b.accuracy_strict))}</td>"
                          f"<td>{escape(metrics.fmt(b.accuracy_judged))}</td>"
                          f"<td>{escape(metrics.fmt_interval(b.wilson_strict))}</td>"
                          + (f"<td>{escape(estimate_text.type_cell(card, t))}</td>" if estimated else "") + "</tr>"
                          for t, b in card.types_present()) + "</tbody></table>")
    ex = card.excluding_gold_errors
    extra = "".join(f'<p class="note" id="official-estimate">{escape(text)}</p>'
                    for text in [estimate_text.note(card)] if text)
    if ex.excluded:
        extra += (f'<p class="note">Excluding {len(ex.excluded)} reported gold error(s) (a second figure; the '
                 f'official one is above): strict overall {escape(scorecard_md.acc(ex.overall, "strict"))}, '
                 f'task-averaged {escape(metrics.fmt(ex.task_averaged.accuracy_strict))}, abstention '
                 f'{escape(scorecard_md.acc(ex.abstention, "strict"))}.</p>')
    code = "".join(f'<p class="note" id="code-versions">{escape(line.replace("**", ""))}</p>'
                   for line in scorecard_md.code_lines(card))
    return (f'<p class="status">{status}</p>' + code + "".join(parts) + '<section class="cols"><div>' + table + extra
            + _money_html(card) + "</div><div>" + per_type + "</div></section>")


def _banner_html(card: Scorecard) -> str:
    """NOT COMPARABLE with every reason, or the line saying the figures stand beside published ones."""
    if card.comparability_notes:
        return ('<section class="banner" id="banner"><strong>NOT COMPARABLE with published LongMemEval '
                'results:</strong><ul>' + "".join(f"<li>{escape(n)}</li>" for n in card.comparability_notes)
                + "</ul></section>")
    return ('<section class="banner ok" id="banner"><strong>Comparable with published LongMemEval '
            'results</strong> (official judge and prompt, known dataset file, complete run, no errors).'
            '</section>')


def _money_html(card: Scorecard) -> str:
    """Cost, latency and cache hits in one line, then where the verdicts came from (scorecard.md's strings)."""
    usage = card.usage
    lat, cache = usage.latency_ms, usage.cache
    money = (f'<p class="note">Cost {escape(scorecard_md.cost_text(card))} '
             f'({escape(scorecard_md.cost_split(card))}) · latency generation p50 '
             f'{escape(scorecard_md.ms(lat.generation.p50))}, p95 {escape(scorecard_md.ms(lat.generation.p95))}'
             f' · cache hits {cache.generation_calls_cached}/{cache.generation_calls} '
             f'generation calls, {cache.judge_cached}/{card.judged} judge calls'
             f'{escape(scorecard_md.archive_hits(card))}</p>')
    sources = scorecard_md.verdict_lines(card)
    if sources:
        money += ('<section class="note" id="verdict-sources">' + "".join(f"<p>{escape(line)}</p>" for line in sources)
                  + "</section>")
    return money


def _charts_html(card: Scorecard, questions: Sequence[Mapping[str, Any]],
                 history: Sequence[Mapping[str, Any]] | None) -> str:
    costs = [q["cost"] for q in questions if q.get("cost") is not None]
    lat = [q["lat"] / 1000 for q in questions if q.get("lat") is not None]
    charts = [svg.per_type_chart(card),
              svg.histogram(costs, title="Cost per item (USD)", fmt="${:.4f}",
                            empty="no paid calls (every known cost is $0)" if costs else "no priced items"),
              svg.histogram(lat, title="Generation latency per item", fmt=svg.seconds)]
    if history:
        charts.append(svg.history_chart(history))
        if any(isinstance(r.get("per_type"), Mapping) for r in history):
            charts.append(svg.per_type_history_chart(history))
    return '<section class="charts" id="charts">' + "".join(f'<div class="chart-box">{c}</div>' for c in charts) + "</section>"


def build_report(run: RunData, card: Scorecard, *, project: Path | None = None,
                 history: Sequence[Mapping[str, Any]] | None = None, max_text_mb: float = DEFAULT_MAX_TEXT_MB
                 ) -> str:
    """The report page of ``run`` for ``card`` (``scoring.build_scorecard`` of the same run)."""
    card = require(card)
    data, texts = page_data.page_data(run, card, project=project, max_text_mb=max_text_mb)
    title = f"LongMemEval report — run {run.run_id} ({scorecard_md.dataset_name(card)})"
    target = card.target
    body = (f'<header><h1>{escape(title)}</h1><p class="sub">target {escape(str(target.name))} '
            f'{escape(str(target.provider))}:{escape(str(target.model))} · {card.n_total} questions · '
            f'<a href="#questions-section">questions ↓</a></p></header><main>' + _figures_html(card) + _charts_html(card, data["questions"], history)
            + '<section id="notes"></section>'
            + '<section class="questions" id="questions-section"><h2>Questions</h2><div class="filters" id="filters"></div>'
              '<div class="table-wrap"><table id="questions"><thead></thead><tbody></tbody></table></div></section>'
              '</main><aside id="drawer" hidden></aside>')
    return _page(title, body, data, texts, "report.js")


def write_report(run_dir: Path, html_text: str) -> Path:
    return write_page(Path(run_dir) / run_store.REPORT_FILE, html_text)


# --------------------------------------------------------------------------- the diff page


def compare_page(result: Comparison, before: RunData, after: RunData,
                 registry: Mapping[tuple[str, str, str], Mapping[str, Any]] | None = None,
                 project: Path | None = None) -> str:
    """The diff page of ``run_comparison.compare(before, after)``: its figures (McNemar included) as computed there,
    what differs between the runs, and every flipped question side by side. Paths relative to ``project`` (default:
    the after run's)."""
    a, b = result.run_a, result.run_b
    root = shown_paths.project_of(after, project)
    registry = registry or {}
    title = f"LongMemEval comparison — {a.run_id} (before) → {b.run_id} (after)"
    banner = ""
    if result.is_judge_comparison:
        line = escape(run_comparison.judge_comparison_line(result))
        banner = f'<section class="banner"><strong>{line}</strong></section>'
    if result.forced:
        banner += ('<section class="banner"><strong>FORCED comparison of runs made differently — not a like-for-like '
                   'result:</strong><ul>' + "".join(f"<li>{escape(m)}</li>" for m in result.mismatches)
                   + "</ul></section>")
    tiles = [("Accuracy on the compared items", f"{metrics.fmt(result.accuracy_a)} → {metrics.fmt(result.accuracy_b)}",
              f"{result.n_compared} items judged in both"),
             ("Fixes (wrong → right)", str(result.fixes), f"regressions {result.regressions}"),
             ("Net change", f"{result.net:+d}", f"{result.both_right} both right, {result.both_wrong} both wrong"),
             ("Exact McNemar p (two-sided)", f"{result.p_value:.4g}",
              "significant at 0.05" if result.p_value < 0.05 else "not significant at 0.05")]
    tiles_html = '<section class="tiles">' + "".join(
        f'<div class="tile"><div class="tile-label">{escape(l)}</div><div class="tile-value">{escape(v)}</div>'
        f'<div class="tile-sub">{escape(s)}</div></div>' for l, v, s in tiles) + "</section>"
    per_type = ('<table class="figures" id="per-type"><thead><tr><th>type</th><th>n</th><th>fixes</th>'
                '<th>regressions</th><th>net</th></tr></thead><tbody>'
                + "".join(f"<tr><td>{escape(t)}</td><td>{v.n}</td><td>{v.fixes}</td><td>{v.regressions}"
                          f"</td><td>{v.net:+d}</td></tr>" for t, v in result.per_type.items() if v.n)
                + "</tbody></table>")
    flips = []
    for c in result.changed:
        qid = c.question_id
        ra, rb = before.rows.get(qid), after.rows.get(qid)
        flaky = c.flaky
        if flaky is None:  # a comparison made before flips were marked
            flaky = bool(flaky_mark(ra, registry) or flaky_mark(rb, registry))
        question = (rb.question if rb else None) or (ra.question if ra else None)
        gold = rb.answer if rb else (ra.answer if ra else None)
        flips.append({"id": qid, "type": c.question_type, "fix": bool(c.after), "flaky": bool(flaky),
                      "q": question, "gold": gold,
                      "sides": [_side(ra, c.before_status), _side(rb, c.after_status)]})
    data = {"a": a.run_id, "b": b.run_id, "flips": flips,
            "types": [t for t in QUESTION_TYPES if any(f["type"] == t for f in flips)]}
    datasets = (f"dataset {a.dataset}" if a.dataset == b.dataset
                else f"datasets: before {a.dataset}; after {b.dataset}")
    runs = (f'<p class="note" id="differences">{escape(run_differences.describe_runs(result))}'
            f' · {escape(datasets)}</p>')
    outside = result.not_compared.describe()
    body = (f'<header><h1>{escape(title)}</h1><p class="sub">{escape(shown_paths.shown(a.path, root))} → '
            f'{escape(shown_paths.shown(b.path, root))}</p></header>'
            f'<main>{banner}{runs}{tiles_html}<section class="cols"><div>{per_type}</div><div><p class="note" '
            'id="not-compared">The figures count the items both runs judged. '
            + (f'Not compared: {escape(outside)}.' if outside else 'Every item of both runs was compared.')
            + '</p></div></section>'
            '<section class="questions"><h2>Flipped questions</h2><div class="filters" id="filters"></div>'
            '<div id="flips"></div></section></main>')
    return _page(title, body, data, {}, "compare.js")


def _side(row: ResultRow | None, status: str) -> dict[str, Any]:
    verdict = None if row is None else row.judgment
    return {"status": status, "label": None if verdict is None else verdict.label,
            "hyp": None if row is None else row.hypothesis, "raw": None if verdict is None else verdict.raw,
            "judge_model": None if verdict is None else verdict.model,
            "err": None if row is None or row.error is None else row.error.to_dict(),
            "cost": None if row is None or row.cost is None else row.cost.total_usd,
            "lat": None if row is None else row.latencyMs}


def build_compare(before_dir: Path, after_dir: Path, *, force: bool = False, project: Path | None = None,
                  judge_comparison: bool = False) -> tuple[str, Path, Comparison]:
    """The diff page of two runs (``run_comparison.compare``, which refuses unlike runs unless ``force``), where it
    goes by default (``AFTER/compare-<before run id>.html``) and the comparison it shows. Nothing is written."""
    result = run_comparison.compare(Path(before_dir), Path(after_dir), force=force, judge_comparison=judge_comparison)
    before, after = load_run(Path(before_dir)), load_run(Path(after_dir))
    registry = stability_registry(stability_path(after.path, project))
    page = compare_page(result, before, after, registry, project)
    return page, Path(after_dir) / run_store.compare_page_name(before.run_id), result


def write_page(path: Path, html_text: str) -> Path:
    fileio.write_atomic_bytes(Path(path), html_text.encode("utf-8"))
    return Path(path)


def loop_history(run: RunData, project: Path | None, history: Path | None = None) -> list[dict[str, Any]] | None:
    """Rounds for the accuracy-over-rounds chart: ``history`` when given, else the project's loop history when
    the run was made by the loop (``--loop``); None otherwise or when it holds no round."""
    if history is None and project is not None and run.meta.settings.get("loop"):
        records, table = Path(project) / HISTORY_RECORDS, Path(project) / HISTORY_FILE
        history = records if records.is_file() else table if table.is_file() else None  # JSONL: per-type too
    return (charts.load_history(history) or None) if history is not None else None


# --------------------------------------------------------------------------- CLI
