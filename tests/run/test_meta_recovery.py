"""A run whose run-meta.json is missing or broken is resumed only under the settings its rows recorded (issue 38,
finding 5): never from today's config alone, so rows of two models are never scored as one run."""

from __future__ import annotations

import hashlib
import json
import shlex
from pathlib import Path

import pytest

from lme.cli import run_benchmark
from lme.core.errors import run_main
from lme.core import config
from run_project import judged_rows, make_project, register_answers, run_dir

READER = "gpt-4o-mini"
"""The reader the run's rows were made with; today's config names another (``OTHER_READER``)."""
OTHER_READER = "gpt-4.1-mini"


def run(project, *args):
    return run_main(run_benchmark.main, ["--project", str(project), "--progress", "quiet",
                                         "--no-scorecard", *args])


def tree(project: Path) -> dict[str, str]:
    """Every file under the project's state folder by sha256 (the cache aside: it is not the run's)."""
    state = project / ".longmemeval-benchmarks"
    return {str(p.relative_to(state)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(state.rglob("*")) if p.is_file() and "cache" not in p.relative_to(state).parts}


def half_done(tmp_path, fake_llm) -> Path:
    """Run ``m`` on 3 items with READER, then its last row and mark undone: one item pending for a resume."""
    register_answers(fake_llm)
    project = make_project(tmp_path / "p", targetModel=READER)
    assert run(project, "--run-id", "m", "--max", "3") == 0
    for name in ("item-results.jsonl", "questions_completed.jsonl"):
        path = run_dir(project, "m") / name
        lines = path.read_text().splitlines(keepends=True)
        path.write_text("".join(lines[:2]))
    return project


def today_config_names(project: Path, **changes) -> None:
    cfg = config.load_config(project)
    cfg.update(changes)
    config.write_config(project, cfg, force=True)


BREAKS = {
    "missing": lambda path: path.unlink(),
    "empty": lambda path: path.write_text(""),
    "not JSON": lambda path: path.write_text('{"runId": "m", "status": '),
    "not a run-meta": lambda path: path.write_text('{"hello": 1}'),
}


@pytest.mark.parametrize("how", list(BREAKS))
def test_a_resume_without_a_readable_run_meta_under_another_reader_is_refused_and_writes_nothing(
        tmp_path, fake_llm, capsys, how):
    project = half_done(tmp_path, fake_llm)
    BREAKS[how](run_dir(project, "m") / "run-meta.json")
    today_config_names(project, targetModel=OTHER_READER)
    before = tree(project)
    capsys.readouterr()
    assert run(project, "--run-id", "m") == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert "run m" in err and "run-meta.json" in err and "Traceback" not in err
    assert f"--target-model openai:{READER}" in err and "--judge-model openai:" in err  # the way out: the rows' own
    assert "delete" not in err.lower()
    assert tree(project) == before
    assert {r["target"]["model"] for r in judged_rows(project, "m")} == {READER}


@pytest.mark.parametrize("how", ["missing", "empty"])
def test_a_resume_with_the_models_its_rows_recorded_goes_on_and_makes_its_run_meta_again(
        tmp_path, fake_llm, capsys, how):
    project = half_done(tmp_path, fake_llm)
    meta_path = run_dir(project, "m") / "run-meta.json"
    BREAKS[how](meta_path)
    today_config_names(project, targetModel=OTHER_READER)
    capsys.readouterr()
    assert run(project, "--run-id", "m", "--target-model", f"openai:{READER}", "--judge-model", "openai:gpt-4o") == 0
    err = capsys.readouterr().err
    assert "run m:" in err and "run-meta.json" in err and "made again" in err
    meta = json.loads(meta_path.read_text())
    assert meta["target"]["model"] == READER and meta["counts"]["pending"] == 0
    rows = judged_rows(project, "m")
    assert len(rows) == 3 and {r["target"]["model"] for r in rows} == {READER}
    kept = meta_path.with_name("run-meta.json.broken")
    assert kept.exists() == (how == "empty") and (how != "empty" or kept.read_text() == "")


def test_a_resume_without_a_run_meta_that_names_no_models_is_refused_even_when_the_config_matches(
        tmp_path, fake_llm, capsys):
    project = half_done(tmp_path, fake_llm)
    (run_dir(project, "m") / "run-meta.json").unlink()
    before = tree(project)
    capsys.readouterr()
    assert run(project, "--run-id", "m") == 2
    err = capsys.readouterr().err
    assert "never from the config" in err and f"--target-model openai:{READER}" in err
    assert tree(project) == before


def test_rows_of_two_readers_without_a_run_meta_are_refused_whatever_the_settings(tmp_path, fake_llm, capsys):
    project = half_done(tmp_path, fake_llm)
    results = run_dir(project, "m") / "item-results.jsonl"
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    rows[1]["target"]["model"] = OTHER_READER
    results.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (run_dir(project, "m") / "run-meta.json").unlink()
    before = tree(project)
    capsys.readouterr()
    assert run(project, "--run-id", "m", "--target-model", f"openai:{READER}") == 2
    err = capsys.readouterr().err
    assert "more than one" in err and READER in err and OTHER_READER in err and "new run" in err
    assert tree(project) == before


def test_a_broken_run_meta_is_reported_without_advice_to_delete_it(tmp_path):
    from lme.core.errors import UserError
    from lme.store import run_store

    directory = tmp_path / "r"
    directory.mkdir()
    (directory / "run-meta.json").write_text("")
    with pytest.raises(UserError) as err:
        run_store.read_meta(directory)
    assert "run-meta.json" in str(err.value) and "delete it" not in str(err.value).replace("never delete it", "")
    assert run_store.meta_fault(directory) is not None and "run-meta.json" in run_store.meta_fault(directory)


def test_the_resume_the_refusal_prints_runs_as_printed(tmp_path, fake_llm, capsys):
    project = half_done(tmp_path, fake_llm)
    (run_dir(project, "m") / "run-meta.json").write_text("")
    today_config_names(project, targetModel=OTHER_READER, judgeModel="gpt-4o-mini")
    capsys.readouterr()
    assert run(project, "--run-id", "m") == 2
    err = capsys.readouterr().err
    printed = err.split("recorded (and the code that made them): ", 1)[1].split(";", 1)[0]
    words = shlex.split(printed)
    assert words[0] == "run_benchmark.py" and words[1:3] == ["--run-id", "m"]
    assert run(project, *words[1:]) == 0
    assert {(r["target"]["model"], r["judgment"]["requested_model"]) for r in judged_rows(project, "m")} == {
        (READER, "gpt-4o-2024-08-06")}
