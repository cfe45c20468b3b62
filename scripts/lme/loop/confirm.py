"""The loop's termination rule: a run at the target must be confirmed by a clean rerun before the loop ends.

The command (its parser, ``main()`` and help text) is ``lme/cli/confirm.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lme.loop import decide
from lme.loop import judge_day
from lme.core import bounded_json
from lme.core import fileio
from lme.loop import branch
from lme.loop import steps
from lme.store import run_store
from lme.core.clock import utc_now, utc_stamp
from lme.core.errors import UserError
from lme.core.facts import CONFIRMATION_FILE, SCHEMA_VERSIONS
from lme.score.scorecard_record import Scorecard
from lme.loop.rules import target_correct


def check(project: Path, run_id: str) -> dict[str, Any]:
    """The run's strict correct count against the target."""
    card = Scorecard.from_dict(run_store.read_metrics(run_store.existing_run_dir(project, run_id)))
    threshold = target_correct(card.n_total)
    return {"run_id": run_id, "correct": card.correct, "n_total": card.n_total, "threshold": threshold,
            "reached": card.correct >= threshold, "status": card.status}


def _read_state(project: Path) -> dict[str, Any] | None:
    state = fileio.read_json(Path(project) / CONFIRMATION_FILE, limits=bounded_json.STATE, missing_ok=True,
                             fix="restore it from git history")
    if state is not None and not isinstance(state, dict):
        raise UserError(f"{Path(project) / CONFIRMATION_FILE} is not a JSON object", fix="restore it from git history")
    return state


def start(project: Path, run_id: str, confirm_run_id: str | None = None, *, resume: bool = False) -> dict[str, Any]:
    """Record a confirmation rerun for ``run_id`` (which must have reached the target); returns the record.

    With ``resume``, a confirmation already pending for ``run_id`` is returned as it is (its run resumes), so
    the skill's confirmation step can simply be run again after an interruption.
    """
    project = Path(project)
    state = _read_state(project)
    if state and state.get("status") == "pending":
        if resume and state.get("source_run_id") == run_id and not confirm_run_id:
            return state
        raise UserError(
            f"confirmation run {state['confirm_run_id']} is already pending",
            fix="run it to the end, then confirm.py finish (confirm.py start --resume prints its id)",
        )
    if state and state.get("status") == "confirmed" and state.get("source_run_id") == run_id:
        raise UserError(
            f"run {run_id} was already confirmed by {state['confirm_run_id']}: the loop is over",
            fix=f"report both run ids; to start a new campaign, move {CONFIRMATION_FILE} aside first")
    result = check(project, run_id)
    if not result["reached"]:
        raise UserError(
            f"run {run_id} has {result['correct']}/{result['n_total']} strict correct, below the target "
            f"{result['threshold']}: no confirmation yet", fix="keep iterating")
    if result["status"] not in (None, "completed"):
        raise UserError(f"run {run_id} is {result['status']}, not completed", fix="resume it to the end first")
    stamp = utc_stamp()
    confirm_id = run_store.validate_run_id(confirm_run_id or f"{run_id}-confirm-{stamp}")
    if (run_store.runs_dir(project) / confirm_id).exists():
        raise UserError(f"run {confirm_id} already exists", fix="a confirmation must be a new run id")
    record = {
        "schemaVersion": SCHEMA_VERSIONS["loop-confirmation"],
        "source_run_id": run_id,
        "source_correct": result["correct"],
        "n_total": result["n_total"],
        "threshold": result["threshold"],
        "confirm_run_id": confirm_id,
        "no_cache": True,
        "started_at": utc_now(),
        "status": "pending",
        "history": (state or {}).get("history", []),
    }
    fileio.write_atomic_json(project / CONFIRMATION_FILE, record)
    return record


def finish(project: Path, *, commit: bool = False) -> dict[str, Any]:
    """Judge the pending confirmation. Confirmed: the loop ends. Not confirmed: adopt the rerun's verdicts."""
    project = Path(project)
    state = _read_state(project)
    if not state or state.get("status") != "pending":
        raise UserError("no pending confirmation", fix="start one with confirm.py start --run-id <loop run>")
    result = check(project, state["confirm_run_id"])
    if result["status"] not in (None, "completed"):
        raise UserError(f"confirmation run {state['confirm_run_id']} is {result['status']}",
                        fix="resume it with the same --run-id and --no-cache until it completes")
    if result["n_total"] != state["n_total"]:
        raise UserError(f"confirmation covers {result['n_total']} items, the loop run {state['n_total']}",
                        fix="the confirmation must run the full set")
    state.update(confirm_correct=result["correct"], finished_at=utc_now())
    judged = judge_day.reported_judge(project, state["confirm_run_id"])  # a successor's figure is never official
    if judged is not None:
        state["judge"] = judged
    confirmed = result["correct"] >= state["threshold"]
    state["status"] = "confirmed" if confirmed else "not_confirmed"
    state["history"] = [*state.get("history", []), {k: state.get(k) for k in (
        "source_run_id", "source_correct", "confirm_run_id", "confirm_correct", "threshold", "status")}]
    if not confirmed:
        adopt(project, state["source_run_id"], state["confirm_run_id"])
        state["adopted"] = True
    fileio.write_atomic_json(project / CONFIRMATION_FILE, state)
    outcome = "CONFIRMED" if confirmed else "not confirmed, adopted as baseline"
    by = f" {judge_day.describe_reported(judged)}" if judged is not None else ""
    note = f"confirmation {state['confirm_run_id']}: {result['correct']}/{result['n_total']} ({outcome}{by})"
    steps.log(project, state["confirm_run_id"], note)
    if confirmed and commit:
        by = f" by the successor {judged['successor']} (not official)," if judged is not None else ""
        sha = branch.commit(
            f"FINAL: LongMemEval {state['source_correct']}/{state['n_total']}{by} confirmed by clean rerun "
            f"{state['confirm_run_id']} ({result['correct']}/{result['n_total']})",
            branch.state_paths(project), project=project)
        state["final_commit"] = sha
        state["pushed"] = branch.push(project=project)
        fileio.write_atomic_json(project / CONFIRMATION_FILE, state)
    return state


def outcome_line(state: dict[str, Any]) -> str:
    """What ``confirm.py finish`` says of the outcome: a successor-judged confirmation is reported as that, with its
    official-scale estimate (or "no official-scale estimate"), never as the official target met."""
    if state["status"] != "confirmed":
        return "NOT CONFIRMED: its verdicts are the new baseline; continue the loop"
    judged = state.get("judge")
    if not judged:
        return "CONFIRMED: the loop ends here"
    return (f"CONFIRMED {judge_day.describe_reported(judged)}: {state['source_correct']}/{state['n_total']} and "
            f"{state['confirm_correct']}/{state['n_total']} by the successor; the loop ends here. Report it as the "
            "successor's figure: the official judge did not judge it, so no official figure is claimed")


def adopt(project: Path, loop_run_id: str, confirm_run_id: str) -> dict:
    """Replace the loop run's rows and marks with the confirmation run's (backup kept), then rescore it."""
    loop_dir = run_store.existing_run_dir(project, loop_run_id)
    confirm_dir = run_store.existing_run_dir(project, confirm_run_id)
    rows = run_store.load_results(confirm_dir)
    done = run_store.load_completed(confirm_dir)
    ids = set(run_store.load_results(loop_dir)) | set(rows)
    out = run_store.rewrite_run(loop_dir, ids, add_rows=list(rows.values()),
                                add_completed=[q for q in rows if q in done], label="adopt-confirmation")
    decide.rescore(project, loop_run_id)
    return out
