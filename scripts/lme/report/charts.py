"""PNG charts for a scorecard: per-type accuracy with Wilson intervals, and accuracy over loop rounds.

The command (its parser, ``main()`` and help text) is ``lme/cli/charts.py``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Mapping, Sequence

from lme.core import bounded_json
from lme.core import fileio

from lme.core.errors import UserError
from lme.core.fileio import write_atomic_bytes
from lme.score import fingerprint as score_fingerprint
from lme.score.metrics import Figures
from lme.score.scorecard_record import Scorecard, require

SHORT_TYPE_NAMES = {
    "single-session-user": "SS-user",
    "single-session-assistant": "SS-assistant",
    "single-session-preference": "SS-preference",
    "multi-session": "multi-session",
    "temporal-reasoning": "temporal",
    "knowledge-update": "knowledge-upd.",
}


def _figure(width: float, height: float) -> tuple[Any, Any]:
    """A matplotlib figure and its one axes (the object API: no pyplot state, nothing to close)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height))
    return fig, fig.subplots()


def _save_atomic(fig: Any, out_png: Path, fingerprint: str | None = None) -> Path:
    """The PNG of ``fig``, written atomically; with ``fingerprint`` (of what the chart was made from) recorded in
    its Description text chunk (``score_fingerprint.recorded`` reads it back)."""
    import io

    out_png = Path(out_png)
    fileio.make_dirs(out_png.parent)
    buffer = io.BytesIO()
    metadata = None if fingerprint is None else {"Description": score_fingerprint.stamp(fingerprint)}
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight", metadata=metadata)
    write_atomic_bytes(out_png, buffer.getvalue())
    return out_png


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_card(data: Any, where: str = "the scorecard") -> None:
    """Refuse a metrics.json (its parsed ``data``) the per-type chart cannot draw, naming what is missing
    (UserError, one line)."""
    fix = "pass a run's metrics.json as scorecard.py writes it (re-run scorecard.py for the run)"
    if not isinstance(data, Mapping) or not isinstance(data.get("per_type"), Mapping):
        raise UserError(f"{where} has no per_type block: not a scorecard", fix=fix)
    for key in ("overall", "task_averaged"):
        if not isinstance(data.get(key), Mapping) or "accuracy_strict" not in data[key]:
            raise UserError(f"{where} has no {key}.accuracy_strict: not a scorecard", fix=fix)
    for name, block in data["per_type"].items():
        ok = isinstance(block, Mapping) and _is_number(block.get("n"))
        if ok and block["n"] > 0:
            bounds = block.get("wilson_strict")
            ok = (_is_number(block.get("accuracy_strict")) and isinstance(bounds, Sequence) and len(bounds) == 2
                  and all(_is_number(b) for b in bounds))
        if not ok:
            raise UserError(f"{where}: per_type.{name} lacks n, accuracy_strict or a [low, high] wilson_strict",
                            fix=fix)


def error_bar_lengths(value: float, bounds: Sequence[float]) -> tuple[float, float]:
    """Lengths below and above ``value``; never negative (a bound off by 1e-16 at 0 or 1 would make matplotlib
    refuse the whole chart)."""
    return max(0.0, value - bounds[0]), max(0.0, bounds[1] - value)


TARGET_ACCURACY = 0.95
"""The loop's goal (>= 475/500): drawn on every per-type chart."""


def per_type_chart(card: Scorecard, out_png: Path) -> Path:
    """Bar chart of strict per-type accuracy with 95% Wilson error bars, the overall and macro lines and the 95%
    target; a partial run (items not judged) also gets judged-only bars beside the strict ones. The legend sits
    below the axes, so it never covers a bar."""
    return _save_atomic(per_type_figure(card), out_png, card.fingerprint)


def per_type_figure(card: Scorecard) -> Any:
    """``per_type_chart``'s matplotlib figure (tests measure where its texts land)."""
    card = require(card)
    per_type = card.per_type
    names = [t for t, _ in card.types_present()]
    partial = any(per_type[t].judged < per_type[t].n for t in names)
    width = 0.4 if partial else 0.8
    strict_x = [i - width / 2 if partial else i for i in range(len(names))]
    fig, ax = _figure(8, 4.6)
    _bars(ax, strict_x, [per_type[t] for t in names], "strict", width, "#4C72B0",
          "strict (errors/not run = wrong)")
    if partial:
        _bars(ax, [i + width / 2 for i in range(len(names))], [per_type[t] for t in names], "judged", width,
              "#8DA0CB", "judged-only (judged items)")
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels([f"{SHORT_TYPE_NAMES.get(t, t)}\n(n={per_type[t].n})" for t in names], fontsize=8)
    overall = card.overall.accuracy_strict
    macro = card.task_averaged.accuracy_strict
    if overall is not None:
        ax.axhline(overall, color="#C44E52", linestyle="--", label=f"overall (micro, strict) {overall:.3f}")
    if macro is not None:
        ax.axhline(macro, color="#55A868", linestyle=":", label=f"task-averaged (macro, strict) {macro:.3f}")
    ax.axhline(TARGET_ACCURACY, color="#555555", linestyle="-.", linewidth=1,
               label=f"target {TARGET_ACCURACY:.0%}")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("accuracy")
    ax.set_title(f"LongMemEval per-type accuracy — run {card.run_id} (95% Wilson intervals)", fontsize=9)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3, frameon=False)
    return fig


def _bars(ax: Any, xs: Sequence[float], blocks: Sequence[Figures], kind: str, width: float, color: str,
          label: str) -> None:
    """One bar per type: ``kind`` ``strict`` or ``judged`` accuracy with its Wilson interval (a type with no
    judged item draws no judged bar)."""
    points = [(x, b.accuracy(kind), b.wilson_strict if kind == "strict" else b.wilson_judged)
              for x, b in zip(xs, blocks) if b.accuracy(kind) is not None]
    if not points:
        return
    errors = [error_bar_lengths(v, w) if isinstance(w, Sequence) and len(w) == 2 else (0.0, 0.0)
              for _, v, w in points]
    ax.bar([p[0] for p in points], [p[1] for p in points], width=width, color=color, label=label,
           yerr=[[e[0] for e in errors], [e[1] for e in errors]], capsize=3)


_ROUND_ROW = re.compile(r"^\|\s*(v\d+)\s*\|")


def _number(cell: str) -> float | None:
    match = re.search(r"-?\d+(?:\.\d+)?", cell)
    if not match:
        return None
    value = float(match.group())
    return value / 100 if "%" in cell or value > 1 else value


def load_history(path: Path) -> list[dict[str, Any]]:
    """Rounds as ``[{"label", "overall", "task_averaged", "abstention"}]``.

    Reads the loop's Markdown table (``| v<N> | date | correct/n | overall | task-avg | abstention | note |``) or a
    JSON/JSONL file of objects with ``label`` (or ``round``), ``overall``, ``task_averaged``, ``abstention``.
    """
    path = Path(path)
    if not path.exists():
        raise UserError(f"history file {path} does not exist", fix="pass the loop's history_max_effort.md")
    try:
        text = fileio.read_text(path, max_bytes=bounded_json.STATE.document_bytes)
    except (OSError, UserError) as err:
        raise UserError(f"cannot read history file {path}: {err}", fix="pass the loop's history_max_effort.md") from None
    rounds: list[dict[str, Any]] = []
    if path.suffix == ".md":
        for line in text.splitlines():
            if not _ROUND_ROW.match(line.strip()):
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) < 6:
                continue
            rounds.append({"label": cells[0], "overall": _number(cells[3]),
                           "task_averaged": _number(cells[4]), "abstention": _number(cells[5])})
        return rounds
    fix = "pass a .md history table or JSON lines"
    records = bounded_json.loads(text, f"history file {path}", fix=fix) if text.lstrip().startswith("[") else [
        bounded_json.loads(line, f"history file {path}:{n}", fix=fix)
        for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not isinstance(records, list) or not all(isinstance(rec, dict) for rec in records):
        raise UserError(f"history file {path} must hold JSON objects (one per round)",
                        fix="pass a .md history table or JSON lines of objects")
    for i, rec in enumerate(records):
        rounds.append({"label": str(rec.get("label", rec.get("round", i))), "overall": rec.get("overall"),
                       "task_averaged": rec.get("task_averaged"), "abstention": rec.get("abstention"),
                       **{k: rec[k] for k in ("step", "per_type") if isinstance(rec.get(k), (str, dict))}})
    return rounds


def history_chart(rounds: Sequence[Mapping[str, Any]], out_png: Path) -> Path:
    """Line chart of overall, task-averaged and abstention accuracy over rounds."""
    if not rounds:
        raise UserError("the history holds no rounds to chart", fix="run at least one logged round first")
    fig, ax = _figure(8, 4)
    x = list(range(len(rounds)))
    for key, label in (("overall", "overall (micro)"), ("task_averaged", "task-averaged (macro)"),
                       ("abstention", "abstention")):
        points = [(i, r[key]) for i, r in zip(x, rounds) if r.get(key) is not None]
        if points:
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=label)
    ax.set_xticks(x)
    ax.set_xticklabels([str(r["label"]) for r in rounds], fontsize=8, rotation=45)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("accuracy")
    ax.set_title("LongMemEval accuracy over rounds", fontsize=9)
    ax.legend(fontsize=8, loc="lower right")
    return _save_atomic(fig, out_png)


def load_card(path: Path) -> Scorecard:
    """A metrics.json checked to be a scorecard the chart can draw; anything else is a one-line UserError naming
    the file."""
    data = fileio.read_json(Path(path), fix="re-run scorecard.py for the run")
    check_card(data, str(path))
    return Scorecard.from_dict(data)
