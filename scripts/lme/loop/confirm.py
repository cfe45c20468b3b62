"""The loop's termination rule: a run at the target must be confirmed by a clean rerun before the loop ends.

Target: ceil(0.95 * n_total) strict correct — 475 of 500, and also 475 of the 499-item ``_s`` copy (95.2%).
When the loop's run reaches it, ``start`` records a confirmation: a NEW run id, to be run over the full set with
``--no-cache`` (fresh model calls, no cached answer reused). ``finish`` reads that run: if it also reaches the
target the loop ends (``--commit`` commits the loop state and pushes); if not, the confirmation's fresh verdicts
replace the loop run's (the honest, lower baseline; a backup is kept) and the loop goes on.
Both run ids are recorded in ``.longmemeval-benchmarks/confirmation.json``.

Usage:
    python scripts/confirm.py check --run-id longmemeval-iter          # reached? prints JSON
    python scripts/confirm.py check --exit-status                      # the same; exit 0 reached, 1 not
    python scripts/confirm.py start --run-id longmemeval-iter          # prints the confirmation run id
    python scripts/confirm.py start --resume                           # a pending one's id, else a new one
    bash scripts/parallel_longmemeval.sh 8 133 500 --run-id <that id> --no-cache
    python scripts/confirm.py finish --commit                          # CONFIRMED -> commit + push; else adopt
"""

from __future__ import annotations

from lme.core import entry_guard  # first: the venv check and a clean Ctrl-C (see its docstring)

entry_guard.start(__name__)

import json
import sys
from pathlib import Path
from typing import Any, Sequence

from lme.core import cli_parser
from lme.loop import decide
from lme.core import bounded_json
from lme.core import fileio
from lme.loop import loop_git
from lme.loop import loop_steps
from lme.store import run_store
from lme.core.clock import utc_now, utc_stamp
from lme.core.errors import UserError, run_main
from lme.core.facts import CONFIRMATION_FILE
from lme.score.scorecard_record import Scorecard
from lme.loop.rules import loop_config, target_correct


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
    confirmed = result["correct"] >= state["threshold"]
    state["status"] = "confirmed" if confirmed else "not_confirmed"
    state["history"] = [*state.get("history", []), {k: state.get(k) for k in (
        "source_run_id", "source_correct", "confirm_run_id", "confirm_correct", "threshold", "status")}]
    if not confirmed:
        adopt(project, state["source_run_id"], state["confirm_run_id"])
        state["adopted"] = True
    fileio.write_atomic_json(project / CONFIRMATION_FILE, state)
    note = (f"confirmation {state['confirm_run_id']}: {result['correct']}/{result['n_total']} "
            f"({'CONFIRMED' if confirmed else 'not confirmed, adopted as baseline'})")
    loop_steps.log(project, state["confirm_run_id"], note)
    if confirmed and commit:
        sha = loop_git.commit(
            f"FINAL: LongMemEval {state['source_correct']}/{state['n_total']} confirmed by clean rerun "
            f"{state['confirm_run_id']} ({result['correct']}/{result['n_total']})",
            loop_git.state_paths(project), project=project)
        state["final_commit"] = sha
        state["pushed"] = loop_git.push(project=project)
        fileio.write_atomic_json(project / CONFIRMATION_FILE, state)
    return state


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


def main(argv: Sequence[str] | None = None) -> int:
    parser, sub = cli_parser.loop_command_parser(__doc__)
    p_check = sub.add_parser("check", help="has the run reached ceil(0.95 * n_total) strict correct?")
    p_check.add_argument("--run-id", help="the run (default: config loop.run_id)")
    p_check.add_argument("--exit-status", action="store_true",
                         help="exit 0 when the target is reached and 1 when not (for 'if' in a shell)")
    p_start = sub.add_parser("start", help="record a confirmation rerun (new run id, --no-cache) and print its id")
    p_start.add_argument("--run-id", help="the loop run that reached the target (default: config loop.run_id)")
    p_start.add_argument("--confirm-run-id", help="the new run id (default: <run-id>-confirm-<UTC time>)")
    p_start.add_argument("--resume", action="store_true",
                         help="if a confirmation of this run is pending, print its id instead of refusing")
    p_finish = sub.add_parser("finish", help="judge the confirmation run: end the loop, or adopt its verdicts")
    p_finish.add_argument("--commit", action="store_true", help="when confirmed, commit the loop state and push")
    args = parser.parse_args(argv)
    project = args.project

    if args.command == "check":
        result = check(project, args.run_id or loop_config(project)["run_id"])
        print(json.dumps(result))
        if args.exit_status and not result["reached"]:
            return 1
    elif args.command == "start":
        record = start(project, args.run_id or loop_config(project)["run_id"], args.confirm_run_id,
                       resume=args.resume)
        print(record["confirm_run_id"])
        print(f"run it over the full set with --run-id {record['confirm_run_id']} --no-cache, then: confirm.py finish",
              file=sys.stderr)
    else:
        state = finish(project, commit=args.commit)
        print(json.dumps({k: v for k, v in state.items() if k != "history"}))
        print("CONFIRMED: the loop ends here" if state["status"] == "confirmed"
              else "NOT CONFIRMED: its verdicts are the new baseline; continue the loop", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
