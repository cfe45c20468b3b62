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
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from errors import UserError, run_main
from loop_guard import HISTORY_FILE, ROUND_FILE, SNAPSHOTS_DIR, existing_run_dir

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
BLOCK_REASONS = {"billing": "API billing"}


def today() -> str:
    return datetime.now(timezone.utc).date().isoformat()


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
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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
            json.dumps({"round": round_no, "run_id": run_id, "created": datetime.now(timezone.utc).isoformat()}) + "\n",
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
        f"| v{round_no} | {date or today()} | {correct}/{n_total} | {fmt(metrics.get('overall'))} | "
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


def blocked(project: Path, reason: str) -> str:
    """Append ``BLOCKED: <reason>`` to the loop's history; the loop then waits for a human."""
    project = Path(project)
    init(project)
    text = BLOCK_REASONS.get(reason, reason)
    line = f"\nBLOCKED: {text} (round v{current(project)}, {today()}): the loop is halted until a human fixes it.\n"
    _append_line(project / HISTORY_FILE, line)
    return line.strip()


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
    p_blk.add_argument("--reason", required=True, help="'billing' (logged as 'API billing') or free text")
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
    else:
        print(blocked(project, args.reason))
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
