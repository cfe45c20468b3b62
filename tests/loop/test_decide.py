"""decide: the keep/revert table on real snapshot/run pairs, the revert applied to files and git, the log."""

from __future__ import annotations

import json

import pytest

import factories
from lme.store import run_store
from lme.loop import decide
from lme.cli import decide as decide_cli
from lme.score import drop_qids
from lme.loop import branch as loop_git
from lme.loop import state as loop_state
from lme.loop import steps as loop_steps
from lme.core.errors import UserError, run_main
from loop_testing import git, item_ids, make_loop_project, make_row, write_run
from factories import scorecard_of


@pytest.mark.parametrize(
    "net,reusable,expected",
    [(3, False, "keep"), (1, False, "keep"), (0, False, "revert"), (0, True, "keep"), (-1, False, "revert"),
     (-1, True, "keep"), (-2, False, "revert"), (-2, True, "revert"), (-7, True, "revert")],
)
def test_decision_table(net, reusable, expected):
    assert decide.decide(net, reusable) == expected


def _round(project, fixes: int, regressions: int):
    """Baseline of 12 items (even ids right), snapshot v1, then a re-run of some ids with the given effect."""
    types = item_ids(12)
    ids = list(types)
    run_dir = write_run(project, "loop", types, {q: i % 2 == 0 for i, q in enumerate(ids)})
    loop_state.init(project)
    loop_state.bump(project)
    loop_steps.snapshot(project, "loop")
    wrong = [q for i, q in enumerate(ids) if i % 2 == 1]
    right = [q for i, q in enumerate(ids) if i % 2 == 0]
    retest = wrong[:fixes] + right[:regressions] + [right[-1]]  # the last one re-runs and stays right
    drop_qids.drop_qids(run_dir, retest)
    new = {q: (q in wrong[:fixes]) or (q == right[-1]) for q in retest}
    write_run(project, "loop", types, new)
    return run_dir, retest, types


@pytest.fixture
def project(tmp_path):
    return make_loop_project(tmp_path)


def test_net_positive_fix_is_kept_and_logged(project):
    _round(project, fixes=3, regressions=1)
    record = decide.run_decision(project, "v1", "loop", apply=True)
    assert (record["fixes"], record["regressions"], record["net"], record["decision"]) == (3, 1, 2, "keep")
    logged = [json.loads(line) for line in (project / ".longmemeval-benchmarks/decisions.jsonl").read_text().splitlines()]
    assert logged[-1]["decision"] == "keep" and logged[-1]["net"] == 2


def test_net_minus_one_is_kept_only_when_reusable(project, capsys):
    _round(project, fixes=1, regressions=2)
    assert run_main(decide_cli.main, ["--project", str(project), "--snapshot", "v1", "--run-id", "loop"]) == 0
    assert capsys.readouterr().out.startswith("REVERT: net -1")
    assert run_main(decide_cli.main, ["--project", str(project), "--snapshot", "v1", "--run-id", "loop", "--reusable"]) == 0
    assert "kept only because --reusable" in capsys.readouterr().out
    assert len((project / ".longmemeval-benchmarks/decisions.jsonl").read_text().splitlines()) == 2


def test_harmful_fix_is_reverted_in_git_and_snapshot_verdicts_restored(project):
    (project / "fix.py").write_text("harmful = True\n")
    sha = loop_git.commit("fix: harmful", ["fix.py"], project=project)
    run_dir, retest, types = _round(project, fixes=0, regressions=3)
    snap = project / ".longmemeval-benchmarks/snapshots/v1"
    record = decide.run_decision(project, "v1", "loop", fix_commit=sha, apply=True)
    assert record["decision"] == "revert" and record["net"] == -3 and record["applied"]
    assert not (project / "fix.py").exists()
    assert git(["log", "-1", "--format=%s"], project).stdout.startswith('Revert "fix: harmful"')
    assert factories.load_rows(run_dir) == factories.load_rows(snap)
    assert run_store.load_completed(run_dir) == run_store.load_completed(snap)
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["correct"] == json.loads((snap / "metrics.json").read_text())["correct"] == 6


def test_revert_without_fix_commit_is_refused_before_touching_anything(project):
    run_dir, _, _ = _round(project, fixes=0, regressions=2)
    before = (run_dir / "item-results.jsonl").read_bytes()
    with pytest.raises(UserError, match="fix commit"):
        decide.run_decision(project, "v1", "loop", apply=True)
    assert (run_dir / "item-results.jsonl").read_bytes() == before


def test_run_with_items_not_rerun_yet_is_not_judged(project):
    types = item_ids(6)
    run_dir = write_run(project, "loop", types, {q: True for q in types})
    loop_state.init(project)
    loop_steps.snapshot(project, "loop")
    drop_qids.drop_qids(run_dir, list(types)[:2])
    with pytest.raises(UserError, match="not ready.*2 item"):
        decide.run_decision(project, "v0", "loop")


def test_rerun_that_ended_in_errors_needs_allow_errors(project):
    types = item_ids(6)
    ids = list(types)
    run_dir = write_run(project, "loop", types, {q: True for q in ids})
    loop_state.init(project)
    loop_steps.snapshot(project, "loop")
    factories.append_unmarked(run_dir, make_row(ids[0], types[ids[0]], None))
    with pytest.raises(UserError, match="error row"):
        decide.run_decision(project, "v0", "loop")
    assert decide.run_decision(project, "v0", "loop", allow_errors=True)["regressions"] == 1


def test_missing_snapshot_is_a_user_error(project, capsys):
    assert run_main(decide_cli.main, ["--project", str(project), "--snapshot", "v9", "--run-id", "loop"]) == 2
    assert "no snapshot v9" in capsys.readouterr().err


@pytest.mark.parametrize("rate,label,where", [
    (0.3, "keep (within noise)", "inside it: not a significant fix"),  # +2 on 8 items flipping 30%: noise
    (0.0, "keep", "outside it: a real change"),                        # a system that never flips: +2 is real
    (None, "keep (noise not measured)", "noise floor not measured"),
])
def test_a_keep_inside_the_noise_band_is_labelled_within_noise_never_a_fix(project, rate, label, where):
    from loop_testing import measure_noise_floor

    _round(project, fixes=3, regressions=1)
    if rate is not None:
        measure_noise_floor(project, "loop", rate)
    record = decide.run_decision(project, "v1", "loop")
    assert (record["decision"], record["label"], record["net"]) == ("keep", label, 2)
    line = decide.describe(record)
    assert line.startswith(label.replace("keep", "KEEP", 1) + ": net +2") and where in line
    if rate:
        noise = record["noise"]
        size = record["retest_set"]["size"]  # 4 or 5: the re-run that stays right may write an identical row
        assert size in (4, 5) and noise["set_size"] == size and noise["low"] <= 2 <= noise["high"]
        assert noise["expected_flips"] == pytest.approx(0.3 * size)
    assert record["retest_set"]["parts"]["failing"] == {"n": 3, "fixes": 3, "regressions": 0}


def test_the_record_splits_fixes_and_regressions_by_the_recorded_parts_of_the_trigger_set(project):
    from lme.score import trigger_set

    _run_dir, retest, _types = _round(project, fixes=2, regressions=2)
    failing, control = retest[:2], retest[2:]
    trigger_set.record_retest(project, trigger_set.TriggerSet(tuple(failing), tuple(control)), run_id="loop",
                              round_no=1)
    record = decide.run_decision(project, "v1", "loop")
    parts = record["retest_set"]["parts"]
    assert parts["failing"] == {"n": 2, "fixes": 2, "regressions": 0}
    assert parts["control"] == {"n": 3, "fixes": 0, "regressions": 2} and record["retest_set"]["recorded"]
    assert sorted(record["retest_ids"]) == sorted(retest)


def test_a_re_test_judged_by_a_successor_is_refused_against_an_official_snapshot(project, capsys):
    """The official judge retires on 2027-01-14: a round whose baseline the official judge labelled and whose
    re-test a successor labelled compares two judges. decide refuses it in one line, --allow-errors or not, and
    logs nothing."""
    run_dir, retest, types = _round(project, fixes=2, regressions=0)
    successor = {"official": False, "successor": True, "provider": "openai", "model": "o3-2025-04-16",
                 "requested_model": "o3-2025-04-16"}
    write_run(project, "loop", types, {q: True for q in retest},
              rows={q: make_row(q, types[q], True, judgment=successor) for q in retest})
    for extra in ([], ["--allow-errors"]):
        code = run_main(decide_cli.main, ["--project", str(project), "--snapshot", "v1", "--run-id", "loop", *extra])
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1, err
        assert f"different judges on {len(retest)} item(s)" in err and "the successor openai:o3-2025-04-16" in err
    assert not (project / ".longmemeval-benchmarks/decisions.jsonl").exists()


def test_an_official_verdict_from_the_archive_or_the_cache_is_the_same_judge(project):
    run_dir, retest, types = _round(project, fixes=2, regressions=0)
    archived = {"source": "archive", "endpoint_host": "api.openai.com", "origin": {"kind": "made", "by": "run loop"}}
    write_run(project, "loop", types, {q: True for q in retest},
              rows={q: make_row(q, types[q], True, judgment=archived) for q in retest})
    assert decide.run_decision(project, "v1", "loop")["net"] == 2


def _code(files):
    """A code version's id and its run-meta invocation entry (``CodeVersion``'s form) for ``{path: content}``."""
    import hashlib

    hashes = {p: hashlib.sha256(c.encode()).hexdigest() for p, c in files.items()}
    code_id = hashlib.sha256("".join(f"{p}\t{h}\n" for p, h in sorted(hashes.items())).encode()).hexdigest()[:16]
    return code_id, {"code": {"id": code_id, "files": hashes, "sources": ["target folder memory_system/ (git)"],
                              "git": None}}


def _record_invocations(run_dir, *invocations):
    path = run_dir / "run-meta.json"
    meta = json.loads(path.read_text())
    path.write_text(json.dumps({**meta, "invocations": list(invocations)}))


def test_a_fix_that_leaves_right_items_as_error_rows_is_reverted_and_the_changed_code_is_named(project):
    """The comparison counts only items both sides judged; the decision still counts a re-test's error row on an
    item the snapshot had right as a regression (the fix broke it), and names the files the fix changed."""
    types = item_ids(8)
    ids = list(types)
    id_a, inv_a = _code({"memory_system/reader.py": "v1", "memory_system/index.py": "i"})
    id_b, inv_b = _code({"memory_system/reader.py": "v2", "memory_system/index.py": "i"})
    labels = {q: i % 2 == 0 for i, q in enumerate(ids)}
    run_dir = write_run(project, "loop", types, labels,
                        rows={q: make_row(q, types[q], v, code=id_a) for q, v in labels.items()})
    _record_invocations(run_dir, inv_a)
    loop_state.init(project)
    loop_state.bump(project)
    loop_steps.snapshot(project, "loop")
    broken, fixed = ids[0:6:2][:3], ids[1]
    drop_qids.drop_qids(run_dir, [*broken, fixed])
    retest = {**{q: None for q in broken}, fixed: True}
    write_run(project, "loop", types, retest,
              rows={q: make_row(q, types[q], v, code=id_b, kind="target") for q, v in retest.items()})
    _record_invocations(run_dir, inv_a, inv_b)
    with pytest.raises(UserError, match="error row"):
        decide.run_decision(project, "v1", "loop")
    record = decide.run_decision(project, "v1", "loop", allow_errors=True)
    assert (record["fixes"], record["regressions"], record["net"], record["decision"]) == (1, 3, -2, "revert")
    assert record["judged_in_both"] == {"n": 5, "fixes": 1, "regressions": 0}
    assert record["error_flips"] == {"fixes": 0, "regressions": 3, "ids": sorted(broken)}
    assert record["not_compared"]["error_in_b"] == broken
    assert record["code"]["same"] is False
    assert record["code"]["files"] == {"changed": ["memory_system/reader.py"], "added": [], "removed": []}
    line = decide.describe(record)
    assert line.startswith("REVERT: net -2 (fixes 1, regressions 3")
    assert "3 of them to or from an error row, counted strictly" in line
    assert "code changed: changed memory_system/reader.py" in line


# --------------------------------------------------------------------------- rows of older versions (issue 38, 3)
# Rows written before verdicts recorded their host carry ``judgment.official: true`` for any host. Today a verdict
# is official only when the official judge was called at an official host: the flag is recomputed from what the
# row and its run recorded (``verdict_sources.classify``), never trusted, by the scorecard and decide alike.

FAKE_HOST = "127.0.0.1:8123"
UPSTREAM_SHAPE = {"family": "upstream", "max_tokens": 10, "temperature": 0, "n": 1}
JUDGED_HERE_TODAY = {"official": False, "endpoint_host": FAKE_HOST, "request_shape": UPSTREAM_SHAPE,
                     "requested_model": "gpt-4o-2024-08-06"}
"""What today's version writes for a verdict of gpt-4o-2024-08-06 made at the fake server (not an official host)."""


def _judge_endpoint(run_dir, url):
    """Run-meta's ``endpoints``: where the run's judge was called (what an old row's verdict is judged by)."""
    path = run_dir / "run-meta.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "endpoints": {"openai": url}}))


def _old_round(project, endpoint: str, retest_judgment: dict, fixes: int = 2):
    """A baseline of old-version rows (``official: true``, no host, no shape) judged at ``endpoint``, snapshot v1,
    then a re-test of ``fixes`` wrong items (and one right one) judged by today's version with ``retest_judgment``."""
    types = item_ids(12)
    ids = list(types)
    run_dir = write_run(project, "loop", types, {q: i % 2 == 0 for i, q in enumerate(ids)})
    _judge_endpoint(run_dir, endpoint)
    loop_state.init(project)
    loop_state.bump(project)
    loop_steps.snapshot(project, "loop")
    retest = [q for i, q in enumerate(ids) if i % 2 == 1][:fixes] + [ids[-2]]
    drop_qids.drop_qids(run_dir, retest)
    write_run(project, "loop", types, {q: True for q in retest},
              rows={q: make_row(q, types[q], True, judgment=retest_judgment) for q in retest})
    _judge_endpoint(run_dir, endpoint)
    return run_dir, retest


def _official_on_the_scorecard(run_dir) -> int:
    verdicts = scorecard_of(run_store.load_run(run_dir)).to_dict()["verdicts"]
    return verdicts["official_live"] + verdicts["official_archived"]


def test_old_rows_flagged_official_at_a_host_that_is_not_are_the_same_judge_as_todays_rows_there(project):
    """Old rows say ``official: true`` although their judge was called at the fake server; today's re-test rows at
    the same server say ``official: false``. Same judge, same host: decide keeps or reverts, and it names the judge
    as the scorecard counts it (not official, on either side)."""
    run_dir, retest = _old_round(project, f"http://{FAKE_HOST}/v1", JUDGED_HERE_TODAY)
    snap = loop_state.snapshot_dir(project, 1)
    assert _official_on_the_scorecard(snap) == 0 and _official_on_the_scorecard(run_dir) == 0
    record = decide.run_decision(project, "v1", "loop")
    assert (record["net"], record["decision"]) == (2, "keep")
    assert record["judge"] == "openai:gpt-4o-2024-08-06"  # not "the official judge": the scorecard says it is not


def test_old_rows_at_the_official_host_against_todays_rows_at_another_host_are_different_judges(project, capsys):
    """The same model called at api.openai.com before and at the fake server after: the official judge against one
    that is not (the scorecard says so of each side), refused as before."""
    run_dir, retest = _old_round(project, "https://api.openai.com/v1", JUDGED_HERE_TODAY)
    assert _official_on_the_scorecard(loop_state.snapshot_dir(project, 1)) == 12
    code = run_main(decide_cli.main, ["--project", str(project), "--snapshot", "v1", "--run-id", "loop"])
    err = capsys.readouterr().err
    assert code == 2 and f"different judges on {len(retest)} item(s)" in err
    assert "the official judge before, openai:gpt-4o-2024-08-06 after" in err
    assert "judge the re-test at the endpoint the baseline was judged at" in err


def test_old_rows_at_a_host_that_is_not_official_against_a_successor_are_still_different_judges(project, capsys):
    successor = {"official": False, "successor": True, "provider": "openai", "model": "o3-2025-04-16",
                 "requested_model": "o3-2025-04-16", "endpoint_host": FAKE_HOST}
    _old_round(project, f"http://{FAKE_HOST}/v1", successor)
    code = run_main(decide_cli.main, ["--project", str(project), "--snapshot", "v1", "--run-id", "loop"])
    err = capsys.readouterr().err
    assert code == 2 and "openai:gpt-4o-2024-08-06 before, the successor openai:o3-2025-04-16 after" in err
