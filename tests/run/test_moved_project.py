"""A project moved to another folder resumes as told: paths a run recorded inside the project are found at the
project's new place; a recorded path outside the project that is gone is refused in one line naming the flags."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from lme.cli import run_benchmark
from lme.core.errors import run_main
from lme.report import page_data
from lme.store import run_store
from run_project import SAMPLE, make_project, run_dir
from test_run_item_set import ITEMS, OFFLINE_ROUTES, USERS_SYSTEM, completed, printed_resume
from factories import scorecard_of

DATA = ".longmemeval-benchmarks/data/longmemeval_s_cleaned.json"


def _project_with_pending_items(tmp_path: Path, *, dataset_inside: bool = True,
                                system_inside: bool = False) -> tuple[Path, list[str], Path]:
    """A --max 10 run whose third item failed: its printed resume argv, and the user's system file to fix."""
    old = tmp_path / "old" / "p"
    old.mkdir(parents=True)
    system = (old if system_inside else tmp_path) / "memsys.py"
    system.write_text(USERS_SYSTEM.format(failing=ITEMS[2]["question"], sleep=0.0))
    if dataset_inside:
        (old / DATA).parent.mkdir(parents=True)
        shutil.copy2(SAMPLE, old / DATA)
        dataset = DATA
    else:
        dataset = str(tmp_path / "outside.json")
        shutil.copy2(SAMPLE, dataset)
    make_project(old, concurrency=1, **OFFLINE_ROUTES)
    cfg_path = old / ".longmemeval-benchmarks" / "config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg.update(datasetPath=dataset, longmemeval_root="upstream")  # as setup writes them: relative to the project
    cfg_path.write_text(json.dumps(cfg))
    argv = ["--project", str(old), "--progress", "quiet", "--no-scorecard", "--run-id", "ten",
            "--target", "python", "--target-option", f"path={system.name if system_inside else system}", "--max", "10"]
    assert run_main(run_benchmark.main, argv) == 1
    return old, argv, system


def _moved(old: Path, tmp_path: Path) -> Path:
    new = tmp_path / "elsewhere" / "p"
    new.parent.mkdir()
    shutil.move(str(old), str(new))
    assert not old.exists()
    return new


def _with_project(argv: list[str], new: Path) -> list[str]:
    at = argv.index("--project")
    return [*argv[:at + 1], str(new), *argv[at + 2:]]


def test_a_moved_project_resumes_its_run_with_the_dataset_at_its_new_place(tmp_path, capsys):
    old, _, system = _project_with_pending_items(tmp_path)
    resume = printed_resume(capsys.readouterr().err)
    new = _moved(old, tmp_path)
    system.write_text(USERS_SYSTEM.format(failing="", sleep=0.0))  # the user fixed it
    assert run_main(run_benchmark.main, [*_with_project(resume, new), "--progress", "quiet", "--no-scorecard"]) == 0
    done = completed(new, "ten")
    assert sorted(done) == sorted(it["question_id"] for it in ITEMS[:10]) and len(done) == len(set(done))
    rows = [json.loads(x) for x in (run_dir(new, "ten") / "item-results.jsonl").read_text().splitlines() if x]
    assert {r["question_id"] for r in rows} == {it["question_id"] for it in ITEMS[:10]}
    meta = json.loads((run_dir(new, "ten") / "run-meta.json").read_text())
    assert meta["counts"]["completed"] == 10 and meta["settings"]["project"] == str(new)
    assert meta["dataset"]["path"] == str(new / DATA)  # the run's record follows the file


def test_a_report_after_the_move_keeps_the_sessions_text(tmp_path, capsys):
    old, _, _ = _project_with_pending_items(tmp_path)
    capsys.readouterr()
    new = _moved(old, tmp_path)
    run = run_store.load_run(run_dir(new, "ten"))
    data, texts = page_data.page_data(run, scorecard_of(run))
    assert not any("is not here" in n for n in data["notes"]), data["notes"]
    assert data["sessions"] and any(texts["s"])


def test_a_gone_dataset_outside_the_project_is_refused_naming_the_flags(tmp_path, capsys):
    old, _, system = _project_with_pending_items(tmp_path, dataset_inside=False)
    resume = printed_resume(capsys.readouterr().err)
    new = _moved(old, tmp_path)
    system.write_text(USERS_SYSTEM.format(failing="", sleep=0.0))
    (tmp_path / "outside.json").rename(tmp_path / "kept.json")
    before = sorted((p.name, p.stat().st_mtime_ns) for p in run_dir(new, "ten").iterdir())
    assert run_main(run_benchmark.main, _with_project(resume, new)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "outside.json" in err[0] and "--dataset" in err[0], err
    assert sorted((p.name, p.stat().st_mtime_ns) for p in run_dir(new, "ten").iterdir()) == before  # nothing written
    assert run_main(run_benchmark.main, [*_with_project(resume, new), "--dataset", str(tmp_path / "kept.json")]) == 0


def test_a_moved_project_resumes_with_the_users_own_system_inside_it(tmp_path, capsys):
    old, _, _ = _project_with_pending_items(tmp_path, system_inside=True)
    resume = printed_resume(capsys.readouterr().err)
    new = _moved(old, tmp_path)
    (new / "memsys.py").write_text(USERS_SYSTEM.format(failing="", sleep=0.0))  # the user fixed it
    assert run_main(run_benchmark.main, [*_with_project(resume, new), "--progress", "quiet", "--no-scorecard"]) == 0
    assert sorted(completed(new, "ten")) == sorted(it["question_id"] for it in ITEMS[:10])
    meta = json.loads((run_dir(new, "ten") / "run-meta.json").read_text())
    assert meta["target"]["options"]["path"] == str(new / "memsys.py")


@pytest.mark.parametrize("flag", ["--longmemeval-root"])
def test_the_judge_checkout_advice_names_the_flag(flag):
    from lme.judge import official
    assert flag in official.SETUP_HINT
