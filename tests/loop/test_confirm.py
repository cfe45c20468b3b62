"""confirm: the shell-friendly check, resuming a pending confirmation, no second confirmation of a confirmed run."""

from __future__ import annotations

import json

import pytest

from lme.loop import confirm
from lme.cli import confirm as confirm_cli
from lme.core.errors import UserError, run_main
from loop_testing import item_ids, make_loop_project, write_run


@pytest.fixture
def project(tmp_path):
    return make_loop_project(tmp_path)


def _loop_run(project, right: int, run_id: str = "longmemeval-iter", n: int = 20):
    types = item_ids(n)
    return write_run(project, run_id, types, {q: i < right for i, q in enumerate(types)})


def test_check_exit_status_is_zero_at_the_target_and_one_below(project, capsys):
    _loop_run(project, right=18)  # target for 20 is 19
    assert run_main(confirm_cli.main, ["--project", str(project), "check", "--exit-status"]) == 1
    assert json.loads(capsys.readouterr().out)["reached"] is False
    assert run_main(confirm_cli.main, ["--project", str(project), "check"]) == 0  # without the flag: report only
    capsys.readouterr()
    _loop_run(project, right=19, run_id="other")
    assert run_main(confirm_cli.main, ["--project", str(project), "check", "--run-id", "other", "--exit-status"]) == 0
    assert json.loads(capsys.readouterr().out)["reached"] is True


def test_start_resume_returns_the_pending_confirmation_instead_of_refusing(project, capsys):
    _loop_run(project, right=20)
    first = confirm.start(project, "longmemeval-iter")
    with pytest.raises(UserError, match="already pending"):
        confirm.start(project, "longmemeval-iter")
    assert run_main(confirm_cli.main, ["--project", str(project), "start", "--resume"]) == 0
    assert capsys.readouterr().out.strip() == first["confirm_run_id"]


def test_a_confirmed_run_is_not_confirmed_twice(project):
    _loop_run(project, right=20)
    record = confirm.start(project, "longmemeval-iter")
    _loop_run(project, right=20, run_id=record["confirm_run_id"])
    assert confirm.finish(project)["status"] == "confirmed"
    with pytest.raises(UserError, match="already confirmed"):
        confirm.start(project, "longmemeval-iter", resume=True)
