"""The verdict archive as the field needs it after 2027-01-14 (issue 37): every official verdict a run or a file
judge makes is archived as it is made; upstream's own eval-results files enter the archive; an imported verdict
says where it came from on every report; conflicting official verdicts are kept, counted and scored by the stated
rule. Against the fake server (tests/fake_llm_server.py), real SDKs; upstream-format files are written here."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest

from lme.cli import judge_agreement as judge_agreement_cli, judge_shim, run_benchmark, scorecard
from lme.core.errors import UserError, run_main
from lme.core.records import Question
from lme.judge import verdict_archive
from lme.run import item_runner, settings as run_settings
from run_project import SAMPLE, expire_recent_probes, make_project, register_answers, run_dir

ITEMS = json.loads(SAMPLE.read_text())
N = len(ITEMS)
OFFICIAL = "gpt-4o-2024-08-06"

pytestmark = pytest.mark.usefixtures("fresh_probes")


def run(project: Path, *args: str) -> int:
    return run_main(run_benchmark.main, ["--project", str(project), "--progress", "quiet", "--yes", "--no-scorecard",
                                         *args])


def rows_of(project: Path, run_id: str) -> list[dict]:
    path = run_dir(project, run_id) / "item-results.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def archive_lines(project: Path) -> list[dict]:
    path = verdict_archive.archive_path(project)
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


def judge_calls(server) -> list[dict]:
    return [q for q in server.requests if (q.get("body") or {}).get("max_tokens") == 10]


def write_hyps(path: Path) -> dict[str, str]:
    hyps = {it["question_id"]: (f"It is {it['answer']}." if i % 2 == 0 else "I don't know, sorry. Ça va? 猫")
            for i, it in enumerate(ITEMS)}
    path.write_text("".join(json.dumps({"question_id": q, "hypothesis": h}) + "\n" for q, h in hyps.items()))
    return hyps


def project_with_hyps(tmp_path: Path, fake_llm, *, judged_by: str | None = None, name: str = "p"
                      ) -> tuple[Path, Path, dict[str, str]]:
    """A project, the sample's hypotheses file (and its lines), and the answers taught to the fake server;
    ``judged_by``: the file judged once as that run."""
    project = make_project(tmp_path / name)
    register_answers(fake_llm)
    hyps = tmp_path / "hyps.jsonl"
    written = write_hyps(hyps)
    if judged_by:
        assert run(project, "--hypotheses", str(hyps), "--run-id", judged_by) == 0
    return project, hyps, written


def upstream_file(path: Path, hyps: dict[str, str], labels: dict[str, bool], *, model: str = OFFICIAL,
                  extra: list[dict] | None = None) -> Path:
    """What upstream's evaluate_qa.py writes: each hypotheses line with ``autoeval_label: {model, label}``."""
    lines = [{"question_id": q, "hypothesis": h, "autoeval_label": {"model": model, "label": labels[q]}}
             for q, h in hyps.items()]
    path.write_text("".join(json.dumps(x) + "\n" for x in [*lines, *(extra or [])]))
    return path


def labels_of(seed: int) -> dict[str, bool]:
    return {it["question_id"]: (i * 7 + seed) % 3 != 0 for i, it in enumerate(ITEMS)}


# --------------------------------------------------------------------------- archived by default (finding 2)


def test_every_official_verdict_a_run_makes_is_archived_as_it_is_made_once_per_prompt(
        fake_llm, tmp_path, capsys, upstream_prompt):
    project, hyps, _ = project_with_hyps(tmp_path, fake_llm, judged_by="first")
    lines = archive_lines(project)
    rows = {r["question_id"]: r for r in rows_of(project, "first")}
    assert len(lines) == N and {x["question_id"] for x in lines} == set(rows)
    for line in lines:
        assert line["origin"] == {"kind": "made", "by": "run first"}
        assert line["label"] == rows[line["question_id"]]["judgment"]["label"]
        assert line["prompt_sha256"] == rows[line["question_id"]]["judgment"]["prompt_sha256"]
        assert line["endpoint_host"] == f"127.0.0.1:{fake_llm.port}" and line["raw"]

    # the same hypotheses again, with --no-cache: served by the archive, which does not grow
    fake_llm.reset()
    assert run(project, "--hypotheses", str(hyps), "--run-id", "again", "--no-cache") == 0
    assert judge_calls(fake_llm) == [] and len(archive_lines(project)) == N
    assert {r["judgment"]["source"] for r in rows_of(project, "again")} == {"archive"}


def test_a_verdict_is_archived_before_its_row_is_written_so_a_crash_loses_it_nowhere(
        fake_llm, tmp_path, upstream_prompt):
    project = make_project(tmp_path / "p")
    register_answers(fake_llm)
    root = json.loads((project / ".longmemeval-benchmarks" / "config.json").read_text())["longmemeval_root"]
    settings = run_settings.RunSettings(
        project=str(project), dataset_path=str(SAMPLE), variant="_s", runs_dir=str(tmp_path / "runs"),
        longmemeval_root=root, target="full-context", target_provider="openai", target_model="gpt-4o-mini",
        target_options={}, judge_provider="openai", judge_model="gpt-4o", max_evals=1, concurrency=1,
        cache_enabled=False, cache_read=False, cache_dir=str(tmp_path / "cache"), error_threshold=0, timeout_s=5.0,
        max_attempts=2)
    from lme.models.providers import Gateway, ProviderSettings
    row = item_runner.run_item(Question.from_dict(ITEMS[0]), settings, Gateway(ProviderSettings(timeout_s=5)),
                               run_id="crashed")  # the row exists only in memory: the writer never ran
    (line,) = archive_lines(project)
    assert line["prompt_sha256"] == row.judgment.prompt_sha256 and line["origin"]["by"] == "run crashed"
    fake_llm.gone_models[OFFICIAL] = 404  # the resume after the crash, the day after: the archive still has it
    again = item_runner.run_item(Question.from_dict(ITEMS[0]), settings, Gateway(ProviderSettings(timeout_s=5)),
                                 run_id="resumed")
    assert again.judged and again.judgment.source == "archive" and again.judgment.official is True
    assert again.judgment.label == row.judgment.label


def test_runs_made_before_verdicts_were_archived_are_archived_once(fake_llm, tmp_path, capsys, upstream_prompt):
    project, hyps, _ = project_with_hyps(tmp_path, fake_llm, judged_by="old")
    state = project / ".longmemeval-benchmarks"
    (state / "verdicts.jsonl").unlink()  # as an older version left the project: the verdicts only in the run
    (state / verdict_archive.BACKFILL_MARK).unlink(missing_ok=True)
    assert judge_shim.main(["archive-status", "--project", str(project), "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert (status["backfilled_now"], status["archived"], status["official_in_runs_only"]) == (N, N, 0)
    assert {x["origin"]["by"] for x in archive_lines(project)} == {"run old"}
    assert judge_shim.main(["archive-status", "--project", str(project), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["backfilled_now"] == 0 and len(archive_lines(project)) == N

    # a run's start archives them too (no archive-status needed)
    (state / "verdicts.jsonl").unlink()
    (state / verdict_archive.BACKFILL_MARK).unlink(missing_ok=True)
    assert run(project, "--hypotheses", str(hyps), "--run-id", "new", "--max", "1") == 0
    assert f"archived {N} official verdict(s) of older runs" in capsys.readouterr().err
    assert len(archive_lines(project)) == N
    marked = json.loads((state / verdict_archive.BACKFILL_MARK).read_text())["runs"]
    assert marked == ["new", "old"]  # a run new at its start archives as it judges: never read back


def test_an_archive_an_older_version_wrote_whole_is_appended_to_without_losing_a_line(
        fake_llm, tmp_path, capsys, upstream_prompt):
    first, hyps, written = project_with_hyps(tmp_path, fake_llm, judged_by="a", name="first")
    exported = tmp_path / "v.jsonl"
    assert judge_shim.main(["export-verdicts", "--project", str(first), "--out", str(exported)]) == 0
    second = make_project(tmp_path / "second")
    header, *lines = exported.read_text().splitlines()
    kept = lines[: N - 2]  # an import by an older version: header and lines, written whole
    body = "".join(x + "\n" for x in kept)
    old_header = {**json.loads(header), "count": len(kept),
                  "sha256": __import__("hashlib").sha256(body.encode()).hexdigest()}
    verdict_archive.archive_path(second).write_text(json.dumps(old_header) + "\n" + body)
    assert run(second, "--hypotheses", str(hyps), "--run-id", "b") == 0  # 2 judged live: appended
    after = archive_lines(second)
    assert "kind" not in after[0] and len(after) == N
    assert len([x for x in after if x["origin"].get("by") == "run b"]) == 2
    assert {x["question_id"] for x in after} == set(written)


def test_file_mode_archives_its_official_verdicts_in_a_project_and_leaves_nothing_outside_one(
        fake_llm, tmp_path, monkeypatch, upstream_prompt):
    project, hyps, _ = project_with_hyps(tmp_path, fake_llm)
    root = json.loads((project / ".longmemeval-benchmarks" / "config.json").read_text())["longmemeval_root"]
    args = ["--longmemeval-root", root, "--hyp-file", str(hyps), "--ref-file", str(SAMPLE), "--concurrency", "4"]
    assert judge_shim.main([*args, "--project", str(project), "--out", str(tmp_path / "out.jsonl")]) == 0
    assert {x["origin"]["by"] for x in archive_lines(project)} == {"judge_shim hyps.jsonl"}
    assert len(archive_lines(project)) == N
    elsewhere = tmp_path / "not-a-project"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert judge_shim.main([*args, "--out", str(tmp_path / "out2.jsonl"), "--no-cache"]) == 0
    assert not verdict_archive.archive_path(elsewhere).exists()


# --------------------------------------------------------------------------- upstream files (findings 1 and 6)


def test_an_upstream_eval_results_file_scores_a_run_with_the_judge_gone_and_says_where_it_came_from(
        fake_llm, tmp_path, capsys, upstream_prompt):
    project, hyps, written = project_with_hyps(tmp_path, fake_llm)
    labels = labels_of(0)
    published = upstream_file(tmp_path / "team.jsonl.eval-results-gpt-4o", written, labels)
    assert judge_shim.main(["import-verdicts", str(published), "--project", str(project)]) == 0
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    assert (result["format"], result["added"], result["label_only"]) == ("upstream", N, N)
    assert "author's claim" in captured.err
    assert judge_shim.main(["import-verdicts", str(published), "--project", str(project)]) == 0
    assert json.loads(capsys.readouterr().out)["already_present"] == N  # the same file twice adds nothing

    expire_recent_probes_if_any(project)
    fake_llm.reset()
    fake_llm.gone_models[OFFICIAL] = 404
    assert run_main(run_benchmark.main, ["--project", str(project), "--progress", "quiet", "--yes",
                                         "--hypotheses", str(hyps), "--run-id", "after"]) == 0
    assert judge_calls(fake_llm) == []
    rows = rows_of(project, "after")
    assert {r["question_id"]: r["judgment"]["label"] for r in rows} == labels
    assert all(r["judgment"]["official"] and r["judgment"]["raw"] is None for r in rows)
    assert {r["judgment"]["origin"]["file"] for r in rows} == {published.name}
    metrics = json.loads((run_dir(project, "after") / "metrics.json").read_text())
    assert metrics["correct"] == sum(labels.values()) and metrics["verdicts"]["official_archived"] == N
    (imported,) = metrics["verdicts"]["origins"]["imported"]
    assert (imported["file"], imported["format"], imported["verdicts"], imported["label_only"]) == (
        published.name, "upstream", N, N)
    assert metrics["verdicts"]["origins"]["made_here"]["verdicts"] == 0
    for page in ("scorecard.md", "report.html"):
        text = html.unescape((run_dir(project, "after") / page).read_text())
        assert f"{N} imported from {published.name}" in text and "author's claim" in text


def expire_recent_probes_if_any(project: Path) -> None:
    if (project / ".longmemeval-benchmarks" / "cache" / "probes.json").exists():
        expire_recent_probes(project)


def test_an_upstream_file_with_lines_that_cannot_be_imported_is_refused_in_one_line_and_nothing_written(
        tmp_path, capsys, upstream_prompt):
    project = make_project(tmp_path / "p")
    hyps = write_hyps(tmp_path / "hyps.jsonl")
    bad = upstream_file(tmp_path / "bad.eval-results-gpt-4o", hyps, labels_of(1), extra=[
        {"question_id": "not_in_data", "hypothesis": "x", "autoeval_label": {"model": OFFICIAL, "label": True}},
        {"question_id": ITEMS[0]["question_id"], "autoeval_label": {"model": OFFICIAL, "label": True}}])
    assert run_main(judge_shim.main, ["import-verdicts", str(bad), "--project", str(project)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "2 of 26 line(s) cannot be imported" in err[0]
    assert "line 25 (not_in_data): its question id is not in the dataset" in err[0]
    assert f"line 26 ({ITEMS[0]['question_id']}): no hypothesis" in err[0] and "--ref-file" in err[0]
    other = upstream_file(tmp_path / "mini.eval-results-gpt-4o-mini", hyps, labels_of(1), model="gpt-4o-mini")
    assert run_main(judge_shim.main, ["import-verdicts", str(other), "--project", str(project)]) == 2
    assert "not the official gpt-4o-2024-08-06" in capsys.readouterr().err
    assert not verdict_archive.archive_path(project).exists()


def test_an_upstream_file_needs_upstreams_prompt_function(tmp_path, capsys):
    project = make_project(tmp_path / "p")  # no upstream_prompt fixture: the stand-in is not upstream's
    published = upstream_file(tmp_path / "x.eval-results-gpt-4o", write_hyps(tmp_path / "h.jsonl"), labels_of(2))
    assert run_main(judge_shim.main, ["import-verdicts", str(published), "--project", str(project)]) == 2
    assert "is not upstream's" in capsys.readouterr().err
    assert not verdict_archive.archive_path(project).exists()


def test_an_upstream_file_calibrates_a_successor_as_its_official_side(fake_llm, tmp_path, capsys, upstream_prompt):
    project = make_project(tmp_path / "p")
    register_answers(fake_llm)
    published = upstream_file(tmp_path / "x.eval-results-gpt-4o", write_hyps(tmp_path / "h.jsonl"), labels_of(0))
    assert judge_agreement_cli.main(["--archive", str(published), "--candidate", "openai:gpt-4o-mini",
                                     "--project", str(project), "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["n"] == N and record["source"].startswith("upstream file")
    assert sum(record["confusion"].values()) == N if isinstance(record.get("confusion"), dict) else True


# --------------------------------------------------------------------------- conflicts (finding 4)


def test_conflicting_official_verdicts_are_kept_scored_by_the_majority_and_counted(
        fake_llm, tmp_path, capsys, upstream_prompt):
    project, hyps, written = project_with_hyps(tmp_path, fake_llm)
    base = labels_of(0)
    q_majority, q_tie = ITEMS[0]["question_id"], ITEMS[1]["question_id"]
    files = []
    for i in range(4):  # four published runs of one system: q_majority is yes 3 times and no once,
        labels = dict(base)  # q_tie is yes twice and no twice
        labels[q_majority] = i != 3
        labels[q_tie] = i < 2
        order = list(written)[i:] + list(written)[:i]  # four different files (one identical file twice is one)
        files.append(upstream_file(tmp_path / f"run{i}.eval-results-gpt-4o", {q: written[q] for q in order}, labels))
    for path in files:
        assert judge_shim.main(["import-verdicts", str(path), "--project", str(project)]) == 0
    err = capsys.readouterr().err
    assert err.count("1 prompt(s) now have official verdicts of both labels") == 2  # q_tie, then q_majority
    fake_llm.gone_models[OFFICIAL] = 404
    assert run_main(run_benchmark.main, ["--project", str(project), "--progress", "quiet", "--yes",
                                         "--hypotheses", str(hyps), "--run-id", "scored"]) == 0
    rows = {r["question_id"]: r["judgment"] for r in rows_of(project, "scored")}
    assert rows[q_majority]["label"] is True and rows[q_majority]["conflict"]["no"] == 1
    assert rows[q_tie]["label"] is False and (rows[q_tie]["conflict"]["yes"], rows[q_tie]["conflict"]["no"]) == (2, 2)
    assert all("conflict" not in j for q, j in rows.items() if q not in (q_majority, q_tie))
    metrics = json.loads((run_dir(project, "scored") / "metrics.json").read_text())
    assert metrics["judge_stability"]["archive_conflicts"] == 2
    assert set(metrics["judge_stability"]["unstable_ids"]) == {q_majority, q_tie}
    assert metrics["verdicts"]["origins"]["conflicts"] == 2
    text = (run_dir(project, "scored") / "scorecard.md").read_text()
    assert "Conflicting official verdicts: 2 item(s)" in text and verdict_archive.CONFLICT_RULE in text
    assert scorecard.main(["--project", str(project), "--run-id", "scored"]) == 0


@pytest.mark.parametrize("recorded,endpoints,archived_at", [
    ({}, {"openai": "http://127.0.0.1:8123/v1"}, None),   # an older version's "official" row at the fake server
    ({}, {"openai": "https://api.openai.com/v1"}, "api.openai.com"),
    ({}, None, None),                                      # no host anywhere: the scorecard trusts it, the archive not
    ({"source": "archive"}, {"openai": "https://api.openai.com/v1"}, None),  # an old archive line's, host unknown
    ({"source": "archive", "origin": {"kind": "imported", "file": "x.jsonl"}}, None, "claim"),
])
def test_a_run_row_enters_the_archive_only_when_the_scorecards_rule_calls_its_verdict_official(
        recorded, endpoints, archived_at):
    """Issue 38, 3: the archive reads a row's verdict by ``verdict_sources.classify``, never its stored flag alone,
    and wants where it was made (an imported line's host stays its author's claim)."""
    import factories
    from lme.store import run_rows

    row = run_rows.row_of(factories.result_row("q1", judgment={"prompt_sha256": "ab" * 32, **recorded}))
    line = verdict_archive.verdict_line(row, "run old", endpoints=endpoints)
    if archived_at is None:
        assert line is None
    else:
        assert line is not None and line["endpoint_host"] == (None if archived_at == "claim" else archived_at)


# --------------------------------------------------------------------------- from a newer version (issue 38, finding 7)


def test_a_verdict_archive_a_newer_version_wrote_is_refused_in_one_line_naming_both_versions_and_nothing_written(
        fake_llm, tmp_path, capsys, upstream_prompt):
    project, hyps, _ = project_with_hyps(tmp_path, fake_llm, judged_by="first")
    path = verdict_archive.archive_path(project)
    newer = [{**x, "schemaVersion": "1.3.0", "raw": None} for x in archive_lines(project)]  # a shape 1.2 cannot read
    path.unlink()
    path.write_text("".join(json.dumps(x) + "\n" for x in newer))
    verdict_archive._OPEN.clear()  # as a new process finds it
    before = path.read_bytes()
    runs = sorted(p.name for p in run_dir(project, "first").parent.iterdir())
    capsys.readouterr()
    assert run(project, "--hypotheses", str(hyps), "--run-id", "after") == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "verdicts.jsonl:1 was written by a newer version of longmemeval-benchmarker" in err
    assert "schemaVersion 1.3.0" in err and "1.2.0" in err and "claude plugin update" in err
    assert path.read_bytes() == before
    assert sorted(p.name for p in run_dir(project, "first").parent.iterdir()) == runs


def test_a_bad_line_of_todays_version_is_still_a_bad_line_not_a_newer_version(tmp_path):
    good = {"schemaVersion": "1.2.0", "prompt_sha256": "0" * 64, "model": OFFICIAL, "label": "yes", "raw": "yes",
            "official": True, "provider": "openai"}
    path = tmp_path / "v.jsonl"
    path.write_text(json.dumps(good) + "\n")
    with pytest.raises(UserError, match="label is not true/false") as info:
        verdict_archive.read_archive(path)
    assert "newer version" not in str(info.value)


def test_a_run_that_generates_stops_on_a_newer_archive_instead_of_failing_its_items(
        fake_llm, tmp_path, capsys, upstream_prompt):
    project, hyps, _ = project_with_hyps(tmp_path, fake_llm, judged_by="first")
    path = verdict_archive.archive_path(project)
    newer = [{**x, "schemaVersion": "1.3.0", "raw": None} for x in archive_lines(project)]
    path.unlink()
    path.write_text("".join(json.dumps(x) + "\n" for x in newer))
    verdict_archive._OPEN.clear()
    capsys.readouterr()
    runs = sorted(p.name for p in run_dir(project, "first").parent.iterdir())
    assert run(project, "--run-id", "gen", "--max", "2") == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "was written by a newer version of longmemeval-benchmarker" in err, err
    assert sorted(p.name for p in run_dir(project, "first").parent.iterdir()) == runs  # no run "gen", no error rows
