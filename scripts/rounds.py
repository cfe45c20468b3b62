"""Round bookkeeping for the iteration loop: the round counter, pre-fix snapshots, the loop's history log.

Files (project root): ``.max_effort_round`` (the last round number started), ``history_max_effort.md`` (one
table row per round; the loop never writes ``history.md``), ``.longmemeval-benchmarks/snapshots/v<N>/`` (the
run's files as they were before round N's fix).

Usage:
    python scripts/rounds.py init                      # create the counter (0) and the history file if missing
    python scripts/rounds.py current                   # print the round number
    python scripts/rounds.py bump                      # increment the counter, print the new round
    python scripts/rounds.py snapshot --run-id longmemeval-iter
    python scripts/rounds.py log --run-id longmemeval-iter --note "baseline"
    python scripts/rounds.py blocked --reason billing
    python scripts/rounds.py status                    # where the loop stands and the step to run next

The loop's steps as one command each (the skill's steps 4, 6 and 8-10; each can simply be run again):
    python scripts/rounds.py begin --run-id longmemeval-iter     # bump, snapshot, log, commit, push
    python scripts/rounds.py commit-fix                          # commit the fix as "fix(v<N>): <proposal>"
    python scripts/rounds.py finish --run-id longmemeval-iter    # decide (revert applied), commit, push
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from clock import utc_now_iso, utc_today
from errors import UserError, run_main
from loop_guard import (
    CONFIRMATION_FILE,
    DECISIONS_FILE,
    HISTORY_FILE,
    ROUND_FILE,
    SNAPSHOTS_DIR,
    existing_run_dir,
)
from loop_git import PROPOSAL_FILE

SNAPSHOT_FILES = (
    "item-results.jsonl",
    "questions_completed.jsonl",
    "run-meta.json",
    "manifest.json",
    "metrics.json",
)
HISTORY_HEADER = (
    "# LongMemEval iteration history (max-effort loop)\n"
    "\n"
    "One row per round, written by `scripts/rounds.py log`. Strict correct counts errors as wrong.\n"
    "\n"
    "| round | date | correct/n | overall | task-avg | abstention | note |\n"
    "|---|---|---|---|---|---|---|\n"
)
BLOCK_REASONS = {"billing": "API billing",
                 "cost": "run estimate above confirmCostUsd: waiting for the user's approval"}


@contextmanager
def _counter_lock(project: Path, timeout: float = 10.0) -> Iterator[None]:
    """A lock file beside the counter (O_EXCL works the same on every OS)."""
    lock = Path(project) / f"{ROUND_FILE}.lock"
    deadline = time.monotonic() + timeout
    while True:
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            break
        except FileExistsError:
            if time.monotonic() > deadline:
                raise UserError(f"{lock} is held by another process", fix="wait, or delete it if no loop is running")
            time.sleep(0.05)
    try:
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        yield
    finally:
        lock.unlink(missing_ok=True)


def _write_text_atomic(path: Path, text: str) -> None:
    from checkpoint_io import write_atomic_bytes

    write_atomic_bytes(path, text.encode("utf-8"))


def _append_line(path: Path, line: str) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(line.rstrip("\n") + "\n")
        f.flush()
        os.fsync(f.fileno())


def init(project: Path) -> list[str]:
    """Create ``.max_effort_round`` (0) and ``history_max_effort.md`` when missing; returns what was created."""
    project = Path(project)
    created = []
    counter = project / ROUND_FILE
    if not counter.exists():
        _write_text_atomic(counter, "0\n")
        created.append(ROUND_FILE)
    history = project / HISTORY_FILE
    if not history.exists():
        _write_text_atomic(history, HISTORY_HEADER)
        created.append(HISTORY_FILE)
    return created


def current(project: Path) -> int:
    """The round number in ``.max_effort_round`` (missing file: a user error naming the fix)."""
    counter = Path(project) / ROUND_FILE
    try:
        text = counter.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        raise UserError(f"{counter} is missing", fix="run scripts/check_setup.sh (or rounds.py init)")
    try:
        value = int(text)
    except ValueError:
        raise UserError(f"{counter} holds {text!r}, not a round number", fix="restore it from git history")
    if value < 0:
        raise UserError(f"{counter} holds a negative round {value}", fix="restore it from git history")
    return value


def bump(project: Path) -> int:
    """Read and increment the counter under a lock, atomically; returns the new round."""
    with _counter_lock(project):
        value = current(project) + 1
        _write_text_atomic(Path(project) / ROUND_FILE, f"{value}\n")
    return value


def snapshot_dir(project: Path, round_no: int) -> Path:
    return Path(project) / SNAPSHOTS_DIR / f"v{round_no}"


def parse_snapshot(name: str) -> int:
    """``v3`` or ``3`` -> 3."""
    text = name[1:] if name.lower().startswith("v") else name
    if not text.isdigit():
        raise UserError(f"bad snapshot name {name!r}", fix="use v<ROUND>, e.g. v3")
    return int(text)


def snapshot(project: Path, run_id: str, round_no: int | None = None) -> Path:
    """Copy the run's files into ``snapshots/v<round>/``; refuses to overwrite an existing snapshot.

    The copy is built in a temp directory and renamed into place, so a snapshot is either whole or absent.
    """
    project = Path(project)
    source = existing_run_dir(project, run_id)
    round_no = current(project) if round_no is None else round_no
    dest = snapshot_dir(project, round_no)
    if dest.exists():
        raise UserError(f"snapshot v{round_no} already exists at {dest}", fix="snapshots are never overwritten; bump the round")
    if not (source / "item-results.jsonl").exists():
        raise UserError(f"run {run_id} has no item-results.jsonl yet", fix="finish the baseline run first")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".v{round_no}."))
    try:
        for name in SNAPSHOT_FILES:
            if (source / name).exists():
                shutil.copy2(source / name, tmp / name)
        for shard in sorted(source.glob("shard-*")):
            if shard.is_dir():
                shutil.copytree(shard, tmp / shard.name, ignore=shutil.ignore_patterns(".lock"))
        (tmp / "snapshot.json").write_text(
            json.dumps({"round": round_no, "run_id": run_id, "created": utc_now_iso()}) + "\n",
            encoding="utf-8",
        )
        os.rename(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest


def figure(value: Any) -> float | None:
    """A metric as a number: a bare number, or a metrics block (its strict accuracy first)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, Mapping):
        for key in ("accuracy_strict", "accuracy", "value", "mean"):
            if isinstance(value.get(key), (int, float)) and not isinstance(value.get(key), bool):
                return float(value[key])
    return None


def read_metrics(directory: Path) -> dict[str, Any]:
    path = Path(directory) / "metrics.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{path} is missing", fix="run the scorecard for this run first")
    except json.JSONDecodeError as err:
        raise UserError(f"{path} is not valid JSON: {err}", fix="re-run the scorecard for this run")
    for key in ("correct", "n_total"):
        if not isinstance(data.get(key), int):
            raise UserError(f"{path} has no integer {key!r}", fix="re-run the scorecard for this run")
    return data


def strict_correct(metrics: Mapping[str, Any]) -> tuple[int, int]:
    """(strict correct count, n_total) from a metrics.json."""
    return int(metrics["correct"]), int(metrics["n_total"])


def history_row(round_no: int, metrics: Mapping[str, Any], note: str, date: str | None = None) -> str:
    def fmt(v: Any) -> str:
        x = figure(v)
        return "n/a" if x is None else f"{x:.4f}"

    correct, n_total = strict_correct(metrics)
    note = " ".join(note.split()).replace("|", "/")
    return (
        f"| v{round_no} | {date or utc_today()} | {correct}/{n_total} | {fmt(metrics.get('overall'))} | "
        f"{fmt(metrics.get('task_averaged'))} | {fmt(metrics.get('abstention'))} | {note} |"
    )


def log(project: Path, run_id: str, note: str = "", round_no: int | None = None) -> str:
    """Append the round's metrics row to ``history_max_effort.md`` (never ``history.md``); returns the row."""
    project = Path(project)
    metrics = read_metrics(existing_run_dir(project, run_id))
    init(project)
    round_no = current(project) if round_no is None else round_no
    row = history_row(round_no, metrics, note)
    _append_line(project / HISTORY_FILE, row)
    return row


def blocked_row(round_no: int, reason: str, date: str | None = None) -> str:
    """The history table row that records a halt: ``| BLOCKED | date | n/a ... | <reason> (round vN): ... |``.

    A row, not a paragraph, so rows logged after it stay in the table; it does not start with ``| v<N> |``, so
    charts (``charts.load_history``) skip it.
    """
    text = " ".join(BLOCK_REASONS.get(reason, reason).split()).replace("|", "/")
    return (f"| BLOCKED | {date or utc_today()} | n/a | n/a | n/a | n/a | "
            f"{text} (round v{round_no}): the loop is halted until a human fixes it |")


def blocked(project: Path, reason: str) -> str:
    """Append a BLOCKED row to the loop's history table; the loop then waits for a human."""
    project = Path(project)
    init(project)
    row = blocked_row(current(project), reason)
    _append_line(project / HISTORY_FILE, row)
    return row


# --------------------------------------------------------------------------- the round's steps, one command each


def decision_for(project: Path, round_no: int) -> dict[str, Any] | None:
    """The last decision recorded for ``round_no`` in ``decisions.jsonl`` (None: the round is not decided)."""
    path = Path(project) / DECISIONS_FILE
    if not path.exists():
        return None
    found = None
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict) and record.get("round") == round_no:
            found = record
    return found


def fix_commit(project: Path, round_no: int) -> str | None:
    """The sha of the newest ``fix(v<round>):`` commit on HEAD's history (None when there is none)."""
    import loop_git

    done = loop_git.run_git(["log", "-1", "--format=%H", f"--grep=^fix(v{round_no}):"], Path(project), check=False)
    sha = done.stdout.strip() if done.returncode == 0 else ""
    return sha or None


def _baseline_note(round_no: int) -> str:
    return f"baseline of round v{round_no}"


def _baseline_logged(project: Path, round_no: int) -> bool:
    history = Path(project) / HISTORY_FILE
    if not history.exists():
        return False
    prefix = f"| v{round_no} |"
    return any(line.startswith(prefix) and _baseline_note(round_no) in line
               for line in history.read_text(encoding="utf-8").splitlines())


def _commit_state_and_push(project: Path, message: str) -> str | None:
    import loop_git

    sha = loop_git.commit(message, loop_git.state_paths(project), project=project)
    print(f"pushed {loop_git.push(project=project)}", file=sys.stderr)
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
        snapshot(project, run_id, round_no)
    if not _baseline_logged(project, round_no):
        log(project, run_id, _baseline_note(round_no), round_no)
    _commit_state_and_push(project, f"round v{round_no}: baseline")
    return round_no


def commit_fix(project: Path, proposal: Path | None = None) -> str:
    """Step 6: commit every changed file outside the loop's state as ``fix(v<N>): <proposal>``; returns the sha.

    Refused before the round has begun (no snapshot), after it was decided, and when it already has a fix
    commit: one fix per round.
    """
    import loop_git

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
        text = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        raise UserError(f"{path} is missing", fix="write the proposal first: the fix in one sentence on line 1")
    if not text:
        raise UserError(f"{path} is empty", fix="write the fix in one sentence on its first line")
    changed = loop_git.changed_paths(project)
    if not changed:
        raise UserError("no changed files outside the loop's state: there is no fix to commit",
                        fix="make the fix first (git status shows it)")
    print(f"committing: {', '.join(changed)}", file=sys.stderr)
    sha = loop_git.commit(f"fix(v{round_no}): {text}", changed, project=project)
    assert sha is not None  # changed_paths found changes
    return sha


def finish(project: Path, run_id: str, *, reusable: bool = False, allow_errors: bool = False) -> str:
    """Steps 8-10: decide on the round's fix (a revert is applied), commit the state, push. Returns the summary.

    Run again after an interruption it does not decide twice: the round's recorded decision is committed and
    pushed (a revert recorded without being applied is decided again, applied).
    """
    import decide

    project = Path(project)
    round_no = current(project)
    record = decision_for(project, round_no)
    if record is None or (record.get("decision") == "revert" and not record.get("applied")):
        sha = fix_commit(project, round_no)
        if not sha:
            raise UserError(f"no 'fix(v{round_no}):' commit on this branch",
                            fix="commit the fix first: rounds.py commit-fix (step 6)")
        record = decide.run_decision(project, f"v{round_no}", run_id, reusable=reusable, fix_commit=sha,
                                     apply=True, allow_errors=allow_errors)
    summary = decide.describe(record)
    _commit_state_and_push(project, f"round v{round_no}: {summary}")
    return summary


def status(project: Path) -> list[str]:
    """Where the loop stands, as lines for people; the last line says which skill step to run next."""
    project = Path(project)
    round_no = current(project)
    lines = [f"round: v{round_no}"]
    confirmation = None
    path = project / CONFIRMATION_FILE
    if path.exists():
        try:
            confirmation = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            raise UserError(f"{path} is not valid JSON", fix="restore it from git history") from None
    fix = fix_commit(project, round_no) if round_no else None
    record = decision_for(project, round_no) if round_no else None
    has_snapshot = round_no > 0 and snapshot_dir(project, round_no).is_dir()
    if round_no:
        lines.append(f"snapshot v{round_no}: {'present' if has_snapshot else 'missing'}")
        lines.append(f"fix commit of v{round_no}: {fix[:12] if fix else 'none'}")
        lines.append(f"decision for v{round_no}: {record['decision'] if record else 'none'}")
    if confirmation:
        lines.append(f"confirmation: {confirmation.get('status')} (run {confirmation.get('confirm_run_id')})")
    history = project / HISTORY_FILE
    if history.exists():
        rows = [line for line in history.read_text(encoding="utf-8").splitlines()
                if line.startswith("| ") and not line.startswith("| round |")]
        lines += [f"history: {row}" for row in rows[-3:]]
    if confirmation and confirmation.get("status") == "confirmed":
        step = "the loop is over (confirmed): report both run ids and both counts"
    elif confirmation and confirmation.get("status") == "pending":
        step = "steps 2-3 (the confirmation rerun resumes, then it is judged)"
    elif round_no == 0 or record is not None:
        step = "step 1 (the full run resumes), then steps 2-3"
    elif not has_snapshot:
        step = "step 4 (rounds.py begin finishes starting the round)"
    elif fix is None:
        step = "step 5 (cluster, diagnose, propose), then step 6"
    else:
        step = "step 7 (re-test the trigger set; the run resumes), then steps 8-10"
    lines.append(f"next: {step}")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--project", type=Path, default=Path.cwd(), help="project root (default: cwd)")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("init", help="create .max_effort_round (0) and history_max_effort.md when missing")
    sub.add_parser("current", help="print the current round number")
    sub.add_parser("bump", help="increment the round counter atomically and print the new round")
    p_snap = sub.add_parser("snapshot", help="copy the run's files to snapshots/v<ROUND>/ (never overwrites)")
    p_snap.add_argument("--run-id", required=True, help="the loop's run id")
    p_snap.add_argument("--round", type=int, default=None, help="round number (default: the current round)")
    p_log = sub.add_parser("log", help="append the run's metrics as a row of history_max_effort.md")
    p_log.add_argument("--run-id", required=True, help="the run whose metrics.json is logged")
    p_log.add_argument("--note", default="", help="free text for the note column (e.g. baseline, kept fix X)")
    p_log.add_argument("--round", type=int, default=None, help="round number (default: the current round)")
    p_blk = sub.add_parser("blocked", help="log that the loop is blocked and needs a human")
    p_blk.add_argument("--reason", required=True,
                       help="'billing' (logged as 'API billing'), 'cost' (the cost gate needs the user), or free text")
    sub.add_parser("status", help="print where the loop stands and the skill step to run next")
    p_begin = sub.add_parser("begin", help="step 4: bump, snapshot, log the baseline, commit the state, push")
    p_begin.add_argument("--run-id", required=True, help="the loop's run id")
    p_fix = sub.add_parser("commit-fix", help="step 6: commit the changed files as 'fix(v<N>): <proposal>'")
    p_fix.add_argument("--proposal", type=Path, default=None,
                       help=f"the proposal file, relative to the project (default: {PROPOSAL_FILE})")
    p_finish = sub.add_parser("finish", help="steps 8-10: decide (revert applied), commit the state, push")
    p_finish.add_argument("--run-id", required=True, help="the loop's run id (re-tested after the fix)")
    p_finish.add_argument("--reusable", action="store_true",
                          help="the fix is infrastructure later fixes build on: keep it at net 0 or -1")
    p_finish.add_argument("--allow-errors", action="store_true",
                          help="decide although re-tested items ended in errors (they count as wrong)")
    args = parser.parse_args(argv)
    project = args.project

    if args.command == "init":
        created = init(project)
        print(f"created {', '.join(created)}" if created else "already set up", file=sys.stderr)
        print(current(project))
    elif args.command == "current":
        print(current(project))
    elif args.command == "bump":
        print(bump(project))
    elif args.command == "snapshot":
        print(snapshot(project, args.run_id, args.round))
    elif args.command == "log":
        print(log(project, args.run_id, args.note, args.round))
    elif args.command == "blocked":
        print(blocked(project, args.reason))
    elif args.command == "status":
        print("\n".join(status(project)))
    elif args.command == "begin":
        print(begin(project, args.run_id))
    elif args.command == "commit-fix":
        print(commit_fix(project, args.proposal))
    else:
        print(finish(project, args.run_id, reusable=args.reusable, allow_errors=args.allow_errors))
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
