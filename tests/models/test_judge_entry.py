"""When the official judge counts as gone: only its own chat call answering 410 / 404 ``model_not_found``, or a
model list naming a shutdown date that has passed. A gateway that serves chat but not ``GET /v1/models/{id}`` (a
plain 404 there) keeps its official judge. Against the fake server, real SDKs."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from lme.cli import preflight as preflight_cli
from lme.cli import run_benchmark
from lme.core.errors import run_main
from run_project import make_project, register_answers, run_dir

OFFICIAL = "gpt-4o-2024-08-06"

pytestmark = pytest.mark.usefixtures("fresh_probes")


def run(project, *args):
    return run_main(run_benchmark.main, ["--project", str(project), "--progress", "quiet", "--yes", "--no-scorecard",
                                         *args])


def test_a_gateway_without_the_models_route_keeps_its_official_judge(fake_llm, tmp_path, capsys):
    project = make_project(tmp_path / "p")
    register_answers(fake_llm)
    fake_llm.models_route = False  # 404 on GET /v1/models/{id}; chat works
    assert run(project, "--run-id", "gw", "--max", "2") == 0
    err = capsys.readouterr().err
    assert "gone" not in err and "import-verdicts" not in err
    rows = [json.loads(x) for x in (run_dir(project, "gw") / "item-results.jsonl").read_text().splitlines()]
    assert [r["status"] for r in rows] == ["judged", "judged"]
    assert {r["judgment"]["model"] for r in rows} == {OFFICIAL}
    assert fake_llm.model_lookups  # the list was asked, and its 404 said nothing
    assert run_main(preflight_cli.main, ["--project", str(project)]) == 0
    assert "gone" not in capsys.readouterr().out


def test_only_a_410_or_a_404_model_not_found_from_the_judges_own_call_means_gone():
    from lme.models.provider_errors import answered_gone
    from lme.models.provider_errors import ProviderError

    plain = ProviderError("not_found", "openai gpt-4o: not found (HTTP 404: no route)", status=404)
    assert not answered_gone(plain)  # a wrong base URL or a gateway's missing route: the probe's refusal line
    retired = ProviderError("not_found", "openai gpt-4o: not found (HTTP 404)", status=404)
    retired.code = "model_not_found"
    assert answered_gone(retired) and answered_gone(ProviderError("not_found", "gone (HTTP 410)", status=410))
    assert not answered_gone(ProviderError("auth", "rejected (HTTP 401)", status=401))


def test_a_model_list_shutdown_date_in_the_past_means_gone(fake_llm, tmp_path, capsys):
    project = make_project(tmp_path / "p")
    past = (dt.date.today() - dt.timedelta(days=3)).isoformat()
    fake_llm.model_entries[OFFICIAL] = {"shutdown_date": past}
    assert run(project, "--max", "1") == 2
    err = capsys.readouterr().err
    assert f"is gone (its model-list entry says it shut down on {past})" in err and "nothing was started" in err
    assert not (project / ".longmemeval-benchmarks" / "runs").exists()
