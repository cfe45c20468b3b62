"""The loop across the day the official judge retires (gpt-4o-2024-08-06 leaves OpenAI's API on 2027-01-14).

The loop's judge is the official one, or, after the day, the user's calibrated successor throughout
(``rules.loop_judge``): ``halt`` records the day and stops the loop unless the config names a calibrated successor;
``successor_baseline`` voids the round in flight and hands every later loop run to the successor alone. The whole
story is references/judging-after-2027-01-14.md, "The loop across the day".
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from lme.core import bounded_json
from lme.core import command_names
from lme.core import fileio
from lme.core.clock import utc_now
from lme.core.errors import UserError
from lme.core.facts import (CONFIG_FILE, CONFIRMATION_FILE, JUDGE_DAY_FILE, OFFICIAL_JUDGE_MODEL, SCHEMA_VERSIONS,
                            STATE_DIR)
from lme.judge import agreement
from lme.judge import request_shapes
from lme.judge import verdict_archive
from lme.judge.successor_judge import reasoning_effort
from lme.loop import branch
from lme.loop import decide
from lme.loop import rules
from lme.loop import session
from lme.loop import state
from lme.run.settings import RunSettings
from lme.store import run_store

EXIT_HALTED = 2
"""A loop run or step stopped because the official judge retired (BLOCKED, or a successor baseline to take)."""
VENV_RUN = Path(__file__).resolve().parents[2] / "venv_run.sh"
_CONFIG = f"{STATE_DIR}/{CONFIG_FILE}"


class JudgeRetired(UserError):
    """A loop run after the day with no baseline of a calibrated successor the config names: the loop halts."""

    def __init__(self, how: str) -> None:
        self.how = how
        super().__init__(f"the official judge retired ({how}): the loop has no successor baseline yet",
                         fix="rounds.py successor-baseline once the user named a calibrated successor")


@dataclass(frozen=True)
class NamedSuccessor:
    """The successor the user named in the config, and its calibration."""

    spec: str | None
    """``provider:model`` (``rules.successor_named``), None when none is named."""
    shape: Mapping[str, Any] | None
    """The request shape it is called with (its family; ``judgeReasoningEffort``)."""
    calibration: Mapping[str, Any] | None
    """The latest ``judge_agreement.py`` record of it with that shape (None: uncalibrated)."""


def named_successor(project: Path) -> NamedSuccessor:
    spec = rules.successor_named(project)
    if spec is None:
        return NamedSuccessor(None, None, None)
    provider, _, model = spec.partition(":")
    effort = reasoning_effort(rules.read_project_config(project).get("judgeReasoningEffort"))
    shape = request_shapes.shape_for(provider, model, effort).to_dict()
    return NamedSuccessor(spec, shape, agreement.latest(project, provider, model, shape=shape))


def for_loop_run(settings: RunSettings, given: str | None) -> RunSettings:
    """A loop run's settings with the loop's judge: the official one (no successor: a fallback item by item would
    mix two judges in one baseline), or after the day the recorded successor for every item. ``given``: the
    command line's ``--successor``, refused unless it is the config's. Raises ``JudgeRetired`` after the day
    while the loop has no baseline of the config's successor."""
    judge = rules.loop_judge(Path(settings.project))
    if given is not None and settings.successor_judge != judge.named:
        raise UserError(f"--successor {given}: the loop's successor is the one the user names in the config "
                        f"(successorJudge: {judge.named or 'none'}), never one named on the command line",
                        fix=f"drop --successor; only the user sets successorJudge in {_CONFIG}")
    if judge.kind == "official":
        return dataclasses.replace(settings, successor_judge=None, successor_only=False)
    if judge.kind == "successor":  # the loop recorded the official judge gone: estimates price the successor
        return dataclasses.replace(settings, successor_judge=judge.successor, successor_only=True,
                                   official_judge_gone=True)
    raise JudgeRetired("recorded earlier, in judge-day.json")


def record_day(project: Path, run_id: str | None, how: str) -> dict[str, Any]:
    """judge-day.json: when and how a loop run first found the official judge gone (later finds keep it)."""
    project = Path(project)
    found = rules.judge_day_record(project)
    if found is not None:
        return dict(found)
    try:
        round_no = state.current(project)
    except UserError:
        round_no = 0
    record = {"schemaVersion": SCHEMA_VERSIONS["judge-day"], "official_judge": f"openai:{OFFICIAL_JUDGE_MODEL}",
              "retired_found_at": utc_now(), "found_by": {"run_id": run_id, "how": how, "round": round_no},
              "successor": None, "request_shape": None, "calibration": None, "baseline_at": None}
    fileio.write_atomic_json(project / JUDGE_DAY_FILE, record)
    return record


def halt(project: Path, run_id: str | None, how: str, *, log: bool = True) -> list[str]:
    """A loop run found the official judge gone (``how``): the day recorded and the loop's next move, as lines to
    print. With a calibrated successor the config names: its baseline. Otherwise BLOCKED (logged once per loop
    session, so the Stop hook lets the session end) with the user's choices. ``log`` False (a dry run): say it,
    write nothing."""
    project = Path(project)
    if log:
        record_day(project, run_id, how)
    named = named_successor(project)
    if named.spec is not None and named.calibration is not None:
        return [f"the official judge {OFFICIAL_JUDGE_MODEL} retired ({how}): the config names the calibrated "
                f"successor {named.spec} ({agreement.describe(named.calibration)}); the loop goes on with a "
                "new baseline judged by it throughout, never official",
                f"  next: {baseline_step(project)}, then step 1 (the full run, judged by the successor)"]
    if log:
        block_once(project, "judge-retired" if named.spec is None else "judge-uncalibrated")
    return blocked_lines(project, how, named)


def baseline_step(project: Path) -> str:
    """The line that takes the successor's baseline (the skill's "The official judge retired")."""
    run_id = rules.loop_config(project).get("run_id")
    return f'bash "{VENV_RUN}" rounds.py successor-baseline --run-id {run_id}'


def block_once(project: Path, reason: str) -> None:
    """The BLOCKED row of ``reason``, unless this loop session logged it already (a run that stopped mid-run, then
    the same step run again)."""
    text = state.BLOCK_REASONS[reason]
    if not any(row.startswith("| BLOCKED |") and text in row for row in session.rows_since_start(project)):
        state.blocked(project, reason)


def blocked_lines(project: Path, how: str, named: NamedSuccessor) -> list[str]:
    """``BLOCKED: official judge retired`` and the user's choices (the agent chooses none)."""
    lines = [f"BLOCKED: official judge retired ({OFFICIAL_JUDGE_MODEL} answers 404 / 410, {how}): the loop is "
             "halted until the user chooses:",
             f"  1. archive-only figures: {archive_coverage(project)}; nothing new can be judged officially, so the "
             "loop cannot go on officially (judge_shim.py archive-status --project . counts what the archive holds; "
             "the last official figures stay in history_max_effort.md)",
             f"  2. a successor the user names: \"successorJudge\": \"provider:model\" in {_CONFIG}, calibrated "
             "first on the official verdicts (judge_agreement.py --all --candidate provider:model --project .); "
             f"then {command_names.ITERATE} again takes a new baseline judged by it throughout: its figures are "
             "labelled, never official"]
    if named.spec is not None:
        lines.append(f"  the config names {named.spec}, uncalibrated (no judge_agreement.py record of it with the "
                     f"request shape {request_shapes.describe(named.shape)}): calibrate it first: judge_agreement.py "
                     f"--all --candidate {named.spec} --project .")
    lines.append("Tell the user these choices and stop: only the user names the successor (the loop's rules cannot "
                 "edit the config).")
    return lines


def archive_coverage(project: Path) -> str:
    """How much of the loop run still scores officially from the verdict archive, in words."""
    run_id = str(rules.loop_config(project).get("run_id"))
    try:
        rows = run_store.load_results(run_store.existing_run_dir(project, run_id))
    except UserError:
        return f"the loop run {run_id} has no rows to look up"
    archive = verdict_archive.for_project(project)
    prompts = [r.judgment.prompt_sha256 for r in rows.values() if r.judgment is not None]
    found = 0 if archive is None else sum(1 for p in prompts if p and archive.lookup(p, OFFICIAL_JUDGE_MODEL))
    return (f"{found} of the {len(rows)} hypotheses of the loop run {run_id} have an archived official verdict "
            "and still score as official")


def successor_baseline(project: Path, run_id: str) -> tuple[int, list[str]]:
    """The loop after the day: with the config's successor calibrated, void the round in flight, un-complete every
    item of ``run_id`` the successor did not judge, record the successor, commit and push. Returns (exit status,
    lines). Run again, it has nothing to do; with no usable successor it is the BLOCKED halt."""
    project = Path(project)
    judge = rules.loop_judge(project)
    if judge.kind == "official":
        return 0, ["the official judge has not retired for this loop (no judge-day.json): nothing to do; the "
                   "loop's judge stays the official one"]
    if judge.kind == "successor":
        return 0, [f"the successor {judge.successor} judges this loop already (its baseline began "
                   f"{(judge.record or {}).get('baseline_at')}): nothing to do; go on at the step rounds.py status "
                   "names"]
    named = named_successor(project)
    if named.spec is None or named.calibration is None:
        block_once(project, "judge-retired" if named.spec is None else "judge-uncalibrated")
        return EXIT_HALTED, blocked_lines(project, "recorded earlier, in judge-day.json", named)
    rules.assert_on_loop_branch(project=project)
    run_dir = run_store.existing_run_dir(project, run_id)
    state.init(project)
    voided = void_round(project, run_id)
    void_confirmation(project)
    rejudged = [q for q, row in run_store.load_results(run_dir).items() if not judged_by(row, named.spec)]
    if rejudged:
        run_store.rewrite_run(run_dir, rejudged, label="successor-baseline")
    note = baseline_note(named, voided)
    if not any(row.startswith("| JUDGE |") and note in row for row in session.rows_since_start(project)):
        state.append_history_row(project, state.judge_row(note))
    fileio.write_atomic_json(project / JUDGE_DAY_FILE, {
        **(judge.record or {}), "successor": named.spec, "request_shape": named.shape,
        "calibration": agreement.compact(named.calibration), "baseline_at": utc_now(),
        "baseline_run_id": run_id, "rejudged": len(rejudged), "voided_round": voided})
    branch.commit(f"successor baseline: {named.spec} judges the loop from here on", branch.state_paths(project),
                  project=project)
    pushed = branch.push(project=project)
    return 0, [f"successor baseline: {note}",
               f"{len(rejudged)} item(s) of run {run_id} will be judged again, by it; committed and pushed ({pushed})",
               "next: step 1 (the full run resumes them), then steps 2-3 and 3b (a new noise floor: the judge "
               "changed), then step 4"]


def baseline_note(named: NamedSuccessor, voided: Mapping[str, Any] | None) -> str:
    text = (f"official judge retired: from here on the successor {named.spec} judges every item (calibrated: "
            f"{agreement.describe(named.calibration or {})}); its figures are not official")
    if voided:
        fix = f"its fix {str(voided['fix_commit'])[:12]} reverted" if voided.get("fix_commit") else "no fix yet"
        text += f"; round v{voided['round']} voided ({fix}: never measured by one judge)"
    return text


def judged_by(row: Any, successor: str | None) -> bool:
    """The row's verdict is ``successor``'s (as the loop's successor: ``Verdict.successor``)."""
    verdict = row.judgment
    return (verdict is not None and verdict.successor
            and f"{verdict.provider}:{verdict.requested_model}" == successor)


def void_round(project: Path, run_id: str) -> dict[str, Any] | None:
    """The round in flight (begun, not decided) voided: its fix, never measured by one judge, reverted; the
    decision ``void`` recorded. None when no round is in flight."""
    round_no = state.current(project)
    if (round_no == 0 or state.decision_for(project, round_no) is not None
            or not state.snapshot_dir(project, round_no).is_dir()):
        return None
    sha = state.fix_commit(project, round_no)
    revert = branch.revert(sha, project=project) if sha else None
    decide.append_decision(project, {
        "at": utc_now(), "round": round_no, "snapshot": f"v{round_no}", "run_id": run_id, "fix_commit": sha,
        "decision": "void", "label": "void (the official judge retired mid-round: the fix was never measured by one "
                                     "judge)", "applied": True, "revert_commit": revert})
    return {"round": round_no, "fix_commit": sha, "revert_commit": revert}


def void_confirmation(project: Path) -> None:
    """A confirmation pending when the official judge retired is set aside (its rerun would mix judges)."""
    path = Path(project) / CONFIRMATION_FILE
    pending = fileio.read_json(path, limits=bounded_json.STATE, missing_ok=True, fix="restore it from git history")
    if isinstance(pending, dict) and pending.get("status") == "pending":
        fileio.write_atomic_json(path, {**pending, "status": "void", "voided_at": utc_now(),
                                        "void_reason": "the official judge retired while it was pending"})


def reported_judge(project: Path, run_id: str) -> dict[str, Any] | None:
    """How a run's figure must be reported when a successor judged it: ``{"successor", "calibration",
    "official_estimate"}`` (the estimate from its metrics.json, None when it has none); None when no verdict of the
    run is a successor's."""
    run_dir = run_store.existing_run_dir(project, run_id)
    successor = next((f"{r.judgment.provider}:{r.judgment.requested_model}"
                      for r in run_store.load_results(run_dir).values()
                      if r.judgment is not None and r.judgment.successor), None)
    if successor is None:
        return None
    record = rules.judge_day_record(project) or {}
    calibration = record.get("calibration") if record.get("successor") == successor else None
    estimate = run_store.read_metrics(run_dir).get("official_estimate")
    return {"successor": successor, "calibration": calibration,
            "official_estimate": dict(estimate) if isinstance(estimate, Mapping) else None}


def describe_reported(judged: Mapping[str, Any]) -> str:
    """``by the successor openai:o3-mini, not official (calibrated: ...; official-scale estimate ...)``."""
    calibration = judged.get("calibration")
    cited = (f"calibrated: {agreement.describe(calibration)}" if isinstance(calibration, Mapping)
             else "calibration not recorded")
    return f"by the successor {judged['successor']}, not official ({cited}; {estimate_text(judged)})"


def estimate_text(judged: Mapping[str, Any]) -> str:
    """The run's official-scale estimate (metrics.json ``official_estimate``), or "no official-scale estimate"."""
    estimate = judged.get("official_estimate")
    if not isinstance(estimate, Mapping) or not _number(estimate.get("accuracy")):
        reason = estimate.get("reason") if isinstance(estimate, Mapping) else None
        return "no official-scale estimate" + (f" ({' '.join(str(reason).split())[:160]})" if reason else "")
    text = f"official-scale estimate {estimate['accuracy']:.4f}"
    interval = estimate.get("ci95")
    if isinstance(interval, (list, tuple)) and len(interval) == 2 and all(_number(x) for x in interval):
        text += f" (95% CI {interval[0]:.4f}-{interval[1]:.4f})"
    method = estimate.get("method")
    if isinstance(method, str) and method.strip():
        text += f", {' '.join(method.split())[:80]}"
    return text


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
