"""A run's dollars, the memory system's part apart from the judge's: the tokens a user's system reports are priced at
the target model (or shown unpriced, never $0), and the scorecard and run_status say the same figures for a run."""

from __future__ import annotations

import pytest

from lme.cli import run_benchmark
from lme.report import scorecard_md
from lme.run import status as run_status
from lme.store.run_store import load_run
from run_project import make_project, register_answers, run_dir
from factories import scorecard_of

ITEMS = 3
SYSTEM = "def generate(item, ctx):\n    return {'hypothesis': 'no idea', 'tokensIn': 900, 'tokensOut': 5}\n"


def reporting_run(tmp_path, fake_llm, model: str):
    (tmp_path / "mine.py").write_text(SYSTEM)
    project = make_project(tmp_path / "p", target="python", targetProvider="openai", targetModel=model,
                           targetOptions={"path": str(tmp_path / "mine.py")})
    register_answers(fake_llm)
    assert run_benchmark.main(["--project", str(project), "--progress", "quiet", "--no-scorecard", "--yes",
                               "--max", str(ITEMS), "--run-id", "r"]) == 0
    root = run_dir(project, "r")
    return scorecard_of(load_run(root)), run_status.collect(root, project)


def test_reported_tokens_at_a_known_model_are_priced_and_both_reports_agree(tmp_path, fake_llm):
    card, status = reporting_run(tmp_path, fake_llm, "gpt-4o-mini")
    generation = ITEMS * (900 * 0.15 + 5 * 0.60) / 1e6
    assert card.cost.generation_usd == pytest.approx(generation) == status.generation_usd
    assert card.cost.judge_usd == pytest.approx(status.judge_usd) and status.judge_usd > 0
    assert card.cost.total_usd == pytest.approx(status.spent_usd)
    assert scorecard_md.cost_split(card) == status.spent_split


def test_reported_tokens_at_an_unknown_model_are_unpriced_and_the_judges_part_still_shows(tmp_path, fake_llm):
    card, status = reporting_run(tmp_path, fake_llm, "my-own-model")
    assert card.cost.total_usd is None and status.spent_usd is None
    assert card.cost.generation_usd is None and status.generation_usd is None
    assert card.cost.rows_unknown_generation == ITEMS
    assert card.cost.judge_usd == pytest.approx(status.judge_usd) and status.judge_usd > 0  # not $0 on either
    assert f"memory system unpriced for {ITEMS} row(s)" in status.spent_split
    assert scorecard_md.cost_split(card) == status.spent_split
    assert status.spent_split in run_status.format_line(status)
    assert status.spent_split in "\n".join(scorecard_md.cost_lines(card))
