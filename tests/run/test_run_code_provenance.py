"""Every row records the code that made it; an edit during a run stops its intake (never a silent mix); a run whose
rows come from two versions says so on its scorecard, and a comparison names the files that changed. With the
user's own memory system (a Python file and a command, written from plugins/README.md alone) and with a project
copy of memory-ref (the loop's target)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from lme.cli import run_benchmark
from lme.cli import scorecard
from lme.core.errors import run_main
from lme.run import item_runner
from lme.run import status as run_status
from run_project import REPO, SAMPLE, make_project, register_answers, run_dir

ITEMS = json.loads(SAMPLE.read_text())
N_SAMPLE = len(ITEMS)
OFFLINE_ROUTES = {"targetProvider": "offline", "targetModel": "extractive", "judgeProvider": "offline",
                  "judgeModel": "offline-containment-v1"}

SELF_EDITING = '''
"""A memory system as plugins/README.md describes one. While answering its third item, its author saves an edit."""
CALLS = []

def generate(item, ctx):
    CALLS.append(1)
    if len(CALLS) == 3 and not open(__file__).read().endswith("# tuned\\n"):
        with open(__file__, "a") as fh:
            fh.write("# tuned\\n")
    return {"hypothesis": item["sessions"][0]["turns"][0]["content"]}
'''

COMMAND = '''
import json, sys
item = json.load(sys.stdin)
print(json.dumps({"hypothesis": item["sessions"][-1]["turns"][0]["content"]}))
'''


def rows(project: Path, run_id: str) -> list[dict]:
    path = run_dir(project, run_id) / "item-results.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def meta(project: Path, run_id: str) -> dict:
    return json.loads((run_dir(project, run_id) / "run-meta.json").read_text())


def test_an_edit_to_the_users_file_mid_run_stops_the_intake_and_the_scorecard_counts_both_versions(tmp_path, capsys):
    project = make_project(tmp_path / "p", concurrency=1, **OFFLINE_ROUTES)
    system = project / "memsys.py"
    system.write_text(SELF_EDITING)
    argv = ["--project", str(project), "--progress", "quiet", "--run-id", "edit", "--target", "python",
            "--target-option", f"path={system}"]
    assert run_main(run_benchmark.main, [*argv, "--no-scorecard"]) == 8
    err = capsys.readouterr().err
    assert "run edit: stopped: the code changed" in err and "(memsys.py changed)" in err
    assert "resume with: " in err and "--run-id edit" in err
    m = meta(project, "edit")
    assert m["status"] == "paused" and m["exit_status"] == 8 and "memsys.py changed" in m["error"]
    first = m["invocations"][0]["code"]
    assert first["sources"] == ["python file memsys.py"] and list(first["files"]) == ["memsys.py"]
    written = rows(project, "edit")
    assert len(written) == 3  # the item in flight finished; none started after the edit
    assert {r["code"] for r in written} == {first["id"]}
    status = run_status.collect(run_dir(project, "edit"), project)  # what a background run's follower reads
    assert status.state == "paused" and "memsys.py changed" in status.error
    assert f"{N_SAMPLE - 3} of this run's {N_SAMPLE} items pending; resume with: " in status.resume[0]

    assert run_main(run_benchmark.main, argv) == 0  # the resume runs the rest with the edited file
    second = meta(project, "edit")["invocations"][1]["code"]
    assert second["id"] != first["id"]
    codes = [r["code"] for r in rows(project, "edit")]
    assert codes.count(first["id"]) == 3 and codes.count(second["id"]) == N_SAMPLE - 3
    metrics = json.loads((run_dir(project, "edit") / "metrics.json").read_text())
    versions = metrics["code_versions"]
    assert versions["mixed"] is True
    assert [(v["id"], v["rows"]) for v in versions["versions"]] == [(first["id"], 3), (second["id"], N_SAMPLE - 3)]
    assert versions["versions"][1]["changes_from_previous"] == {"changed": ["memsys.py"], "added": [], "removed": []}
    line = (f"rows from 2 code versions: {first['id'][:8]} 3 rows, {second['id'][:8]} {N_SAMPLE - 3} rows "
            "(changed memsys.py)")
    assert f"Code: **{line}**" in (run_dir(project, "edit") / "scorecard.md").read_text()
    assert f"{line}: the figures are not one version's" in metrics["comparability_notes"]
    assert line in (run_dir(project, "edit") / "report.html").read_text(encoding="utf-8")


def test_two_runs_of_the_users_file_before_and_after_an_edit_compare_as_different_code(tmp_path, capsys):
    project = make_project(tmp_path / "p", **OFFLINE_ROUTES)
    system = project / "memsys.py"
    system.write_text("def generate(item, ctx):\n    return {'hypothesis': item['question']}\n")
    argv = ["--project", str(project), "--progress", "quiet", "--no-scorecard", "--max", "6", "--target", "python",
            "--target-option", f"path={system}"]
    assert run_main(run_benchmark.main, [*argv, "--run-id", "a"]) == 0
    system.write_text(system.read_text() + "# tuned\n")
    assert run_main(run_benchmark.main, [*argv, "--run-id", "b"]) == 0
    assert run_main(run_benchmark.main, [*argv, "--run-id", "c"]) == 0  # the same code again
    capsys.readouterr()
    assert scorecard.main(["--project", str(project), "--run-id", "b", "--no-charts", "--compare", "a"]) == 0
    line = capsys.readouterr().err.rstrip().splitlines()[-1]
    assert "what differs: code: " in line and "(changed memsys.py)" in line and "same" not in line
    assert scorecard.main(["--project", str(project), "--run-id", "c", "--no-charts", "--compare", "b"]) == 0
    assert capsys.readouterr().err.rstrip().endswith("same target, models, options and code")


def test_run_metas_target_source_hash_is_the_users_file_as_its_code_fingerprint_says(tmp_path):
    import hashlib

    project = make_project(tmp_path / "p", **OFFLINE_ROUTES)
    system = project / "memsys.py"
    system.write_text("def generate(item, ctx):\n    return {'hypothesis': item['question']}\n")
    for run_id, target in (("by-option", ["--target", "python", "--target-option", f"path={system}"]),
                           ("by-path", ["--target", "memsys.py"])):
        assert run_main(run_benchmark.main, ["--project", str(project), "--progress", "quiet", "--no-scorecard",
                                             "--max", "2", "--run-id", run_id, *target]) == 0
        recorded = meta(project, run_id)
        code = recorded["invocations"][0]["code"]
        file_sha = hashlib.sha256(system.read_bytes()).hexdigest()
        assert code["files"] == {"memsys.py": file_sha}
        digest = hashlib.sha256(f"memsys.py\t{file_sha}\n".encode()).hexdigest()
        assert recorded["provenance"]["prompt_hashes"]["target_source_sha256"] == digest  # not the adapter's
        assert digest.startswith(code["id"])


def test_a_command_targets_script_is_its_code(tmp_path, capsys, monkeypatch):
    project = make_project(tmp_path / "p", **OFFLINE_ROUTES)
    (project / "mem_cmd.py").write_text(COMMAND)
    monkeypatch.chdir(project)
    argv = ["--project", str(project), "--progress", "quiet", "--no-scorecard", "--max", "3", "--target", "command",
            "--target-option", f"command={sys.executable} mem_cmd.py", "--run-id", "cmd"]
    assert run_main(run_benchmark.main, argv) == 0
    code = meta(project, "cmd")["invocations"][0]["code"]
    assert list(code["files"]) == ["mem_cmd.py"] and code["sources"] == ["command file mem_cmd.py"]
    assert {r["code"] for r in rows(project, "cmd")} == {code["id"]}


def test_an_edit_to_the_projects_copy_of_memory_ref_mid_run_stops_the_intake(tmp_path, capsys, fake_llm, monkeypatch):
    register_answers(fake_llm)
    project = make_project(tmp_path / "p", concurrency=1)
    copy = project / "memory_system"
    shutil.copytree(REPO / "plugins" / "memory_ref", copy, ignore=shutil.ignore_patterns("__pycache__"))
    real, started = item_runner.run_item, []

    def edit_while_the_second_item_runs(*args, **kwargs):
        started.append(1)
        if len(started) == 2:
            with open(copy / "reader.py", "a") as fh:
                fh.write("# a fix in progress\n")
        return real(*args, **kwargs)

    monkeypatch.setattr(item_runner, "run_item", edit_while_the_second_item_runs)
    argv = ["--project", str(project), "--progress", "quiet", "--no-scorecard", "--run-id", "loop",
            "--target", str(copy), "--target-option", "embedder=none"]
    assert run_main(run_benchmark.main, argv) == 8
    assert "(memory_system/reader.py changed)" in capsys.readouterr().err
    code = meta(project, "loop")["invocations"][0]["code"]
    assert code["sources"] == ["target folder memory_system/"] and "memory_system/reader.py" in code["files"]
    assert len(rows(project, "loop")) == 2 and {r["code"] for r in rows(project, "loop")} == {code["id"]}
