"""The report's SVG charts place every label where it can be read: read back from the SVG, no label box overlaps a
bar, a drawn line or another label (grid lines aside), and every label stays inside the chart."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

import pytest

from lme.report import svg as report_svg
from lme.score.scorecard_record import Scorecard

NS = "{http://www.w3.org/2000/svg}"
Box = tuple[float, float, float, float]
CHAR_WIDTH = 0.62
"""A character's width as a share of the font size: a generous bound for the digits and letters the charts use."""


def text_box(x: float, y: float, text: str, size: float, anchor: str) -> Box:
    """The box of a label drawn at ``x`` (per ``anchor``) with its baseline at ``y``."""
    width = len(text) * size * CHAR_WIDTH
    left = x - width / 2 if anchor == "middle" else x - width if anchor == "end" else x
    return left, y - size * 0.8, left + width, y + size * 0.25


def _shapes(svg: str) -> dict[str, Any]:
    root = ET.fromstring(svg)
    width, height = (float(v) for v in root.get("viewBox").split()[2:])
    labels, bars, lines = [], [], []
    for el in root.iter():
        if el.tag == f"{NS}text":
            size = float(el.get("font-size"))
            box = text_box(float(el.get("x")), float(el.get("y")), el.text or "", size, el.get("text-anchor") or "start")
            labels.append((el.text, box, el.get("fill")))
        elif el.tag == f"{NS}rect":
            x, y = float(el.get("x")), float(el.get("y"))
            bars.append((x, y, x + float(el.get("width")), y + float(el.get("height"))))
        elif el.tag == f"{NS}line" and el.get("stroke") != report_svg.GRID:
            x1, y1, x2, y2 = (float(el.get(k)) for k in ("x1", "y1", "x2", "y2"))
            lines.append((min(x1, x2), min(y1, y2), max(x1, x2), max(y1, y2)))
    return {"size": (width, height), "labels": labels, "bars": bars, "lines": lines}


def _overlap(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _inside(a: Box, b: Box) -> bool:
    return b[0] <= a[0] and a[2] <= b[2] and b[1] <= a[1] and a[3] <= b[3]


def collisions(svg: str) -> list[str]:
    """What a reader could not read: labels on bars (unless drawn white, wholly inside one), on lines, on each other,
    or outside the chart."""
    shapes = _shapes(svg)
    width, height = shapes["size"]
    found = []
    labels = shapes["labels"]
    for i, (text, box, fill) in enumerate(labels):
        if box[0] < 0 or box[1] < 0 or box[2] > width or box[3] > height:
            found.append(f"{text!r} leaves the chart {box}")
        for bar in shapes["bars"]:
            if _overlap(box, bar) and not (fill == "white" and _inside(box, bar)):
                found.append(f"{text!r} on a bar {bar}")
        for line in shapes["lines"]:  # a line is a box of no width or height; touching the label's box counts
            if line[0] <= box[2] and box[0] <= line[2] and line[1] <= box[3] and box[1] <= line[3]:
                found.append(f"{text!r} on a line {line}")
        for other, obox, _ in labels[i + 1:]:
            if _overlap(box, obox):
                found.append(f"{text!r} on {other!r}")
    return found


def _card(values: dict[str, float], overall: float) -> dict[str, Any]:
    per_type = {}
    for name, value in values.items():
        half = 0.0 if value in (0.0, 1.0) else 0.06
        per_type[name] = {"n": 50, "correct": round(value * 50), "accuracy_strict": value,
                          "wilson_strict": [max(0.0, value - half - 0.03), min(1.0, value + half)]}
    return {"per_type": per_type, "overall": {"accuracy_strict": overall}, "run_id": "r"}


TYPES = ("single-session-user", "single-session-assistant", "single-session-preference", "multi-session",
         "temporal-reasoning", "knowledge-update")
PER_TYPE_CASES = {
    # the overall line crosses the first bar (its label used to sit on that bar), a value just under the target
    "overall-through-the-first-bar": _card(dict(zip(TYPES, (0.90, 0.97, 0.5, 0.62, 0.41, 0.80))), 0.70),
    # values and whiskers right at the target and the overall lines, a perfect type next to the title
    "values-at-the-lines": _card(dict(zip(TYPES, (0.89, 1.0, 0.95, 0.955, 0.9, 0.0))), 0.93),
    # the overall line a hair from the target line: their labels must not stack
    "overall-at-the-target": _card(dict(zip(TYPES, (0.96, 0.94, 0.95, 0.97, 0.93, 0.95))), 0.951),
    "everything-low": _card(dict(zip(TYPES, (0.05, 0.1, 0.02, 0.0, 0.07, 0.12))), 0.06),
    "one-type": _card({"multi-session": 0.8}, 0.8),
}


@pytest.mark.parametrize("name", sorted(PER_TYPE_CASES))
def test_per_type_chart_labels_sit_on_no_bar_line_or_label(name):
    assert collisions(report_svg.per_type_chart(Scorecard.from_dict(PER_TYPE_CASES[name]))) == []


def test_per_type_chart_still_shows_every_value_and_both_line_labels():
    svg = report_svg.per_type_chart(Scorecard.from_dict(PER_TYPE_CASES["values-at-the-lines"]))
    texts = [t for t, _, _ in _shapes(svg)["labels"]]
    for value in ("0.890", "1.000", "0.950", "0.955", "0.900", "0.000", "target 95%", "overall 0.930"):
        assert value in texts


@pytest.mark.parametrize("values", [
    [0.1] * 40 + [0.2] * 3 + [0.9],                        # p50 in the tallest bar
    [float(i % 7) for i in range(200)],                     # p50 and p95 close together, tall bars everywhere
    [1.0] * 99 + [50.0],                                    # both quantiles at the left edge
    [0.001 * i for i in range(1000)],                       # an even spread: bars under both labels
])
def test_histogram_quantile_labels_sit_above_the_bars(values):
    svg = report_svg.histogram(values, title="Generation latency per item", fmt=report_svg.seconds)
    assert collisions(svg) == []
    texts = [t for t, _, _ in _shapes(svg)["labels"]]
    assert any(t.startswith("p50 ") for t in texts) and any(t.startswith("p95 ") for t in texts)


def test_history_chart_target_label_is_off_the_plot():
    rounds = [{"label": f"v{i}", "overall": 0.9 + i * 0.01, "task_averaged": 0.95, "abstention": 0.96}
              for i in range(6)]
    shapes = _shapes(report_svg.history_chart(rounds))
    target = next(box for text, box, _ in shapes["labels"] if text == "target 95%")
    plot_right = max(line[2] for line in shapes["lines"])
    assert target[0] > plot_right


def test_the_collision_check_sees_a_label_on_a_bar_and_on_a_line():
    svg = ('<svg viewBox="0 0 100 100" xmlns="http://www.w3.org/2000/svg">'
           '<rect x="10" y="10" width="20" height="80"/><line x1="0" y1="50" x2="100" y2="50" stroke="red"/>'
           '<text x="20" y="30" font-size="10" text-anchor="middle">0.9</text>'
           '<text x="60" y="53" font-size="10" text-anchor="start">x</text></svg>')
    assert [c.split(" on ")[1].split()[0] for c in collisions(svg)] == ["a", "a"]
