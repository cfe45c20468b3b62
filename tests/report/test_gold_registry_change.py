"""The figure excluding gold errors says when the gold-error registry changed since the run was last scored."""

from __future__ import annotations

import json

from lme.cli import scorecard
from lme.data import gold_registry
from factories import MS, SSU, TR, official_row, write_run

ITEMS = {"370a8ff4": TR, "a1": SSU, "a2": SSU, "b1": MS}


def _run(tmp_path):
    rows = [official_row("370a8ff4", TR, True), official_row("a1", SSU, True), official_row("a2", SSU, False),
            official_row("b1", MS, False)]
    return write_run(tmp_path / "run", ITEMS, rows)


def _score(run_dir, capsys) -> tuple[dict, str]:
    assert scorecard.main([str(run_dir), "4", "_s", "run", "--no-charts", "--no-html", "--rescore"]) == 0
    capsys.readouterr()
    return (json.loads((run_dir / "metrics.json").read_text()),
            (run_dir / "scorecard.md").read_text())


def test_a_rescore_with_another_registry_says_how_the_figure_moved(tmp_path, capsys, monkeypatch):
    run_dir = _run(tmp_path)
    real = gold_registry.load()
    monkeypatch.setattr(gold_registry, "load", lambda *a, **k: [])
    before, md = _score(run_dir, capsys)
    assert before["excluding_gold_errors"]["registry"] == gold_registry.identity([])
    assert "registry changed" not in md
    monkeypatch.setattr(gold_registry, "load", lambda *a, **k: real)
    after, md = _score(run_dir, capsys)
    ex = after["excluding_gold_errors"]
    assert ex["registry"] == gold_registry.identity(real) and ex["registry"]["items"] == len(real) > 0
    assert ex["registry_change"] == {"items_before": 0, "items_now": len(real), "strict_before": 0.5,
                                     "strict_now": 1 / 3}
    assert (f"the gold-error registry changed since this run was last scored (0 items before, {len(real)} now): "
            "this figure moved from 0.5000 to 0.3333") in md
    again, md = _score(run_dir, capsys)  # scored again with the same registry: nothing changed since
    assert "registry_change" not in again["excluding_gold_errors"] and "registry changed" not in md


def test_the_registry_identity_ignores_order_and_layout_but_not_entries():
    entries = gold_registry.load()
    assert gold_registry.identity(list(reversed(entries))) == gold_registry.identity(entries)
    assert gold_registry.identity(entries[1:])["sha256"] != gold_registry.identity(entries)["sha256"]


def test_a_metrics_json_of_an_older_version_gets_no_note(tmp_path, capsys):
    run_dir = _run(tmp_path)
    first, _ = _score(run_dir, capsys)
    del first["excluding_gold_errors"]["registry"]
    (run_dir / "metrics.json").write_text(json.dumps(first))
    after, md = _score(run_dir, capsys)
    assert "registry_change" not in after["excluding_gold_errors"] and "registry changed" not in md
