"""Keep or revert a fix: compare the pre-fix snapshot with the post-fix run and apply the loop's decision table.

Besides the comparison's flips (``run_comparison.compare``: the items both sides judged), a decision counts the items
it leaves out whose label changed (``error_flips``): ``references/SPEC.md``, "Comparing runs".

The command (its parser, ``main()`` and help text) is ``lme/cli/decide.py``."""

from __future__ import annotations

import json
import sys
from contextlib import redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from lme.score import run_comparison  # the comparison (compare_runs.py is its command)
from lme.score.comparison_record import Comparison
from lme.core import fileio
from lme.loop import branch
from lme.loop import state
from lme.loop import noise_floor
from lme.report import outputs
from lme.store import run_store
from lme.score import trigger_set
from lme.core.clock import utc_now
from lme.core.errors import UserError
from lme.core.facts import DECISIONS_FILE, OFFICIAL_JUDGE_MODEL, SCHEMA_VERSIONS, resolve_judge_model
from lme.judge import verdict_sources
from lme.loop.rules import assert_on_loop_branch
from lme.core.run_records import ResultRow


def decide(net: int, reusable: bool) -> str:
    """The decision table: ``keep`` or ``revert``."""
    if net >= 1:
        return "keep"
    if net >= -1:
        return "keep" if reusable else "revert"
    return "revert"


def retested_ids(snapshot_rows: Mapping[str, ResultRow], run_rows: Mapping[str, ResultRow]) -> list[str]:
    """Ids whose last row changed since the snapshot (the ones the fix's re-run touched)."""
    ids = list(dict.fromkeys([*snapshot_rows, *run_rows]))
    return [q for q in ids if snapshot_rows.get(q) != run_rows.get(q)]


def decision_label(decision: str, noise: Mapping[str, Any], net: int) -> str:
    """``keep``, ``keep (within noise)``, ``keep (noise not measured)`` or ``revert``."""
    if decision != "keep":
        return decision
    if not noise.get("measured"):
        return "keep (noise not measured)"
    return "keep (within noise)" if within_noise(noise, net) else "keep"


def within_noise(noise: Mapping[str, Any], net: int) -> bool:
    return bool(noise.get("measured")) and noise["low"] <= net <= noise["high"]


def parts(flips: Mapping[str, bool], failing: Sequence[str], control: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Fixes and regressions per part of the re-test set: ``failing`` (wrong in the snapshot: it can only be
    fixed) and ``control`` (right in the snapshot: it can only be broken). ``flips``: ``strict_flips``."""
    out = {}
    for name, ids in (("failing", failing), ("control", control)):
        changes = [flips[q] for q in ids if q in flips]
        out[name] = {"n": len(ids), "fixes": sum(1 for fixed in changes if fixed),
                     "regressions": sum(1 for fixed in changes if not fixed)}
    return out


def error_flips(comparison: Comparison, snapshot_rows: Mapping[str, ResultRow],
                run_rows: Mapping[str, ResultRow]) -> dict[str, bool]:
    """The items the comparison leaves out (an error row, or no row, on one side) whose strict label still changed
    between the snapshot and the run: ``{question_id: fixed?}``."""
    left_out = comparison.not_compared
    out = {}
    for qid in (*left_out.error_in_a, *left_out.error_in_b, *left_out.judged_only_in_a, *left_out.judged_only_in_b):
        before = qid in snapshot_rows and snapshot_rows[qid].correct
        after = qid in run_rows and run_rows[qid].correct
        if before != after:
            out[qid] = after
    return out


def readiness_problems(snapshot_rows: Mapping[str, ResultRow], run_rows: Mapping[str, ResultRow]) -> list[str]:
    """Why the run is not ready to be judged against the snapshot: items not re-run yet, or re-run into errors."""
    missing = [q for q in snapshot_rows if q not in run_rows]
    errored = [
        q for q, row in run_rows.items()
        if row.status == "error" and q in snapshot_rows and snapshot_rows[q].judged
    ]
    problems = []
    if missing:
        problems.append(f"{len(missing)} item(s) have no row yet (e.g. {', '.join(missing[:3])})")
    if errored:
        problems.append(f"{len(errored)} re-tested item(s) ended in an error row (e.g. {', '.join(errored[:3])})")
    return problems


def append_decision(project: Path, record: Mapping[str, Any]) -> Path:
    """Append one JSON line to decisions.jsonl, fsynced (the file only grows; a torn last line is cut first)."""
    path = Path(project) / DECISIONS_FILE
    fileio.make_dirs(path.parent)
    record = {"schemaVersion": SCHEMA_VERSIONS["loop-decision"], **record}
    line = (json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")
    fileio.append_jsonl(path, record, line=line)
    return path


def restore_from_snapshot(snapshot_dir: Path, run_dir: Path, ids: Sequence[str]) -> dict:
    """Put the snapshot's last rows and marks for ``ids`` back into the run (ids without a snapshot row vanish)."""
    snap_rows = run_store.load_results(snapshot_dir)
    snap_done = run_store.load_completed(snapshot_dir)
    add_rows = [snap_rows[q] for q in ids if q in snap_rows]
    add_completed = [q for q in ids if q in snap_done and q in snap_rows and snap_rows[q].label is not None]
    return run_store.rewrite_run(run_dir, ids, add_rows=add_rows, add_completed=add_completed, label="revert")


def rescore(project: Path, run_id: str) -> None:
    """Rewrite the run's metrics.json/scorecard.md after its rows changed (scorecard output goes to stderr)."""
    with redirect_stdout(sys.stderr):
        outputs.score_project_run(Path(project), run_id, charts=False)


@dataclass(frozen=True)
class _ReadyPair:
    """The round's snapshot and the post-fix run, loaded, with why the run is not ready yet (if it is not)."""

    round_no: int
    snap_dir: Path
    run_id: str
    run_dir: Path
    snap_rows: Mapping[str, ResultRow]
    run_rows: Mapping[str, ResultRow]
    problems: tuple[str, ...]


@dataclass(frozen=True)
class _RetestSet:
    """The items the fix's re-test covers: the recorded set (``retest.json``) and every row that changed."""

    changed_ids: tuple[str, ...]
    """Ids whose last row changed since the snapshot (a revert restores these)."""
    recorded: Mapping[str, Any]
    """The round's recorded re-test set (empty: none recorded)."""
    control_sampled: int
    ids: tuple[str, ...]
    failing: tuple[str, ...]
    """Of ``ids``, the ones wrong in the snapshot (they can only be fixed)."""
    control: tuple[str, ...]
    """Of ``ids``, the ones right in the snapshot (they can only be broken)."""


def run_decision(
    project: Path,
    snapshot: str,
    run_id: str,
    *,
    reusable: bool = False,
    fix_commit: str | None = None,
    apply: bool = False,
    allow_errors: bool = False,
) -> dict[str, Any]:
    project = Path(project)
    pair = _ready_pair(project, snapshot, run_id, allow_errors=allow_errors)
    comparison = run_comparison.compare(pair.snap_dir, pair.run_dir)
    retest = _retest_set(project, pair)
    record = _decision_record(project, pair, comparison, retest, reusable=reusable, fix_commit=fix_commit)
    return _log_decision(project, record, retest, apply=apply)


def judge_of(row: ResultRow, endpoints: Mapping[str, Any] | None = None) -> str | None:
    """Who made a row's verdict, as one name (None: not judged): the official judge (a call, the call cache or the
    verdict archive alike), else ``provider:model``, marked when it is the run's successor judge. Official is
    ``verdict_sources``' rule, the scorecard's (``endpoints``: its run's run-meta ``endpoints``), not the row's flag."""
    verdict = row.judgment
    if verdict is None:
        return None
    if verdict_sources.is_official(verdict, endpoints):
        return "the official judge"
    model = resolve_judge_model(verdict.requested_model or verdict.model)
    return f"{'the successor ' if verdict.successor else ''}{verdict.provider}:{model}"


@dataclass(frozen=True)
class JudgedRows:
    """One side of a decision: its last row per item and its run's recorded endpoints (run-meta ``endpoints``)."""

    rows: Mapping[str, ResultRow]
    endpoints: Mapping[str, Any] | None = None

    def judge(self, question_id: str) -> str | None:
        row = self.rows.get(question_id)
        return None if row is None else judge_of(row, self.endpoints)


def judge_mismatches(snapshot: JudgedRows, run: JudgedRows) -> list[tuple[str, str, str]]:
    """``(question_id, snapshot's judge, run's judge)`` for each item both judged, by different judges: a run that
    met a retired official judge mid-loop and judged its re-test with a successor, or a judge changed by hand. A row
    the re-test left as it was is its own judge on both sides."""
    out = []
    for q, row in run.rows.items():
        if snapshot.rows.get(q) == row:
            continue
        before, after = snapshot.judge(q), run.judge(q)
        if before is not None and after is not None and before != after:
            out.append((q, before, after))
    return out


def common_judge(run: JudgedRows, ids: Sequence[str]) -> str | None:
    """Who judged the re-tested items (``judge_of``; one judge: mixed judges are refused first), None if none."""
    return next((j for j in (run.judge(q) for q in ids) if j is not None), None)


def _refuse_mixed_judges(round_no: int, run_id: str, snapshot: JudgedRows, run: JudgedRows) -> None:
    """A keep or revert on items judged by two judges would measure the judges, not the fix: refused, always."""
    mixed = judge_mismatches(snapshot, run)
    if mixed:
        q, before, after = mixed[0]
        raise UserError(
            f"snapshot v{round_no} and run {run_id} were judged by different judges on {len(mixed)} item(s) "
            f"(e.g. {q}: {before} before, {after} after): their difference is not the fix's",
            fix=_one_judge_fix(before, after))


def _one_judge_fix(before: str, after: str) -> str:
    """How to judge both sides with one judge: the same endpoint when only where the judge was called differs (the
    scorecard's ``verdicts.endpoints`` names each side's), else a successor baseline after the official judge
    retired."""
    other = after if before == "the official judge" else before if after == "the official judge" else ""
    if other.endswith(f":{OFFICIAL_JUDGE_MODEL}") and not other.startswith("the successor "):
        return ("judge the re-test at the endpoint the baseline was judged at (official: api.openai.com or an Azure "
                "OpenAI resource; each scorecard's verdicts.endpoints names its hosts), then decide again")
    return ("judge the baseline and the re-test with one judge: after the official judge retired, rounds.py "
            "successor-baseline voids this round (its fix reverted) and takes a new baseline judged by the "
            "user's calibrated successor throughout (references/judging-after-2027-01-14.md, \"The loop across "
            "the day\")")


def _ready_pair(project: Path, snapshot: str, run_id: str, *, allow_errors: bool) -> _ReadyPair:
    """Load the snapshot and the run; refuse a run not ready to be judged unless ``allow_errors``."""
    round_no = state.parse_snapshot(snapshot)
    snap_dir = state.snapshot_dir(project, round_no)
    if not snap_dir.is_dir():
        raise UserError(f"no snapshot v{round_no} at {snap_dir}", fix="take it with rounds.py snapshot before the fix")
    run_dir = run_store.existing_run_dir(project, run_id)
    snap_rows = run_store.load_results(snap_dir)
    run_rows = run_store.load_results(run_dir)
    _refuse_mixed_judges(round_no, run_id, JudgedRows(snap_rows, run_store.read_meta(snap_dir).endpoints),
                         JudgedRows(run_rows, run_store.read_meta(run_dir).endpoints))
    problems = readiness_problems(snap_rows, run_rows)
    if problems and not allow_errors:
        raise UserError(
            f"run {run_id} is not ready to judge the fix: {'; '.join(problems)}",
            fix="resume the run (parallel_longmemeval.sh) until every item is judged, or pass --allow-errors",
        )
    return _ReadyPair(round_no, snap_dir, run_id, run_dir, snap_rows, run_rows, tuple(problems))


def _retest_set(project: Path, pair: _ReadyPair) -> _RetestSet:
    """The recorded re-test set (its control part as far as the snapshot has it) joined with the changed rows."""
    changed_ids = retested_ids(pair.snap_rows, pair.run_rows)
    recorded = trigger_set.read_retest(project, pair.round_no) or {}
    control = [q for q in recorded.get("control") or () if q in pair.snap_rows]
    ids = list(dict.fromkeys([*(recorded.get("failing") or ()), *control, *changed_ids]))
    snap = pair.snap_rows
    return _RetestSet(tuple(changed_ids), recorded, len(control), tuple(ids),
                      failing=tuple(q for q in ids if q in snap and not snap[q].correct),
                      control=tuple(q for q in ids if q in snap and snap[q].correct))


def _decision_record(project: Path, pair: _ReadyPair, comparison: Comparison, retest: _RetestSet, *,
                     reusable: bool, fix_commit: str | None) -> dict[str, Any]:
    """The decisions.jsonl record: the comparison, the decision on it, the re-test set and its noise band."""
    errors = error_flips(comparison, pair.snap_rows, pair.run_rows)
    flips = {**{c.question_id: c.after for c in comparison.changed}, **errors}  # judged by both, and to/from errors
    fixes = sum(1 for fixed in flips.values() if fixed)
    regressions = len(flips) - fixes
    decided_net = fixes - regressions - comparison.flaky_flips.net
    decision = decide(decided_net, reusable)  # a flip of an unstable label is noise
    failing, control = list(retest.failing), list(retest.control)
    per_type = _per_type(comparison, errors, pair.snap_rows, pair.run_rows)
    floor = noise_floor.measured_for(project, run_store.read_meta(pair.run_dir))
    noise = noise_floor.band(floor, [pair.snap_rows[q].question_type for q in failing],
                             [pair.snap_rows[q].question_type for q in control])
    record: dict[str, Any] = {
        "at": utc_now(),
        "round": pair.round_no,
        "snapshot": f"v{pair.round_no}",
        "run_id": pair.run_id,
        "fix_commit": fix_commit,
        "reusable": reusable,
        "fixes": fixes,
        "regressions": regressions,
        "net": fixes - regressions,
        "flaky_flips": comparison.flaky_flips.to_dict(),
        "net_excluding_flaky": decided_net,
        "p_value": run_comparison.mcnemar_exact_p(regressions, fixes),
        "judged_in_both": {"n": comparison.n_compared, "fixes": comparison.fixes,
                           "regressions": comparison.regressions},
        "error_flips": {"fixes": sum(1 for fixed in errors.values() if fixed),
                        "regressions": sum(1 for fixed in errors.values() if not fixed), "ids": sorted(errors)},
        "not_compared": comparison.not_compared.to_dict(),
        "code": None if comparison.code is None else comparison.code.to_dict(),
        "per_type_net": {t: b["net"] for t, b in per_type.items() if b["n"]},
        "retested": len(retest.changed_ids),
        "retest_ids": list(retest.ids),
        "retest_set": {"size": len(failing) + len(control), "failing": len(failing), "control": len(control),
                       "control_sampled": retest.control_sampled, "recorded": bool(retest.recorded),
                       "parts": parts(flips, failing, control)},
        "noise": {**noise, "within": within_noise(noise, decided_net),
                  "measured_at": None if floor is None else floor.get("measured_at")},
        "per_type": {t: b for t, b in per_type.items() if b["n"]},
        "decision": decision,
        "label": decision_label(decision, noise, decided_net),
        "applied": False,
        "revert_commit": None,
        "readiness_problems": list(pair.problems),
        "judge": common_judge(JudgedRows(pair.run_rows, run_store.read_meta(pair.run_dir).endpoints), retest.ids),
    }
    try:
        record["retest_figures"] = state.RoundFigures.of_metrics(run_store.read_metrics(pair.run_dir)).to_dict()
    except UserError:
        record["retest_figures"] = None  # the re-test ran with --no-scorecard: rescored below when reverted
    return record


def _per_type(comparison: Comparison, errors: Mapping[str, bool], snapshot_rows: Mapping[str, ResultRow],
              run_rows: Mapping[str, ResultRow]) -> dict[str, dict[str, int]]:
    """Fixes, regressions and net per question type: the comparison's, plus the ``error_flips``."""
    out = {t: {"n": b.n, "fixes": b.fixes, "regressions": b.regressions, "net": b.net}
           for t, b in comparison.per_type.items()}
    for qid, fixed in errors.items():
        row = snapshot_rows.get(qid) or run_rows[qid]
        bucket = out.setdefault(row.question_type, {"n": 0, "fixes": 0, "regressions": 0, "net": 0})
        bucket["n"] += 1
        bucket["fixes" if fixed else "regressions"] += 1
        bucket["net"] += 1 if fixed else -1
    return out


def _log_decision(project: Path, record: dict[str, Any], retest: _RetestSet, *, apply: bool) -> dict[str, Any]:
    """Append the decision; with ``apply``, a revert is recorded first and then carried out (``apply_revert``)."""
    if apply and record["decision"] == "revert":
        if not record["fix_commit"]:
            raise UserError("a revert needs the fix commit", fix="pass --fix-commit <sha> (git log --oneline)")
        assert_on_loop_branch(project=project)
        record["restored_ids"] = list(retest.changed_ids)
        record["applying"] = True  # the decision first: a crash while applying it resumes it (apply_revert)
        append_decision(project, record)
        return apply_revert(project, record)
    record["applied"] = bool(apply)
    append_decision(project, record)
    return record


def apply_revert(project: Path, record: Mapping[str, Any]) -> dict[str, Any]:
    """Carry out a recorded revert: ``git revert`` of the fix (once), the snapshot's rows back for the re-tested
    ids, the run rescored, then the record again with ``applied``. Each step can simply run again: after a crash
    anywhere in it, the same call finishes it, and the decision is never taken twice."""
    project = Path(project)
    record = dict(record)
    round_no = int(record["round"])
    run_dir = run_store.existing_run_dir(project, record["run_id"])
    record["revert_commit"] = branch.revert(str(record["fix_commit"]), project=project)
    restored = restore_from_snapshot(state.snapshot_dir(project, round_no), run_dir, record["restored_ids"])
    record["backup"] = restored["backup"]
    rescore(project, record["run_id"])
    record.update(applied=True, applying=False)
    append_decision(project, record)
    return record


def describe_noise(record: Mapping[str, Any]) -> str:
    """The re-test set and the noise band, for the printed line."""
    retest, noise = record.get("retest_set"), record.get("noise")
    if not retest or not noise:
        return ""
    split = retest["parts"]
    text = (f"; re-test set {retest['size']} ({split['failing']['n']} failing: {split['failing']['fixes']} fixed, "
            f"{split['control']['n']} control: {split['control']['regressions']} broken)")
    if not noise["measured"]:
        return text + "; noise floor not measured (parallel_longmemeval.sh ... --noise-floor)"
    if record["decision"] == "keep":
        where = "inside it: not a significant fix" if noise["within"] else "outside it: a real change"
    else:
        where = "inside it" if noise["within"] else "outside it"
    return (text + f"; noise: {noise['expected_flips']:g} flips expected on {noise['set_size']} items, "
            f"band {noise['low']:+d}..{noise['high']:+d}, {where}")


def describe(record: Mapping[str, Any]) -> str:
    if record["decision"] == "void":
        return (f"VOID: round {record['snapshot']} was in flight when the official judge retired; its fix "
                f"{record.get('fix_commit') or '(none yet)'} was never measured by one judge"
                + (f" and is reverted ({record['revert_commit']})" if record.get("revert_commit") else ""))
    label = record.get("label", record["decision"])
    verdict = record["decision"].upper() + label[len(record["decision"]):]  # KEEP (within noise)
    line = (
        f"{verdict}: net {record['net']:+d} (fixes {record['fixes']}, regressions {record['regressions']}, "
        f"McNemar p={record['p_value']:.3g}) vs snapshot {record['snapshot']}"
    )
    line += describe_noise(record)
    errors = record.get("error_flips") or {}
    if errors.get("ids"):
        line += (f"; {len(errors['ids'])} of them to or from an error row, counted strictly "
                 f"({', '.join(errors['ids'][:5])}{' ...' if len(errors['ids']) > 5 else ''})")
    code = record.get("code")
    if code and not code.get("same"):
        changed = "; ".join(f"{kind} {', '.join(paths)}" for kind, paths in (code.get("files") or {}).items() if paths)
        line += f"; code changed: {changed}" if changed else "; code: not recorded for every row"
    if str(record.get("judge") or "").startswith("the successor "):
        line += f"; judged by {record['judge']} before and after (the official judge retired): not official"
    flaky = record.get("flaky_flips") or {}
    if flaky.get("ids"):
        line += (f"; decided on net {record['net_excluding_flaky']:+d} without {len(flaky['ids'])} flip(s) of "
                 f"unstable judge labels ({', '.join(flaky['ids'])})")
    if record["decision"] == "keep" and record.get("net_excluding_flaky", record["net"]) < 1:
        line += " — kept only because --reusable"
    if record["applied"] and record["decision"] == "revert":
        line += f"; reverted {record['fix_commit']} ({record['revert_commit']}), restored {record['retested']} item(s)"
    elif not record["applied"] and record["decision"] == "revert":
        line += "; run again with --apply --fix-commit <sha> to revert"
    return line
