"""The iteration loop's state in the project, and where the loop stands. Standard library only.

Files (project root): ``.max_effort_round`` (the last round number started), ``history_max_effort.md`` (one
table row per round; the loop never writes ``history.md``), ``.longmemeval-benchmarks/snapshots/v<N>/`` (the
run's files as they were before round N's fix), ``decisions.jsonl`` and ``confirmation.json``. ``status`` reads
them (and git) and names the skill step to run next: the Claude Code Stop hook calls it with a bare ``python3``,
so nothing here needs the venv. The steps that change the state are ``loop_steps``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from lme.core.clock import utc_today
from lme.core import bounded_json
from lme.core import fileio
from lme.loop import loop_git
from lme.core.errors import UserError
from lme.core.facts import CONFIRMATION_FILE, DECISIONS_FILE, HISTORY_FILE, HISTORY_RECORDS, ROUND_FILE, SNAPSHOTS_DIR

HISTORY_HEADER = (
    "# LongMemEval iteration history (max-effort loop)\n"
    "\n"
    "One row per step of a round (baseline, re-test, decision, revert), written by `scripts/rounds.py`; per-type\n"
    "figures of every row are in `.longmemeval-benchmarks/history.jsonl`. Strict correct counts errors as wrong.\n"
    "\n"
    "| round | date | correct/n | overall | task-avg | abstention | note |\n"
    "|---|---|---|---|---|---|---|\n"
)
BLOCK_REASONS = {"billing": "API billing",
                 "cost": "run estimate above confirmCostUsd: waiting for the user's approval"}


COUNTER_LOCK = f"{ROUND_FILE}.lock"
"""The OS lock beside the counter (it dies with its process: a crash never leaves the counter locked)."""
COUNTER_LOCK_TIMEOUT_S = 10.0


def init(project: Path) -> list[str]:
    """Create ``.max_effort_round`` (0) and ``history_max_effort.md`` when missing; returns what was created."""
    project = Path(project)
    created = []
    counter = project / ROUND_FILE
    if not counter.exists():
        fileio.write_atomic_text(counter, "0\n")
        created.append(ROUND_FILE)
    history = project / HISTORY_FILE
    if not history.exists():
        fileio.write_atomic_text(history, HISTORY_HEADER)
        created.append(HISTORY_FILE)
    return created


def current(project: Path) -> int:
    """The round number in ``.max_effort_round`` (missing file: a user error naming the fix)."""
    counter = Path(project) / ROUND_FILE
    try:
        text = fileio.read_text(counter, max_bytes=64).strip()
    except FileNotFoundError:
        raise UserError(f"{counter} is missing", fix="run scripts/check_setup.sh (or rounds.py init)")
    except UserError:
        raise UserError(f"{counter} is not a round number file", fix="restore it from git history") from None
    try:
        value = int(text)
    except ValueError:
        raise UserError(f"{counter} holds {text!r}, not a round number", fix="restore it from git history")
    if value < 0:
        raise UserError(f"{counter} holds a negative round {value}", fix="restore it from git history")
    return value


def bump(project: Path) -> int:
    """Read and increment the counter under a lock, atomically; returns the new round."""
    lock = fileio.FileLock(Path(project), COUNTER_LOCK, wait=True, timeout=COUNTER_LOCK_TIMEOUT_S)
    try:
        lock.acquire()
    except fileio.LockHeld:
        raise UserError(f"{lock.path} is held by another process", fix="wait for the other loop command to finish")
    try:
        value = current(project) + 1
        fileio.write_atomic_text(Path(project) / ROUND_FILE, f"{value}\n")
    finally:
        lock.release()
    return value


def snapshot_dir(project: Path, round_no: int) -> Path:
    return Path(project) / SNAPSHOTS_DIR / f"v{round_no}"


def parse_snapshot(name: str) -> int:
    """``v3`` or ``3`` -> 3."""
    text = name[1:] if name.lower().startswith("v") else name
    if not text.isdigit():
        raise UserError(f"bad snapshot name {name!r}", fix="use v<ROUND>, e.g. v3")
    return int(text)


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


def append_history_row(project: Path, row: str) -> None:
    """Append one table row to ``history_max_effort.md`` (fsynced; the file is never cut or rewritten)."""
    fileio.append_text_line(Path(project) / HISTORY_FILE, row)


def per_type_figures(metrics: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """``{type: {n, correct, accuracy}}`` (strict) from a metrics.json."""
    out = {}
    for qtype, block in (metrics.get("per_type") or {}).items():
        if isinstance(block, Mapping) and block.get("n"):
            out[qtype] = {"n": block["n"], "correct": block.get("correct"), "accuracy": figure(block)}
    return out


def log_step(project: Path, round_no: int, step: str, metrics: Mapping[str, Any], note: str,
             extra: Mapping[str, Any] | None = None) -> str:
    """One step of a round: a row of ``history_max_effort.md`` and a record (per-type figures included) in
    ``history.jsonl`` (what the report's per-type chart reads). Returns the row."""
    row = history_row(round_no, metrics, note)
    append_history_row(project, row)
    fileio.append_jsonl(Path(project) / HISTORY_RECORDS, _step_record(round_no, step, metrics, note, extra))
    return row


def _step_record(round_no: int, step: str, metrics: Mapping[str, Any], note: str,
                 extra: Mapping[str, Any] | None) -> dict[str, Any]:
    correct, n_total = strict_correct(metrics)
    return {"label": f"v{round_no} {step}", "round": round_no, "step": step, "date": utc_today(),
            "correct": correct, "n_total": n_total, "overall": figure(metrics.get("overall")),
            "task_averaged": figure(metrics.get("task_averaged")), "abstention": figure(metrics.get("abstention")),
            "per_type": per_type_figures(metrics), "note": note, **dict(extra or {})}


def log_step_once(project: Path, round_no: int, step: str, metrics: Mapping[str, Any], note: str,
                  extra: Mapping[str, Any] | None = None) -> None:
    """``log_step`` that writes each of its two lines only when that file lacks it: run again after a crash between
    (or before) them, one row of ``history_max_effort.md`` and one record of ``history.jsonl`` per step."""
    row = history_row(round_no, metrics, note)
    if not _row_logged(project, row):
        append_history_row(project, row)
    if not any(r.get("round") == round_no and r.get("step") == step
               for _, r in fileio.iter_jsonl(Path(project) / HISTORY_RECORDS, skip_bad=True)):
        fileio.append_jsonl(Path(project) / HISTORY_RECORDS, _step_record(round_no, step, metrics, note, extra))


def _row_logged(project: Path, row: str) -> bool:
    """A row of the same round and note (the date may differ: a re-run on the next day)."""
    cells = row.split(" | ")
    history = Path(project) / HISTORY_FILE
    if not history.exists():
        return False
    return any(line.startswith(cells[0] + " | ") and line.endswith(" | " + cells[-1])
               for line in _history_text(history).splitlines())


def step_logged(project: Path, round_no: int, marker: str) -> bool:
    """Whether ``history_max_effort.md`` has a row of round ``round_no`` whose note holds ``marker``."""
    history = Path(project) / HISTORY_FILE
    if not history.exists():
        return False
    prefix = f"| v{round_no} |"
    return any(line.startswith(prefix) and marker in line for line in _history_text(history).splitlines())


def _history_text(history: Path) -> str:
    return fileio.read_text(history, max_bytes=bounded_json.STATE.document_bytes)


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
    append_history_row(project, row)
    return row


def decision_for(project: Path, round_no: int) -> dict[str, Any] | None:
    """The last decision recorded for ``round_no`` in ``decisions.jsonl`` (None: the round is not decided)."""
    found = None
    for _, record in fileio.iter_jsonl(Path(project) / DECISIONS_FILE, skip_bad=True):
        if record.get("round") == round_no:
            found = record
    return found


def fix_commit(project: Path, round_no: int) -> str | None:
    """The sha of the newest ``fix(v<round>):`` commit on HEAD's history (None when there is none)."""
    done = loop_git.run_git(["log", "-1", "--format=%H", f"--grep=^fix(v{round_no}):"], Path(project), check=False)
    sha = done.stdout.strip() if done.returncode == 0 else ""
    return sha or None


def baseline_note(round_no: int) -> str:
    return f"baseline of round v{round_no}"


def baseline_logged(project: Path, round_no: int) -> bool:
    return step_logged(project, round_no, baseline_note(round_no))


def status(project: Path) -> list[str]:
    """Where the loop stands, as lines for people; the last line says which skill step to run next."""
    project = Path(project)
    round_no = current(project)
    lines = [f"round: v{round_no}"]
    confirmation = None
    path = project / CONFIRMATION_FILE
    confirmation = fileio.read_json(path, limits=bounded_json.STATE, missing_ok=True, fix="restore it from git history")
    if confirmation is not None and not isinstance(confirmation, dict):
        raise UserError(f"{path} is not a JSON object", fix="restore it from git history")
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
        rows = [line for line in _history_text(history).splitlines()
                if line.startswith("| ") and not line.startswith("| round |")]
        lines += [f"history: {row}" for row in rows[-3:]]
    if confirmation and confirmation.get("status") == "confirmed":
        step = "the loop is over (confirmed): report both run ids and both counts"
    elif confirmation and confirmation.get("status") == "pending":
        step = "steps 2-3 (the confirmation rerun resumes, then it is judged)"
    elif round_no == 0 or record is not None:
        step = "step 1 (the full run resumes), then steps 2-3 and 3b (the noise floor, measured once per stack)"
    elif not has_snapshot:
        step = "step 4 (rounds.py begin finishes starting the round)"
    elif fix is None:
        step = "step 5 (cluster, diagnose, propose), then step 6"
    else:
        step = "step 7 (re-test the trigger set; the run resumes), then steps 8-10"
    lines.append(f"next: {step}")
    return lines
