"""Inline SVG charts for report.html, drawn here (no chart library): per-type accuracy with Wilson intervals and the
target line, a histogram (cost, latency), and accuracy over the loop's rounds.

Every function returns one ``<svg>`` element as a string; text is escaped; sizes are in CSS pixels and the
``viewBox`` lets the chart shrink with its column.

Labels never sit on a bar or a line: the labels of horizontal lines (target, overall) go in a gutter right of the
plot, spread apart when their lines are close; a bar's value goes above its whisker unless a line or another label
is there, then above that line, else inside the bar; a histogram's p50/p95 labels go in two rows above the plot.
``text_box`` is the box a label is given (the tests check the drawings with it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape
from typing import Any, Mapping, Sequence

from lme.report.charts import SHORT_TYPE_NAMES
from lme.score.official_estimate import quantile
from lme.score.scorecard_record import Scorecard, require

TARGET_ACCURACY = 0.95
"""The loop's goal on the full N=500 (judged accuracy)."""
BAR = "#4c72b0"
TARGET = "#c44e52"
OVERALL = "#2f7d4f"
MUTED = "#6b7280"
GRID = "#e5e7eb"
SERIES = ("#4c72b0", "#dd8452", "#55a868", "#8172b3", "#937860", "#da8bc3")


def _svg(width: int, height: int, body: Sequence[str], label: str) -> str:
    return (f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
            f'aria-label="{escape(label)}" xmlns="http://www.w3.org/2000/svg">' + "".join(body) + "</svg>")


CHAR_WIDTH = 0.62
"""A character's width as a share of the font size (a generous bound for the sans-serif digits and letters used)."""


def text_box(x: float, y: float, text: str, size: float, anchor: str = "middle") -> tuple[float, float, float, float]:
    """``(left, top, right, bottom)`` of a label drawn at ``x`` (per ``anchor``) with its baseline at ``y``."""
    width = len(text) * size * CHAR_WIDTH
    left = x - width / 2 if anchor == "middle" else x - width if anchor == "end" else x
    return left, y - size * 0.8, left + width, y + size * 0.25


def _overlaps(a: tuple[float, float, float, float], b: tuple[float, float, float, float], pad: float = 1.0) -> bool:
    return a[0] < b[2] + pad and b[0] < a[2] + pad and a[1] < b[3] + pad and b[1] < a[3] + pad


def _spread(ys: Sequence[float], gap: float, low: float, high: float) -> list[float]:
    """``ys`` moved apart to at least ``gap`` (in their order, kept within ``[low, high]``): labels of close lines."""
    order = sorted(range(len(ys)), key=lambda i: ys[i])
    placed = [0.0] * len(ys)
    last = low - gap
    for i in order:
        placed[i] = max(ys[i], last + gap)
        last = placed[i]
    overflow = last - high
    if overflow > 0:
        for i in order:
            placed[i] = max(low, placed[i] - overflow)
    return placed


def _text(x: float, y: float, text: str, *, size: int = 11, anchor: str = "middle", color: str = "#111827",
          weight: str = "normal") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" fill="{color}" '
            f'font-weight="{weight}">{escape(text)}</text>')


def _line(x1: float, y1: float, x2: float, y2: float, color: str, *, width: float = 1, dash: str = "") -> str:
    dashed = f' stroke-dasharray="{dash}"' if dash else ""
    return (f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{color}" '
            f'stroke-width="{width}"{dashed}/>')


def _y_axis(left: float, top: float, plot_h: float, right: float) -> list[str]:
    out = []
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        y = top + plot_h * (1 - tick)
        out.append(_line(left, y, right, y, GRID))
        out.append(_text(left - 6, y + 4, f"{tick:.2f}", size=10, anchor="end", color=MUTED))
    return out


def per_type_chart(card: Scorecard) -> str:
    """Strict accuracy per question type, 95% Wilson intervals as whiskers, the 95% target and overall lines (their
    labels in the right gutter), each bar's value where nothing else is drawn."""
    card = require(card)
    names = [t for t, _ in card.types_present()]
    width, height, left, top, bottom, right = 640, 280, 44, 36, 46, 92
    plot_w, plot_h = width - left - right, height - top - bottom
    body = _y_axis(left, top, plot_h, width - right)

    def y_of(v: float) -> float:
        return top + plot_h * (1 - max(0.0, min(1.0, v)))

    lines = [("target 95%", y_of(TARGET_ACCURACY), TARGET, "6 4", 1.5)]
    overall = card.overall.accuracy_strict
    if overall is not None:
        lines.append((f"overall {overall:.3f}", y_of(overall), OVERALL, "2 3", 1.2))
    label_ys = _spread([y + 4 for _, y, *_ in lines], 12, top + 4, top + plot_h)
    for (label, y, color, dash, stroke), label_y in zip(lines, label_ys):
        body += [_line(left, y, width - right, y, color, width=stroke, dash=dash),
                 _text(width - right + 4, label_y, label, size=10, anchor="start", color=color)]
    line_ys = [y for _, y, *_ in lines]
    taken: list[tuple[float, float, float, float]] = []
    slot = plot_w / max(1, len(names))
    for i, name in enumerate(names):
        block = card.per_type[name]
        value = block.accuracy_strict or 0.0
        x = left + slot * i + slot * 0.18
        w = slot * 0.64
        body.append(f'<rect x="{x:.1f}" y="{y_of(value):.1f}" width="{w:.1f}" height="{top + plot_h - y_of(value):.1f}"'
                    f' fill="{BAR}" rx="2"><title>{escape(name)}: {value:.4f} strict '
                    f'({block.correct}/{block.n})</title></rect>')
        low, high = block.wilson_strict or (value, value)
        cx = x + w / 2
        body += [_line(cx, y_of(high), cx, y_of(low), "#111827", width=1.4),
                 _line(cx - 6, y_of(high), cx + 6, y_of(high), "#111827", width=1.4),
                 _line(cx - 6, y_of(low), cx + 6, y_of(low), "#111827", width=1.4)]
        label_y, inside = _value_label_y(_ValueLabel(f"{value:.3f}", cx, (y_of(high), y_of(low)), y_of(value)),
                                         top + plot_h, top, line_ys, taken)
        taken.append(text_box(cx, label_y, f"{value:.3f}", 10))
        body += [_text(cx, label_y, f"{value:.3f}", size=10, color="white" if inside else "#111827"),
                 _text(cx, top + plot_h + 16, SHORT_TYPE_NAMES.get(name, name), size=10),
                 _text(cx, top + plot_h + 30, f"n={block.n}", size=10, color=MUTED)]
    body.append(_text(left, 14, "Strict accuracy per question type (95% Wilson intervals)", size=12,
                      anchor="start", weight="bold"))
    return _svg(width, height, body, "accuracy per question type")


@dataclass(frozen=True)
class _ValueLabel:
    """A bar's value label to place: its text, the bar's centre x, the whisker's ends (top, bottom) and the top of
    the bar (SVG y, downwards)."""

    text: str
    cx: float
    whisker: tuple[float, float]
    bar_top: float


def _value_label_y(label: _ValueLabel, base: float, ceiling: float, line_ys: Sequence[float],
                   taken: Sequence[tuple[float, float, float, float]]) -> tuple[float, bool]:
    """Where a bar's value label goes (its baseline, and whether it is inside the bar): above the whisker when no
    line and no other label is there; else just above the line in the way (while it stays in the plot); else inside
    the bar, below the whisker's low end."""
    whisker = label.whisker

    def free(y: float) -> bool:
        box = text_box(label.cx, y, label.text, 10)
        return (box[1] >= ceiling - 10 and not (box[1] - 2 <= whisker[1] and whisker[0] <= box[3] + 2)
                and not any(box[1] - 2 <= ly <= box[3] + 2 for ly in line_ys)
                and not any(_overlaps(box, other) for other in taken))

    above = whisker[0] - 5
    for y in [above] + sorted((ly - 5 for ly in line_ys if ly - 5 < above), reverse=True):
        if free(y):
            return y, False
    inside = max(label.bar_top, whisker[1]) + 13
    for y in [inside] + [ly + 13 for ly in sorted(line_ys) if ly + 13 > inside]:
        if y + 3 < base and free(y):
            return y, True
    return above, False


def seconds(value: float) -> str:
    """A duration in seconds as people read it: ms below one second."""
    return f"{value * 1000:.0f} ms" if abs(value) < 1 else f"{value:.2f} s"


def histogram(values: Sequence[float], *, title: str, unit: str = "", fmt: Any = "{:.2f}", bins: int = 24,
              empty: str = "no values") -> str:
    """Counts of ``values`` in equal-width bins, with p50 and p95 marked; ``empty`` when there is nothing to
    show (no values, or all of them 0). ``fmt`` is a format string or a function of one value."""
    fmt_one = fmt if callable(fmt) else fmt.format
    width, height, left, top, bottom, right = 380, 216, 40, 48, 38, 12
    plot_w, plot_h = width - left - right, height - top - bottom
    body = [_text(left - 30, 14, title, size=12, anchor="start", weight="bold")]
    data = sorted(float(v) for v in values if v is not None and math.isfinite(float(v)))
    if not data or not any(data):
        body.append(_text(width / 2, height / 2, empty, color=MUTED))
        return _svg(width, height, body, title)
    lo, hi = data[0], data[-1]
    span = (hi - lo) or max(abs(hi), 1e-9)
    counts = [0] * bins
    for v in data:
        counts[min(bins - 1, int((v - lo) / span * bins))] += 1
    peak = max(counts)
    bar_w = plot_w / bins
    for i, c in enumerate(counts):
        if not c:
            continue
        h = plot_h * c / peak
        body.append(f'<rect x="{left + i * bar_w + 0.5:.1f}" y="{top + plot_h - h:.1f}" width="{bar_w - 1:.1f}" '
                    f'height="{h:.1f}" fill="{BAR}"><title>{c} item(s): {escape(fmt_one(lo + i * span / bins))} to '
                    f'{escape(fmt_one(lo + (i + 1) * span / bins))} {escape(unit)}</title></rect>')
    body += [_line(left, top + plot_h, width - right, top + plot_h, MUTED),
             _text(left, top + plot_h + 14, fmt_one(lo), size=10, anchor="start", color=MUTED),
             _text(width - right, top + plot_h + 14, f"{fmt_one(hi)} {unit}".strip(), size=10, anchor="end",
                   color=MUTED),
             _text(left - 4, top + 8, str(peak), size=10, anchor="end", color=MUTED)]
    for row, (name, q, color) in enumerate((("p50", 0.5, OVERALL), ("p95", 0.95, TARGET))):
        v = quantile(data, q)
        x = left + plot_w * (v - lo) / span
        label = f"{name} {fmt_one(v)}"
        label_w = len(label) * 10 * CHAR_WIDTH
        body += [_line(x, top, x, top + plot_h, color, width=1.3, dash="4 3"),
                 _text(max(left, min(x - label_w / 2, width - right - label_w)), top - 18 + 12 * row, label,
                       size=10, anchor="start", color=color)]  # two rows above the plot: never on a bar or a line
    body.append(_text((left + width - right) / 2, height - 6, f"{len(data)} items", size=10, color=MUTED))
    return _svg(width, height, body, title)


PER_TYPE_STEPS = ("baseline", "re-test", "revert")
"""The history steps the per-type chart plots: each round's baseline, its post-fix figure, and a revert."""


def per_type_history_chart(rounds: Sequence[Mapping[str, Any]]) -> str:
    """Per question type, its strict accuracy at each round's baseline and after its fix (re-test; revert),
    from ``history.jsonl``. A re-test point is drawn hollow: it mixes pre-fix and re-tested rows."""
    steps = [r for r in rounds if r.get("step") in PER_TYPE_STEPS and isinstance(r.get("per_type"), Mapping)]
    types = list(dict.fromkeys(t for r in steps for t in r["per_type"]))
    width, height, left, top, bottom, right = 600, 260, 44, 56, 40, 12
    plot_w, plot_h = width - left - right, height - top - bottom
    body = _y_axis(left, top, plot_h, width - right)
    body.append(_text(left, 14, "Per type over the loop's rounds: baseline (filled) and after the fix (hollow)",
                      size=12, anchor="start", weight="bold"))
    n = len(steps)

    def x_of(i: int) -> float:
        return left + (plot_w * (i + 0.5) / n if n else 0)

    def y_of(v: float) -> float:
        return top + plot_h * (1 - max(0.0, min(1.0, v)))

    for k, qtype in enumerate(types):
        color = SERIES[k % len(SERIES)]
        points = [(x_of(i), y_of(float(r["per_type"][qtype]["accuracy"])), r.get("step"))
                  for i, r in enumerate(steps)
                  if isinstance(r["per_type"].get(qtype), Mapping) and r["per_type"][qtype].get("accuracy") is not None]
        if len(points) > 1:
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y, _ in points)
            body.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="1.5"/>')
        body += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{color if step == "baseline" else "white"}" '
                 f'stroke="{color}"/>' for x, y, step in points]
        lx, ly = left + 8 + (k % 3) * 180, 28 + (k // 3) * 12
        body += [_line(lx, ly - 4, lx + 18, ly - 4, color, width=2), _text(lx + 22, ly, qtype, size=10, anchor="start")]
    step = max(1, math.ceil(n / 8))
    for i, r in enumerate(steps):
        if i % step == 0 or i == n - 1:
            body.append(_text(x_of(i), top + plot_h + 16, str(r.get("label")), size=9, color=MUTED))
    return _svg(width, height, body, "per-type accuracy over rounds")


def history_chart(rounds: Sequence[Mapping[str, Any]]) -> str:
    """Overall, task-averaged and abstention accuracy per round of the loop, with the 95% target."""
    width, height, left, top, bottom, right = 600, 240, 44, 40, 40, 70
    plot_w, plot_h = width - left - right, height - top - bottom
    body = _y_axis(left, top, plot_h, width - right)
    body.append(_text(left, 14, "Accuracy over the loop's rounds (history_max_effort.md)", size=12, anchor="start",
                      weight="bold"))
    n = len(rounds)

    def x_of(i: int) -> float:
        return left + (plot_w * (i + 0.5) / n if n else 0)

    def y_of(v: float) -> float:
        return top + plot_h * (1 - max(0.0, min(1.0, v)))

    y = y_of(TARGET_ACCURACY)
    body += [_line(left, y, width - right, y, TARGET, width=1.5, dash="6 4"),
             _text(width - right + 4, y + 4, "target 95%", size=10, anchor="start", color=TARGET)]  # the gutter
    series = (("overall", "overall (micro)"), ("task_averaged", "task-averaged (macro)"), ("abstention", "abstention"))
    for k, (key, label) in enumerate(series):
        color = SERIES[k]
        points = [(x_of(i), y_of(float(r[key]))) for i, r in enumerate(rounds) if r.get(key) is not None]
        if len(points) > 1:
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
            body.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"/>')
        body += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{color}"/>' for x, y in points]
        lx = left + 8 + k * 170
        body += [_line(lx, 28, lx + 18, 28, color, width=2), _text(lx + 22, 32, label, size=10, anchor="start")]
    step = max(1, math.ceil(n / 16))
    for i, r in enumerate(rounds):
        if i % step == 0 or i == n - 1:
            body.append(_text(x_of(i), top + plot_h + 16, str(r.get("label")), size=10, color=MUTED))
    return _svg(width, height, body, "accuracy over rounds")
