"""The iteration loop's steps that change its state, one function each (the skill's steps 4, 6 and 8-10): each can
simply be run again after an interruption. ``rounds.py`` runs them; ``loop_state`` holds what they change.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from pathlib import Path

from lme.core import fileio
from lme.core.clock import utc_now_iso
from lme.loop import decide
from lme.loop import branch
from lme.loop import noise_floor
from lme.loop import rules
from lme.score import pipeline_health
from lme.store import run_store
from lme.core.errors import UserError
from lme.core.facts import PROPOSAL_FILE, SCHEMA_VERSIONS
from lme.loop.state import (
    baseline_logged,
    baseline_note,
    bump,
    current,
    decision_for,
    fix_commit,
    init,
    log_step,
    log_step_once,
    snapshot_dir,
    RoundFigures,
)


def snapshot(project: Path, run_id: str, round_no: int | None = None) -> Path:
    """Built in a temp directory and renamed into place, so a snapshot is either whole or absent."""
    project = Path(project)
    source = run_store.existing_run_dir(project, run_id)
    round_no = current(project) if round_no is None else round_no
    dest = snapshot_dir(project, round_no)
    if os.path.lexists(dest):
        raise UserError(f"snapshot v{round_no} already exists at {dest}", fix="snapshots are never overwritten; bump the round")
    if not run_store.has_rows(source):
        raise UserError(f"run {run_id} has no {run_store.RESULTS_FILE} yet", fix="finish the baseline run first")
    fileio.make_dirs(dest.parent)
    tmp = fileio.make_temp_dir(dest)  # a copy killed on the way: removed at a later start (clean_leftovers)
    try:
        run_store.copy_run(source, tmp)
        write_labels(tmp, run_store.load_results(source))
        fileio.write_atomic_text(tmp / run_store.SNAPSHOT_RECORD, json.dumps(
            {"schemaVersion": SCHEMA_VERSIONS["loop-snapshot"], "round": round_no, "run_id": run_id,
             "created": utc_now_iso()}) + "\n")
        os.rename(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest


def write_labels(dest: Path, rows: dict) -> Path:
    """``labels.jsonl``: per item its type, status, label and the sha256 of its hypothesis and judge prompt: what
    the next round needs of a snapshot, small enough to commit every round."""
    def sha(text: str | None) -> str | None:
        return None if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest()

    lines = [json.dumps({"question_id": q, "question_type": r.question_type, "status": r.status, "label": r.label,
                         "hypothesis_sha256": sha(r.hypothesis),
                         "judge_prompt_sha256": None if r.judgment is None else r.judgment.prompt_sha256},
                        sort_keys=True) for q, r in rows.items()]
    path = Path(dest) / "labels.jsonl"
    fileio.write_atomic_text(path, "".join(line + "\n" for line in lines))
    return path


def log(project: Path, run_id: str, note: str = "", round_no: int | None = None) -> str:
    """Append the round's metrics row to ``history_max_effort.md`` (never ``history.md``); returns the row."""
    project = Path(project)
    figures = RoundFigures.of_metrics(run_store.read_metrics(run_store.existing_run_dir(project, run_id)))
    init(project)
    round_no = current(project) if round_no is None else round_no
    return log_step(project, round_no, "baseline" if note == baseline_note(round_no) else "log", figures, note)


def retest_note(record: dict) -> str:
    """The re-test row's note: set size and parts, fixes, regressions, net, p, the noise band."""
    retest, noise = record.get("retest_set") or {}, record.get("noise") or {}
    size = (f"re-test {retest['size']} ({retest['failing']} failing + {retest['control']} control)"
            if retest else f"re-test {record['retested']}")
    band = (f"noise band {noise['low']:+d}..{noise['high']:+d} ({noise['expected_flips']:g} flips expected)"
            if noise.get("measured") else "noise floor not measured")
    return (f"{size}: fixes {record['fixes']}, regressions {record['regressions']}, net {record['net']:+d}, "
            f"p={record['p_value']:.3g}, {band}")


def log_decision(project: Path, run_id: str, record: dict) -> None:
    """The round's re-test, decision and (when reverted) revert rows of the history; never twice."""
    round_no = int(record["round"])
    kept = record.get("retest_figures")
    figures = (RoundFigures.from_dict(kept) if kept else
               RoundFigures.of_metrics(run_store.read_metrics(run_store.existing_run_dir(project, run_id))))
    keys = ("fixes", "regressions", "net", "p_value", "retest_set", "noise", "per_type")
    log_step_once(project, round_no, "re-test", figures, retest_note(record), {k: record.get(k) for k in keys})
    log_step_once(project, round_no, "decision", figures, f"decision: {record.get('label', record['decision'])}",
                  {"decision": record["decision"], "label": record.get("label"),
                   "fix_commit": record.get("fix_commit")})
    if record["decision"] == "revert" and record.get("applied"):
        after = RoundFigures.of_metrics(run_store.read_metrics(run_store.existing_run_dir(project, run_id)))
        log_step_once(project, round_no, "revert", after,
                      f"revert of {str(record.get('fix_commit'))[:12]}: snapshot verdicts of {record['retested']} "
                      f"item(s) restored", {"revert_commit": record.get("revert_commit")})


def _commit_state_and_push(project: Path, message: str) -> str | None:
    sha = branch.commit(message, branch.state_paths(project), project=project)
    print(f"pushed {branch.push(project=project)}", file=sys.stderr)
    return sha


def begin(project: Path, run_id: str) -> int:
    """Step 4: a new round (bump), its pre-fix snapshot, its baseline row, committed and pushed. Returns the round.

    Run again after an interruption it finishes the round it started instead of starting another: the current
    round is reused while it has no decision yet. Refused once the round has its fix commit (finish it first).
    """
    project = Path(project)
    init(project)
    round_no = current(project)
    if round_no == 0 or decision_for(project, round_no) is not None:
        round_no = bump(project)
    elif fix_commit(project, round_no):
        raise UserError(f"round v{round_no} already has its fix commit and no decision yet",
                        fix="finish it: re-test the trigger set (step 7), then rounds.py finish (steps 8-10)")
    if not snapshot_dir(project, round_no).exists():
        require_healthy_stack(project, run_id)
        require_noise_floor(project, run_id)
        snapshot(project, run_id, round_no)
    if not baseline_logged(project, round_no):
        log(project, run_id, baseline_note(round_no), round_no)
    _commit_state_and_push(project, f"round v{round_no}: baseline")
    return round_no


def require_healthy_stack(project: Path, run_id: str) -> None:
    """Refuse a round while a pipeline stage is broken across the run (pipeline_health): a fix measured on a
    broken stack measures the breakage."""
    rows = run_store.load_results(run_store.existing_run_dir(project, run_id))
    broken = pipeline_health.summarise(rows.values()).broken
    if broken:
        raise UserError("the stack is broken across the run: " + "; ".join(p.line for p in broken),
                        fix=broken[0].fix + ", then re-run the broken items (step 1) and rounds.py begin again")


NOISE_FLOOR_STEP = "bash \"${CLAUDE_PLUGIN_ROOT}/scripts/parallel_longmemeval.sh\" 8 133 500 --noise-floor"


def require_noise_floor(project: Path, run_id: str) -> dict:
    """The noise floor of the run's stack, measured; else a UserError naming the step that measures it."""
    meta = run_store.read_meta(run_store.existing_run_dir(project, run_id))
    floor = noise_floor.measured_for(project, meta)
    if floor is None:
        stack = noise_floor.stack_of(meta)
        old = noise_floor.load(project)
        why = ("its measurement is still pending" if old and old.get("status") == "pending" else
               "the stack's models changed since it was measured" if old else "it was never measured")
        raise UserError(f"no noise floor for this stack (reader {stack['reader']}, judge {stack['judge']}): {why}; "
                        "a decision could not tell a fix from noise",
                        fix=f"measure it first (the skill's step 3b): {NOISE_FLOOR_STEP}, then rounds.py begin again")
    return floor


def fix_files(project: Path) -> list[str]:
    """The changed files a fix commit holds: the memory system's (``loop_rules.fix_paths``). Every other changed or
    new file (setup's ``.gitignore``, notes, another folder) is named on stderr and left alone; no memory-system
    file changed, or a target outside the project, is a UserError."""
    allowed = rules.fix_paths(project)
    if not allowed:
        target = rules.loop_config(project).get("target")
        raise UserError(f"the loop's target {target} is built in (it lives in the plugin, not in this project's "
                        "git): a fix to it cannot be committed or reverted here",
                        fix="copy it into the project first: loop_target.py use-copy, or loop on your own system: "
                            "loop_target.py use PATH (the skill's \"Where a fix goes\")")
    changed = branch.changed_paths(project)
    ours = [p for p in changed if rules.in_fix_paths(p, allowed)]
    others = [p for p in changed if p not in ours]
    where = ", ".join(a or "the project" for a in allowed)
    if others:
        print(f"left alone (not the memory system's files, {where}): {', '.join(others)}", file=sys.stderr)
    if not ours:
        raise UserError(f"no changed files in the memory system ({where}): there is no fix to commit"
                        + (f" (changed elsewhere, left alone: {', '.join(others)})" if others else ""),
                        fix=f"make the fix under {where} first (git status shows it)")
    return ours


def commit_fix(project: Path, proposal: Path | None = None) -> str:
    """Step 6: commit the memory system's changed files (``fix_files``) as ``fix(v<N>): <proposal>``; returns the
    sha.

    Refused before the round has begun (no snapshot), after it was decided, and when it already has a fix
    commit: one fix per round.
    """
    project = Path(project)
    round_no = current(project)
    if round_no == 0 or not snapshot_dir(project, round_no).is_dir():
        raise UserError(f"round v{round_no} has not begun (no snapshot v{round_no})",
                        fix="start the round first: rounds.py begin --run-id <loop run> (step 4)")
    if decision_for(project, round_no) is not None:
        raise UserError(f"round v{round_no} is decided already", fix="start a new round (step 4) for another fix")
    existing = fix_commit(project, round_no)
    if existing:
        raise UserError(f"round v{round_no} already has its fix commit {existing[:12]}: one fix per round",
                        fix="re-test it (step 7), then rounds.py finish (steps 8-10)")
    path = project / (PROPOSAL_FILE if proposal is None else proposal)
    try:
        text = fileio.read_text(path, max_bytes=1 << 20).strip()
    except FileNotFoundError:
        raise UserError(f"{path} is missing", fix="write the proposal first: the fix in one sentence on line 1")
    if not text:
        raise UserError(f"{path} is empty", fix="write the fix in one sentence on its first line")
    changed = fix_files(project)
    print(f"committing: {', '.join(changed)}", file=sys.stderr)
    sha = branch.commit(f"fix(v{round_no}): {text}", changed, project=project)
    assert sha is not None  # changed_paths found changes
    return sha


def finish(project: Path, run_id: str, *, reusable: bool = False, allow_errors: bool = False) -> str:
    """Steps 8-10: decide on the round's fix (a revert is applied), commit the state, push. Returns the summary.

    Run again after an interruption (a kill at any point between two writes) it does not decide twice and writes
    each history row once: the round's recorded decision is logged, committed and pushed; a revert interrupted
    while it was applied is applied to the end; a revert decided without being applied (decide.py without
    --apply) is decided again, applied.
    """
    project = Path(project)
    round_no = current(project)
    record = decision_for(project, round_no)
    if record is not None and record.get("decision") == "void":
        raise UserError(f"round v{round_no} was voided when the official judge retired: {decide.describe(record)}",
                        fix="go on at the step rounds.py status names (step 1, then rounds.py begin for a new round)")
    if record is not None and record.get("applying") and not record.get("applied"):
        record = decide.apply_revert(project, record)  # a crash while the revert was applied: finish applying it
    elif record is None or (record.get("decision") == "revert" and not record.get("applied")):
        sha = fix_commit(project, round_no)
        if not sha:
            raise UserError(f"no 'fix(v{round_no}):' commit on this branch",
                            fix="commit the fix first: rounds.py commit-fix (step 6)")
        record = decide.run_decision(project, f"v{round_no}", run_id, reusable=reusable, fix_commit=sha,
                                     apply=True, allow_errors=allow_errors)
    summary = decide.describe(record)
    log_decision(project, run_id, record)
    _commit_state_and_push(project, f"round v{round_no}: {summary}")
    return summary
