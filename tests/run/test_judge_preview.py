"""A hypotheses run's estimate counts the judge calls the run will make, no more: a verdict the archive holds or a
reply the call cache holds is free, in the dry run and at the cost gate, as in the run itself. Against the fake
server (tests/fake_llm_server.py), real SDKs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lme.cli import judge_shim, run_benchmark
from lme.core.errors import run_main
from run_project import SAMPLE, expire_recent_probes, make_project, register_answers, run_dir

ITEMS = json.loads(SAMPLE.read_text())
N = len(ITEMS)
OFFICIAL = "gpt-4o-2024-08-06"


pytestmark = pytest.mark.usefixtures("fresh_probes")


def write_hyps(path: Path, changed: int = 0) -> None:
    """A hypotheses file over the sample; the last ``changed`` items edited (a new judge prompt each)."""
    lines = []
    for i, it in enumerate(ITEMS):
        text = f"It is {it['answer']}." if i < N - changed else f"Edited: {it['answer']}, I think."
        lines.append(json.dumps({"question_id": it["question_id"], "hypothesis": text}) + "\n")
    path.write_text("".join(lines))


def judged_once(tmp_path: Path, fake_llm, capsys, *, archive: bool, **config) -> tuple[Path, Path]:
    """A project whose hypotheses file was judged once by the official judge (the run archived its verdicts);
    ``archive``: they were exported and imported into another project's verdict archive (here: the same one), and
    the call cache removed (another machine's archive); without it, the archive is removed (only the call cache
    holds the replies)."""
    project = make_project(tmp_path / "p", concurrency=4, **config)
    register_answers(fake_llm)
    hyps = tmp_path / "hyps.jsonl"
    write_hyps(hyps)
    args = ["--project", str(project), "--progress", "quiet", "--no-scorecard", "--yes"]
    assert run_main(run_benchmark.main, [*args, "--hypotheses", str(hyps), "--run-id", "first"]) == 0
    if archive:
        exported = tmp_path / "verdicts.jsonl"
        assert judge_shim.main(["export-verdicts", "--project", str(project), "--out", str(exported)]) == 0
        assert judge_shim.main(["import-verdicts", str(exported), "--project", str(project)]) == 0
        for cache in (project / ".longmemeval-benchmarks" / "cache").glob("calls.sqlite3*"):
            cache.unlink()
    else:
        (project / ".longmemeval-benchmarks" / "verdicts.jsonl").unlink()
    capsys.readouterr()
    fake_llm.reset()
    return project, hyps


def estimate(project: Path, capsys, *args: str) -> dict:
    assert run_benchmark.main(["--project", str(project), "--dry-run", "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)


def test_archived_verdicts_are_free_in_the_dry_run_and_the_gate_lets_the_run_through(
        fake_llm, tmp_path, capsys, upstream_prompt):
    project, hyps = judged_once(tmp_path, fake_llm, capsys, archive=True, confirmCostUsd=0)
    judge = estimate(project, capsys, "--hypotheses", str(hyps))["judge"]
    assert (judge["calls"], judge["archived_calls"], judge["cached_calls"], judge["usd"]) == (0, N, 0, 0.0)

    # the same file with 3 answers edited: those 3 are the calls, priced; the rest stay free
    write_hyps(hyps, changed=3)
    result = estimate(project, capsys, "--hypotheses", str(hyps))
    assert (result["judge"]["calls"], result["judge"]["archived_calls"]) == (3, N - 3)
    assert result["judge"]["usd"] > 0 and result["total_usd_max"] == result["judge"]["usd"]
    assert "judge calls the verdict archive or the call cache would serve are free" in result["note"]

    # the human block says where the free verdicts come from
    assert run_benchmark.main(["--project", str(project), "--dry-run", "--hypotheses", str(hyps)]) == 0
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.lstrip().startswith("judge ")]
    assert "3 calls" in line and f"(+{N - 3:,} from the verdict archive, free)" in line

    # at confirmCostUsd 0, the archived file runs without --yes (nothing to pay), the edited one is asked about
    write_hyps(hyps)
    quiet = ["--project", str(project), "--progress", "quiet", "--no-scorecard", "--hypotheses", str(hyps)]
    assert run_main(run_benchmark.main, [*quiet, "--run-id", "archived"]) == 0
    assert "cost gate" not in capsys.readouterr().out
    write_hyps(hyps, changed=3)
    assert run_main(run_benchmark.main, [*quiet, "--run-id", "edited"]) == 5
    assert capsys.readouterr().out.startswith("cost gate: this run needs confirmation")
    assert not run_dir(project, "edited").exists()


def test_judge_replies_in_the_call_cache_are_free_unless_the_run_does_not_read_it(
        fake_llm, tmp_path, capsys, upstream_prompt):
    project, hyps = judged_once(tmp_path, fake_llm, capsys, archive=False)
    judge = estimate(project, capsys, "--hypotheses", str(hyps))["judge"]
    assert (judge["calls"], judge["cached_calls"], judge["archived_calls"]) == (0, N, 0)
    judge = estimate(project, capsys, "--hypotheses", str(hyps), "--no-cache")["judge"]
    assert (judge["calls"], judge["cached_calls"]) == (N, 0)

    # the run agrees with its estimate: no judge call is made
    assert run_main(run_benchmark.main, ["--project", str(project), "--progress", "quiet", "--no-scorecard",
                                         "--yes", "--hypotheses", str(hyps), "--run-id", "again"]) == 0
    assert fake_llm.requests == []


def test_a_cache_filled_at_another_host_is_not_free(fake_llm, tmp_path, capsys, upstream_prompt, monkeypatch):
    """A judge reply is bound to the host it came from: pointed elsewhere, the estimate counts the calls again."""
    project, hyps = judged_once(tmp_path, fake_llm, capsys, archive=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.2:9/v1")
    judge = estimate(project, capsys, "--hypotheses", str(hyps))["judge"]
    assert (judge["calls"], judge["cached_calls"]) == (N, 0)


def test_judge_repeats_bypass_archive_and_cache_and_are_counted(fake_llm, tmp_path, capsys, upstream_prompt):
    project, hyps = judged_once(tmp_path, fake_llm, capsys, archive=True)
    judge = estimate(project, capsys, "--hypotheses", str(hyps), "--judge-repeat", "3")["judge"]
    assert (judge["calls"], judge["archived_calls"]) == (2 * N, N)


def test_a_generated_run_still_counts_every_judge_call(fake_llm, tmp_path, capsys, upstream_prompt):
    project, _ = judged_once(tmp_path, fake_llm, capsys, archive=True)
    result = estimate(project, capsys)
    assert (result["judge"]["calls"], result["judge"]["archived_calls"]) == (N, 0)
    assert "judge calls are all counted" in result["note"]


def test_the_official_judge_gone_prices_the_rest_at_the_successor_and_nothing_without_one(
        fake_llm, tmp_path, capsys, upstream_prompt):
    """The gate decides on the settings the probe returned: with a successor, the calls the archive lacks are the
    successor's; without one, they stay pending and cost nothing."""
    project, hyps = judged_once(tmp_path, fake_llm, capsys, archive=True, confirmCostUsd=0)
    write_hyps(hyps, changed=3)
    fake_llm.gone_models[OFFICIAL] = 404
    expire_recent_probes(project)  # the day after
    gated = ["--project", str(project), "--progress", "quiet", "--no-scorecard", "--hypotheses", str(hyps)]
    assert run_main(run_benchmark.main, [*gated, "--successor", "openai:o3-mini", "--run-id", "s"]) == 5
    out = capsys.readouterr().out
    (line,) = [x for x in out.splitlines() if x.lstrip().startswith("judge ")]
    assert "3 calls" in line and f"+{N - 3:,} from the verdict archive" in line and "o3-mini" in out

    assert run_main(run_benchmark.main, [*gated, "--run-id", "none"]) == 2  # no successor: the 3 stay pending
    out, err = capsys.readouterr()
    assert "cost gate" not in out and "stay pending" in err
    meta = json.loads((run_dir(project, "none") / "run-meta.json").read_text())
    assert meta["counts"]["pending"] == 3
