"""Score a run and write what scoring makes: ``metrics.json``, ``scorecard.md``, the charts, ``report.html`` and a
diff page, each replaced atomically; the Markdown (or metrics.json) on stdout, the files written on stderr.

A run scored before and unchanged since (``score_fingerprint``: its files, dataset, project state, the scoring
code) is not scored again: its outputs are reused and printed, once every one of them records that fingerprint (a
kill between two writes leaves an old page behind: it is made again). ``scorecard.py`` is the command; the run's
driver and the loop's decisions score through here too.

The charts are SVG files drawn by ``report_svg`` (the same drawings as the page's); PNGs (matplotlib, about a second
of imports and drawing) only when asked for (``png=True``, ``scorecard.py --png``).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from lme.core import fileio, schemas
from lme.report import page as report_html
from lme.report import svg as report_svg
from lme.store import run_store
from lme.score import run_differences
from lme.score import fingerprint
from lme.score import scoring_inputs
from lme.core.errors import UserError
from lme.store.run_layout import HISTORY_SVG, PER_TYPE_SVG
from lme.store.run_store import load_run
from lme.report.scorecard_md import render_markdown
from lme.score.scoring import build_scorecard
from lme.score.scorecard_record import GoldExclusion, Scorecard, require
from lme.report import charts as charts_mod


def _write_svg(path: Path, svg: str, fp: str | None = None) -> Path:
    fileio.write_atomic_bytes(path, fingerprint.stamped(svg, fp).encode("utf-8"))
    return path


def write_outputs(run_dir: Path, card: Scorecard, markdown: str, *, charts: bool = True,
                  history: Path | None = None, png: bool = False) -> list[Path]:
    """metrics.json, scorecard.md and (unless ``charts`` is False) the SVG charts under charts/, and with ``png``
    the same charts as PNGs, all written atomically; the pages made from ``card`` record its fingerprint."""
    card = require(card)
    run_dir = Path(run_dir)
    chart_dir = run_store.charts_dir(run_dir)
    if charts and chart_dir.exists() and not chart_dir.is_dir():
        raise UserError(f"{chart_dir} is a file, not the charts folder", fix="move it away, or pass --no-charts")
    rounds = charts_mod.load_history(history) if charts and history is not None else None
    if rounds is not None and not rounds:
        raise UserError("the history holds no rounds to chart", fix="run at least one logged round first")
    metrics_json = card.to_dict()
    schemas.validate("metrics", metrics_json, where=f"metrics for run {card.run_id}")
    written = run_store.write_scorecard_files(run_dir, metrics_json, fingerprint.stamped(markdown, card.fingerprint))
    if charts:
        chart_dir.mkdir(parents=True, exist_ok=True)
        written.append(_write_svg(chart_dir / PER_TYPE_SVG, report_svg.per_type_chart(card), card.fingerprint))
        if rounds is not None:
            written.append(_write_svg(chart_dir / HISTORY_SVG, report_svg.history_chart(rounds)))
        if png:
            written.append(charts_mod.per_type_chart(card, chart_dir / run_store.PER_TYPE_CHART))
            if rounds is not None:
                written.append(charts_mod.history_chart(rounds, chart_dir / run_store.HISTORY_CHART))
    return written


@dataclass(frozen=True)
class ScoreOptions:
    """What ``scorecard.py`` asks of one scoring: ``n_total``, ``variant``, ``run_id`` (the four-argument form's
    overrides), the output format, which files to write (``charts``, ``html``, ``png``: the charts as PNGs too),
    ``history`` (the loop's history file), ``compare`` (also the diff page against that run: id or directory),
    ``force`` (compare unlike runs) and ``rescore`` (score again though nothing changed)."""

    n_total: int | None = None
    variant: str | None = None
    run_id: str | None = None
    fmt: str = "md"
    charts: bool = True
    html: bool = True
    history: Path | None = None
    compare: str | None = None
    force: bool = False
    rescore: bool = False
    png: bool = False


def score_run(run_dir: Path, project: Path, options: ScoreOptions = ScoreOptions()) -> int:
    n_total, variant, run_id, fmt, charts, html, history, compare, force, rescore, png = (
        getattr(options, f.name) for f in fields(options))
    run_store.refuse_links(run_dir)  # a planted link in the run folder: one line before anything is read or written
    reuse = None if compare or history else fingerprint.fingerprint(  # --rescore too: the next call reuses
        run_dir, project, {"n_total": n_total, "variant": variant, "run_id": run_id, "html": html, "charts": charts,
                           "png": png})
    if reuse is not None and not rescore and fingerprint.current(run_dir, reuse, html=html, charts=charts,
                                                                 png=png):
        out = run_store.METRICS_FILE if fmt == "json" else run_store.SCORECARD_FILE
        print(fingerprint.unstamped((run_dir / out).read_text(encoding="utf-8")), end="")
        print(f"unchanged since it was last scored: {run_dir / run_store.METRICS_FILE} (--rescore scores it again)",
              file=sys.stderr)
        return 0
    run = load_run(run_dir)
    card = build_scorecard(run, n_total, variant=variant, run_id=run_id,
                           inputs=scoring_inputs.for_run(run_dir, project))
    card = noting_registry_change(card, run_dir)
    if reuse is not None:
        card = card.with_fingerprint(reuse)
    markdown = render_markdown(card)
    # The pages are built before anything is written: a bad --history, OTHER_RUN or unlike runs write nothing.
    page = None if not html else fingerprint.stamped(report_html.build_report(
        run, card, project=project, history=report_html.loop_history(run, project, history)), card.fingerprint)
    comparison = None
    if compare:
        other = Path(compare) if Path(compare).is_dir() else run_store.run_dir_for(run_store.runs_dir(project), compare)
        comparison = report_html.build_compare(other, run_dir, force=force, project=project)
    written = write_outputs(run_dir, card, markdown, charts=charts, history=history, png=png)
    if page is not None:
        written.append(report_html.write_report(run_dir, page))
    if comparison is not None:
        written.append(report_html.write_page(comparison[1], comparison[0]))
    print(json.dumps(card.to_dict(), indent=2, ensure_ascii=False) if fmt == "json" else markdown, end="\n"
          if fmt == "json" else "")
    print(f"wrote {', '.join(str(p) for p in written)}", file=sys.stderr)
    if comparison is not None:  # for people, after the scorecard: what the diff page holds, in one line
        print(run_differences.summary_line(comparison[2]), file=sys.stderr)
    return 0


def noting_registry_change(card: Scorecard, run_dir: Path) -> Scorecard:
    """``card`` noting, beside its figure excluding gold errors, that the gold-error registry changed since the
    run's metrics.json (read before it is rewritten) was written; unchanged when there is none or it is unreadable."""
    try:
        before = json.loads((run_dir / run_store.METRICS_FILE).read_text(encoding="utf-8"))
        previous = GoldExclusion.from_dict(before["excluding_gold_errors"])
    except (OSError, ValueError, LookupError, TypeError, AttributeError):
        return card
    return replace(card, excluding_gold_errors=card.excluding_gold_errors.since(previous))


def project_run_dir(project: Path, run_id: str) -> Path:
    """The project's run ``run_id`` (UserError when there is none)."""
    run_dir = run_store.run_dir_for(run_store.runs_dir(project), run_id)
    if not run_dir.is_dir():
        raise UserError(f"no run {run_id!r} at {run_dir}", fix="list runs in .longmemeval-benchmarks/runs/")
    return run_dir


def score_project_run(project: Path, run_id: str, **options: Any) -> int:
    """``score_run`` of the project's run ``run_id`` (what ``scorecard.py --run-id RUN_ID --project P`` does);
    ``options``: ``ScoreOptions``' fields by name."""
    return score_run(project_run_dir(project, run_id), project, ScoreOptions(**options))
