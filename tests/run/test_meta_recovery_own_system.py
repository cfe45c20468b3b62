"""A lost run-meta.json of a run of the user's own memory system (a Python file written from plugins/README.md):
the refusal's printed command resumes it as printed (issue 38, finding 5)."""

from __future__ import annotations

import shlex

from lme.cli import run_benchmark
from lme.core.errors import run_main
from run_project import judged_rows, make_project, register_answers, run_dir

MEMSYS = 'def generate(item, ctx):\n    return {"hypothesis": "not enough information"}\n'


def run(project, *args):
    return run_main(run_benchmark.main, ["--project", str(project), "--progress", "quiet",
                                         "--no-scorecard", *args])


def test_a_lost_run_meta_of_the_users_own_file_resumes_by_the_printed_command(tmp_path, fake_llm, capsys):
    register_answers(fake_llm)
    project = make_project(tmp_path / "p")
    (project / "memsys.py").write_text(MEMSYS)
    assert run(project, "--target", "memsys.py", "--run-id", "m", "--max", "3") == 0
    (run_dir(project, "m") / "run-meta.json").write_text("")
    capsys.readouterr()
    assert run(project, "--run-id", "m") == 2
    err = capsys.readouterr().err
    printed = err.split("recorded (and the code that made them): ", 1)[1].split(";", 1)[0]
    words = shlex.split(printed)
    assert words[0] == "run_benchmark.py" and words[1:3] == ["--run-id", "m"]
    assert run(project, *words[1:]) == 0, capsys.readouterr().err
    assert len(judged_rows(project, "m")) == 3
