"""The scorecard record: metrics.json is its ``to_dict`` byte for byte (also for a metrics.json an older version
wrote), every renderer is handed the record and refuses metrics.json's dict, the report modules read attributes,
and the three senses of "official" are told apart on the page."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from lme.report import charts
from lme.report import page_data as report_data
from lme.report import page as report_html
from lme.report import outputs as report_outputs
from lme.report import svg as report_svg
from lme.report import scorecard_md
from lme.score.scorecard_record import Scorecard
from lme.store import run_rows
from lme.store.run_store import load_run
from lme.core import schemas
from lme.core.errors import UserError
from factories import MS, SSU, TR, official_row, write_run, scorecard_of

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def _runs(tmp_path: Path) -> list[Path]:
    retrieval = {"retrieved_session_ids": ["g", "h"], "gold_session_ids": ["g"]}
    truncated = {"name": "full-context", "provider": "openai", "model": "gpt-4o",
                 "debug": {"truncation": {"truncated": True, "dropped_sessions": 1, "dropped_evidence": 0}}}
    return [
        write_run(tmp_path / "clean", [("k1", SSU), ("k2", MS)], [official_row("k1", SSU, True),
                                                                   official_row("k2", MS, False)]),
        write_run(tmp_path / "mixed", [("a1", SSU), ("b2_abs", MS), ("c1", TR)],
                  [official_row("a1", SSU, True, retrieval=retrieval, target=truncated),
                   official_row("b2_abs", MS, None, error_kind="timeout")], status="failed"),
    ]


def test_metrics_json_is_the_records_to_dict_and_reads_back_byte_identical(tmp_path):
    for run in _runs(tmp_path):
        card = scorecard_of(load_run(run))
        text = json.dumps(card.to_dict(), indent=2, ensure_ascii=False)
        schemas.validate("metrics", json.loads(text), where="metrics.json")
        again = Scorecard.from_dict(json.loads(text))
        assert again == card
        assert json.dumps(again.to_dict(), indent=2, ensure_ascii=False) == text


@pytest.mark.parametrize("block, value", [("overall", "0.5"), ("per_type", [1]), ("verdicts", 3)])
def test_a_metrics_json_with_a_block_of_another_shape_is_refused_in_one_line(tmp_path, block, value):
    written = scorecard_of(load_run(_runs(tmp_path)[0])).to_dict()
    with pytest.raises(UserError, match="metrics.json of run .* is not in the scorecard's shape.*re-run the "
                                        "scorecard"):
        Scorecard.from_dict({**written, block: value})


def test_a_metrics_json_of_an_older_version_is_written_back_as_it_was(tmp_path):
    """Blocks it lacks stay absent; keys this version does not know are kept, in their place at the end."""
    old = scorecard_of(load_run(_runs(tmp_path)[0])).to_dict()
    for key in ("verdicts", "empty_hypotheses", "batches", "pipeline_health", "official_estimate"):
        old.pop(key)
    old["written_by"] = "an older version"
    card = Scorecard.from_dict(old)
    assert card.verdicts is None and card.official_verdicts is None and card.official_estimate is None
    assert json.dumps(card.to_dict()) == json.dumps(old)


def test_the_three_senses_of_official_are_named_apart(tmp_path):
    card = scorecard_of(load_run(_runs(tmp_path)[0]))
    assert card.official_judge is True          # the configured judge is the official model
    assert card.official_verdicts is True       # every verdict is the official judge's
    assert card.comparable is False             # ... and yet: 2 items, not the official 500
    assert card.to_dict()["judge"]["official"] is True and card.to_dict()["comparable"] is False


def test_the_status_line_never_says_official_beside_a_not_comparable_banner(tmp_path):
    card = scorecard_of(load_run(_runs(tmp_path)[0]))
    md = scorecard_md.render_markdown(card)
    page = report_html.build_report(load_run(_runs(tmp_path / "again")[0]), card)
    assert "NOT COMPARABLE" in md and "official=" not in md and "official=" not in page
    line = next(line for line in md.splitlines() if line.startswith("Status:"))
    assert "(the official judge model; the run is not comparable: see the notes above)" in line
    assert "(the official judge model; the run is not comparable: see the notes above)" in page


def test_every_renderer_refuses_metrics_jsons_dict(tmp_path):
    run = load_run(_runs(tmp_path)[0])
    as_dict = scorecard_of(run).to_dict()
    calls = [lambda: scorecard_md.render_markdown(as_dict), lambda: report_svg.per_type_chart(as_dict),
             lambda: charts.per_type_figure(as_dict), lambda: report_html.build_report(run, as_dict),
             lambda: report_outputs.write_outputs(tmp_path / "out", as_dict, "", charts=False),
             lambda: report_data.page_data(run, as_dict)]
    for call in calls:
        with pytest.raises((TypeError, AttributeError)):
            call()
    assert not (tmp_path / "out").exists()


def test_charts_reads_a_metrics_file_into_the_record(tmp_path):
    card = scorecard_of(load_run(_runs(tmp_path)[1]))
    path = tmp_path / "metrics.json"
    path.write_text(json.dumps(card.to_dict()))
    assert charts.load_card(path) == card
    path.write_text("{}")
    with pytest.raises(UserError, match="per_type"):
        charts.load_card(path)


def _string_key_reads(path: Path, names: set[str]) -> list[str]:
    """``card["key"]`` / ``card.get("key")`` on a name in ``names``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in names
                and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)):
            found.append(f"{path.name}:{node.lineno}")
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
                and isinstance(node.func.value, ast.Name) and node.func.value.id in names):
            found.append(f"{path.name}:{node.lineno}")
    return found


def test_the_renderers_read_the_scorecards_attributes_not_its_keys():
    report = sorted((SCRIPTS / "lme" / "report").glob("*.py"))
    found = [hit for path in report for hit in _string_key_reads(path, {"card", "scorecard"})]
    assert found == [], f"read the Scorecard's attributes, not metrics.json keys: {found}"


# --------------------------------------------------------------------------- model calls


def test_a_model_call_is_a_record_and_its_row_on_disk_is_unchanged():
    from lme.core.records import CallRecord, Hypothesis
    from lme.core.run_records import ResultRow

    call = {"text": "Paris", "tokensIn": 12, "tokensOut": 2, "latencyMs": 40.5, "provider": "openai",
            "model": "gpt-4o-2024-08-06", "request_id": None, "attempts": 3, "cached": False, "stop_reason": "stop",
            "role": "reader", "a_targets_own_key": {"k": 1}}
    hyp = Hypothesis("Paris", calls=(call,))  # a target may still hand back the dict form
    (record,) = hyp.calls
    assert isinstance(record, CallRecord) and (record.role, record.retries, record.latencyMs) == ("reader", 2, 40.5)
    assert record.to_dict() == call and list(record.to_dict()) == list(call)
    row = official_row("k1", SSU, True, calls=[call, {"model": "m", "cached": True}])
    back = run_rows.row_of(row)
    assert all(isinstance(c, CallRecord) for c in back.calls)
    assert json.dumps(back.to_dict()) == json.dumps(ResultRow.from_dict(back.to_dict()).to_dict())
    assert back.to_dict()["calls"] == row["calls"]
