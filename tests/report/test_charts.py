"""charts: PNGs are written (atomically, Agg backend) and the loop's history table is read back."""

from __future__ import annotations

import json

import pytest

from lme.report import charts
from lme.cli import charts as charts_cli
from lme.score import metrics
from lme.score.scorecard_record import Scorecard
from lme.core.errors import UserError

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _card() -> dict:
    types = {"a": "single-session-user", "b": "single-session-user", "c": "multi-session"}
    return {"run_id": "r1", **metrics.score({"a": True, "b": False, "c": True}, types).to_dict()}


def test_per_type_chart_writes_a_png_and_leaves_no_temp_file(tmp_path):
    out = charts.per_type_chart(Scorecard.from_dict(_card()), tmp_path / "charts" / "per-type.png")
    assert out.read_bytes()[:8] == PNG_MAGIC
    assert [p.name for p in out.parent.iterdir()] == ["per-type.png"]


def test_history_table_of_the_loop_is_read(tmp_path):
    history = tmp_path / "history_max_effort.md"
    history.write_text(
        "| round | date | correct/n | overall | task-avg | abstention | note |\n"
        "|---|---|---|---|---|---|---|\n"
        "| v0 | 2026-11-28 | 400/500 | 0.8000 | 0.7900 | 0.9000 | baseline |\n"
        "| v1 | 2026-11-29 | 410/500 | 0.8200 | n/a | 0.9333 | fix temporal |\n"
        "BLOCKED: API billing\n")
    rounds = charts.load_history(history)
    assert rounds == [
        {"label": "v0", "overall": 0.8, "task_averaged": 0.79, "abstention": 0.9},
        {"label": "v1", "overall": 0.82, "task_averaged": None, "abstention": 0.9333},
    ]
    out = charts.history_chart(rounds, tmp_path / "h.png")
    assert out.read_bytes()[:8] == PNG_MAGIC


def test_history_jsonl_is_read(tmp_path):
    history = tmp_path / "h.jsonl"
    history.write_text(json.dumps({"round": "v3", "overall": 0.5, "task_averaged": 0.4, "abstention": 1}) + "\n")
    assert charts.load_history(history) == [{"label": "v3", "overall": 0.5, "task_averaged": 0.4, "abstention": 1}]


def test_empty_or_missing_history_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="does not exist"):
        charts.load_history(tmp_path / "nope.md")
    with pytest.raises(UserError, match="no rounds"):
        charts.history_chart([], tmp_path / "h.png")


def test_cli_writes_both_charts(tmp_path, capsys):
    card = tmp_path / "metrics.json"
    card.write_text(json.dumps(_card()))
    history = tmp_path / "h.jsonl"
    history.write_text('{"label": "v0", "overall": 0.5}\n')
    assert charts_cli.main([str(card), str(tmp_path / "out"), "--history", str(history)]) == 0
    assert (tmp_path / "out" / "per-type-accuracy.png").exists()
    assert (tmp_path / "out" / "accuracy-over-rounds.png").exists()


@pytest.mark.parametrize("bounds, value", [
    ([0.8864956, 0.9999999999999999], 1.0),   # 30/30: the upper bound falls 1e-16 short of the accuracy
    ([1e-17, 0.1135044], 0.0),                # 0/30: the lower bound lies 1e-17 above it
])
def test_a_perfect_or_zero_score_with_an_inexact_wilson_bound_still_charts(tmp_path, bounds, value):
    card = _card()
    card["per_type"]["single-session-preference"] = {
        **card["per_type"]["single-session-user"], "n": 30, "accuracy_strict": value, "wilson_strict": bounds}
    out = charts.per_type_chart(Scorecard.from_dict(card), tmp_path / "per-type.png")
    assert out.read_bytes()[:8] == PNG_MAGIC


def test_error_bar_lengths_are_never_negative():
    assert charts.error_bar_lengths(1.0, [0.9, 0.9999999999999999]) == (pytest.approx(0.1), 0.0)
    assert charts.error_bar_lengths(0.0, [1e-17, 0.1]) == (0.0, 0.1)


@pytest.mark.parametrize("content, needle", [
    ("{}", "per_type"),
    ('{"per_type": {}, "overall": {}}', "overall.accuracy_strict"),
    ('{"per_type": {"x": {"n": 3}}, "overall": {"accuracy_strict": 1}, '
     '"task_averaged": {"accuracy_strict": 1}}', "per_type.x"),
    ("[1, 2]", "per_type"),
    ("{not json", "not valid JSON"),
])
def test_a_metrics_file_that_is_not_a_scorecard_is_one_line_exit_2(tmp_path, capsys, content, needle):
    from lme.core.errors import run_main

    card = tmp_path / "metrics.json"
    card.write_text(content)
    assert run_main(charts_cli.main, [str(card), str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert needle in err and str(card) in err and err.count("\n") == 1
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name, content", [("h.md", b"\xff\xfe| v0 |"), ("h.jsonl", b"[1, 2]\n")])
def test_an_unreadable_history_is_a_user_error(tmp_path, name, content):
    history = tmp_path / name
    history.write_bytes(content)
    with pytest.raises(UserError, match="history file"):
        charts.load_history(history)


def test_the_png_charts_texts_sit_clear_of_the_plot_and_of_each_other():
    """Measured with matplotlib's own renderer: the legend (below the axes) covers neither the plot nor the type
    labels under it, and the title stays above the plot."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    card = _card()
    fig = charts.per_type_figure(Scorecard.from_dict(card))
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    ax = fig.axes[0]
    plot = ax.get_window_extent(renderer)
    legend = ax.get_legend().get_window_extent(renderer)
    ticks = [t.get_window_extent(renderer) for t in ax.get_xticklabels() if t.get_text()]
    title = ax.title.get_window_extent(renderer)
    assert not legend.overlaps(plot) and not any(legend.overlaps(t) for t in ticks)
    assert title.y0 >= plot.y1 - 1
