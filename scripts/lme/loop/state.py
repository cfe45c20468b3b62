"""The iteration loop's state in the project, and where the loop stands. Standard library only.

Files (project root): ``.max_effort_round`` (the last round number started), ``history_max_effort.md`` (one
table row per round; the loop never writes ``history.md``), ``.longmemeval-benchmarks/snapshots/v<N>/`` (the
run's files as they were before round N's fix), ``decisions.jsonl`` and ``confirmation.json``. ``status`` reads
them (and git) and names the skill step to run next: the Claude Code Stop hook calls it with a bare ``python3``,
so nothing here needs the venv. The steps that change the state are ``loop_steps``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from lme.core.clock import utc_today
from lme.core import codec, fileio
from lme.loop import branch
from lme.loop import rules
from lme.core.errors import UserError
from lme.core import state_reader
from lme.core.facts import (CONFIRMATION_FILE, DECISIONS_FILE, HISTORY_FILE, HISTORY_RECORDS, ROUND_FILE,
                            SCHEMA_VERSIONS, SNAPSHOTS_DIR)

if TYPE_CHECKING:
    from lme.score.scorecard_record import Scorecard

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
                 "cost": "run estimate above confirmCostUsd: waiting for the user's approval",
                 "judge-retired": "official judge retired: no successor named in the config; the user chooses",
                 "judge-uncalibrated": "official judge retired: the successor the config names is uncalibrated; "
                                       "the user calibrates it first"}


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
    text = state_reader.read_text(counter, state_reader.SMALL_LIMIT)
    if text is None:
        raise UserError(f"{counter} is missing", fix="run scripts/check_setup.sh (or rounds.py init)")
    text = text.strip()
    if not text.isdigit() or not text.isascii() or len(text) > 9:
        raise state_reader.StateFileError(counter, "is not a round number", text,
                                          fix="restore it from git history")
    return int(text)


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


@dataclass(frozen=True)
class TypeFigures(codec.Record):
    """One question type's strict figures in a round's record."""

    n: int
    correct: int | None
    accuracy: float | None


@dataclass(frozen=True)
class RoundFigures(codec.Record):
    """The figures a step of a round logs (a row of the history table, a record of history.jsonl) and a decision
    keeps as ``retest_figures``: the strict correct count, the three strict accuracies and per type."""

    correct: int
    n_total: int
    overall: float | None
    task_averaged: float | None
    abstention: float | None
    per_type: Mapping[str, TypeFigures]

    @classmethod
    def of_scorecard(cls, card: Scorecard) -> "RoundFigures":
        """The figures of a run's scorecard (a TypeError for anything but a ``Scorecard``)."""
        from lme.score.scorecard_record import require  # here: rounds.py status and the Stop hook import this module

        card = require(card)
        return cls(correct=card.correct, n_total=card.n_total, overall=card.overall.accuracy_strict,
                   task_averaged=card.task_averaged.accuracy_strict, abstention=card.abstention.accuracy_strict,
                   per_type={t: TypeFigures(b.n, b.correct, b.accuracy_strict) for t, b in card.types_present()})

    @classmethod
    def of_metrics(cls, metrics: Mapping[str, Any]) -> "RoundFigures":
        """From a metrics.json (``run_store.read_metrics``)."""
        from lme.score.scorecard_record import Scorecard  # here: rounds.py status and the Stop hook import this module

        return cls.of_scorecard(Scorecard.from_dict(metrics))


def history_row(round_no: int, figures: RoundFigures, note: str, date: str | None = None) -> str:
    def fmt(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.4f}"

    note = " ".join(note.split()).replace("|", "/")
    return (
        f"| v{round_no} | {date or utc_today()} | {figures.correct}/{figures.n_total} | {fmt(figures.overall)} | "
        f"{fmt(figures.task_averaged)} | {fmt(figures.abstention)} | {note} |"
    )


def append_history_row(project: Path, row: str) -> None:
    """Append one table row to ``history_max_effort.md`` (fsynced; the file is never cut or rewritten)."""
    fileio.append_text_line(Path(project) / HISTORY_FILE, row)


def log_step(project: Path, round_no: int, step: str, figures: RoundFigures, note: str,
             extra: Mapping[str, Any] | None = None) -> str:
    """One step of a round: a row of ``history_max_effort.md`` and a record (per-type figures included) in
    ``history.jsonl`` (what the report's per-type chart reads). Returns the row."""
    row = history_row(round_no, figures, note)
    append_history_row(project, row)
    fileio.append_jsonl(Path(project) / HISTORY_RECORDS, _step_record(round_no, step, figures, note, extra))
    return row


def _step_record(round_no: int, step: str, figures: RoundFigures, note: str,
                 extra: Mapping[str, Any] | None) -> dict[str, Any]:
    return {"schemaVersion": SCHEMA_VERSIONS["loop-history"], "label": f"v{round_no} {step}", "round": round_no,
            "step": step, "date": utc_today(),
            **figures.to_dict(), "note": note, **dict(extra or {})}


def log_step_once(project: Path, round_no: int, step: str, figures: RoundFigures, note: str,
                  extra: Mapping[str, Any] | None = None) -> None:
    """``log_step`` that writes each of its two lines only when that file lacks it: run again after a crash between
    (or before) them, one row of ``history_max_effort.md`` and one record of ``history.jsonl`` per step."""
    row = history_row(round_no, figures, note)
    if not _row_logged(project, row):
        append_history_row(project, row)
    if not any(r.get("round") == round_no and r.get("step") == step
               for _, r in fileio.iter_jsonl(Path(project) / HISTORY_RECORDS, skip_bad=True)):
        fileio.append_jsonl(Path(project) / HISTORY_RECORDS, _step_record(round_no, step, figures, note, extra))


def history_rows(project: Path) -> list[str]:
    """The rows of ``history_max_effort.md``'s table, without its header."""
    text = state_reader.read_text(Path(project) / HISTORY_FILE) or ""
    return [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("| round |")]


def _row_logged(project: Path, row: str) -> bool:
    """A row of the same round and note (the date may differ: a re-run on the next day)."""
    cells = row.split(" | ")
    return any(line.startswith(cells[0] + " | ") and line.endswith(" | " + cells[-1]) for line in history_rows(project))


def step_logged(project: Path, round_no: int, marker: str) -> bool:
    """Whether ``history_max_effort.md`` has a row of round ``round_no`` whose note holds ``marker``."""
    return any(line.startswith(f"| v{round_no} |") and marker in line for line in history_rows(project))


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


def judge_row(text: str, date: str | None = None) -> str:
    """The history table row that records a change of the loop's judge (``| JUDGE | date | n/a ... | text |``): a
    row, like BLOCKED's, that charts skip."""
    text = " ".join(text.split()).replace("|", "/")
    return f"| JUDGE | {date or utc_today()} | n/a | n/a | n/a | n/a | {text} |"


def decision_for(project: Path, round_no: int) -> dict[str, Any] | None:
    """The last decision recorded for ``round_no`` in ``decisions.jsonl`` (None: the round is not decided)."""
    text = state_reader.read_text(Path(project) / DECISIONS_FILE)
    if text is None:
        return None
    found = None
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict) and record.get("round") == round_no:
            found = record
    return found


def fix_commit(project: Path, round_no: int) -> str | None:
    """The sha of the newest ``fix(v<round>):`` commit on HEAD's history (None when there is none)."""
    done = branch.run_git(["log", "-1", "--format=%H", f"--grep=^fix(v{round_no}):"], Path(project), check=False)
    sha = done.stdout.strip() if done.returncode == 0 else ""
    return sha or None


def baseline_note(round_no: int) -> str:
    return f"baseline of round v{round_no}"


def baseline_logged(project: Path, round_no: int) -> bool:
    return step_logged(project, round_no, baseline_note(round_no))


CONFIRMATION_STATES = ("pending", "confirmed", "not_confirmed", "void")
"""What ``confirm.py`` writes as ``confirmation.json``'s status (``void``: pending when the official judge retired,
set aside by ``judge_day.successor_baseline``)."""
DECISIONS = ("keep", "revert", "void")
"""What ``decide`` records as a round's decision (``void``: a round in flight when the official judge retired, its
fix never measured by one judge and reverted, ``judge_day.successor_baseline``)."""
SUCCESSOR_BASELINE_STEP = ("the successor baseline (the skill's \"The official judge retired\": rounds.py "
                           "successor-baseline; BLOCKED until the user names a calibrated successor in the config)")


@dataclass(frozen=True)
class Position:
    """Where the loop stands, read from its files: what ``status`` prints and the Stop hook relays."""

    round_no: int
    has_snapshot: bool
    fix_sha: str | None
    """The round's ``fix(v<round>)`` commit (from git), None when there is none."""
    decision: Any
    """The round's recorded decision as the file has it (``DECISIONS`` when well formed), None when none."""
    confirmation: Mapping[str, Any] | None
    """``confirmation.json`` as the file has it (None: none, or not an object)."""
    history: tuple[str, ...]
    """The last three rows of ``history_max_effort.md``, as the file has them."""
    step: str
    """The skill step to run next (our words, chosen from the validated facts above)."""
    judge: Any = None
    """Who judges the loop's runs (``rules.LoopJudge``; None: not known)."""


def position(project: Path) -> Position:
    """A state file that is not data raises StateFileError."""
    project = Path(project)
    round_no = current(project)
    confirmation = state_reader.read_json(project / CONFIRMATION_FILE)
    confirmation = confirmation if isinstance(confirmation, Mapping) else None
    fix = fix_commit(project, round_no) if round_no else None
    record = decision_for(project, round_no) if round_no else None
    has_snapshot = round_no > 0 and snapshot_dir(project, round_no).is_dir()
    rows = history_rows(project)
    status = confirmation.get("status") if confirmation else None
    judge = rules.loop_judge(project)
    if judge.kind == "retired" and status != "confirmed":
        step = f"the official judge retired: {SUCCESSOR_BASELINE_STEP}"
    elif status == "confirmed":
        step = "the loop is over (confirmed): report both run ids and both counts"
    elif status == "pending":
        step = "steps 2-3 (the confirmation rerun resumes, then it is judged)"
    elif round_no == 0 or record is not None:
        step = "step 1 (the full run resumes), then steps 2-3 and 3b (the noise floor, measured once per stack)"
    elif not has_snapshot:
        step = "step 4 (rounds.py begin finishes starting the round)"
    elif fix is None:
        step = "step 5 (cluster, diagnose, propose), then step 6"
    else:
        step = "step 7 (re-test the trigger set; the run resumes), then steps 8-10"
    return Position(round_no, has_snapshot, fix, record.get("decision") if record else None, confirmation,
                    tuple(rows[-3:]), step, judge)


def status(project: Path) -> list[str]:
    """Where the loop stands, as lines for people; the last line says which skill step to run next."""
    where = position(project)
    lines = [f"round: v{where.round_no}", f"judge: {judge_text(where.judge)}"]
    if where.round_no:
        lines.append(f"snapshot v{where.round_no}: {'present' if where.has_snapshot else 'missing'}")
        lines.append(f"fix commit of v{where.round_no}: {where.fix_sha[:12] if where.fix_sha else 'none'}")
        lines.append(f"decision for v{where.round_no}: {where.decision if where.decision is not None else 'none'}")
    if where.confirmation:
        lines.append(f"confirmation: {where.confirmation.get('status')} "
                     f"(run {where.confirmation.get('confirm_run_id')})")
    lines += [f"history: {row}" for row in where.history]
    lines.append(f"next: {where.step}")
    return lines


def judge_text(judge: Any) -> str:
    """``rules.LoopJudge`` in a few words, for ``status`` (the Stop hook checks the successor's name first)."""
    if judge is None or judge.kind == "official":
        return "the official judge (openai gpt-4o-2024-08-06)"
    if judge.kind == "successor":
        return f"the successor {judge.successor} for every item, since the official judge retired (not official)"
    named = f"the config names {judge.named}" if judge.named else "the config names no successor"
    return f"the official judge retired; no successor baseline yet ({named})"
