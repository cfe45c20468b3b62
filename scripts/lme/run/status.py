"""Where a run stands, in one line: state, done/total, judged, errors, accuracy so far, dollars, rate, ETA.

The command (its parser, ``main()`` and help text) is ``lme/cli/run_status.py``."""

from __future__ import annotations

import os
import shlex
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from lme.core import process_life
from lme.run import background
from lme.run import exit_codes
from lme.core import command_names
from lme.core import fileio
from lme.models import prices
from lme.store import run_store
from lme.store.run_layout import LOG_FILE
from lme.core.clock import parse_utc
from lme.core.errors import UserError
from lme.run.pacing_status import read_pacing_file, status_text
from lme.store import batch_ledger

POLL_S = 1.0
"""Seconds between two looks at the run's files while ``--wait`` blocks."""
EXIT_BY_STATE = {"completed": exit_codes.EXIT_COMPLETED, "running": exit_codes.EXIT_RUNNING, "failed": exit_codes.EXIT_FAILED,
                 "dead": exit_codes.EXIT_FAILED, "blocked": exit_codes.EXIT_BILLING, "interrupted": exit_codes.EXIT_INTERRUPTED,
                 "paused": exit_codes.EXIT_COST_CAP, "broken": exit_codes.EXIT_FAILED}
"""A ``paused`` run exits what its run recorded (``Status.paused_exit``: the cap, a cancelled batch, the code changed)."""
SCRIPTS = Path(__file__).resolve().parents[2]


@dataclass
class Status:
    """One run's state and counters, as the status line and ``--json`` show them."""

    state: str
    run_id: str
    done: int = 0
    """Questions with a result (judged or error)."""
    total: int = 0
    """Questions in the run (its manifest)."""
    judged: int = 0
    errors: int = 0
    correct: int = 0
    spent_usd: float | None = 0.0
    """What the run paid so far (all attempts, cache hits free); None when a price is unknown."""
    spent_split: str | None = None
    """The same apart (``prices.Spend.split``): ``memory system $0.0123, judge $0.3008`` (the scorecard's words)."""
    generation_usd: float | None = 0.0
    """The memory system's part of ``spent_usd`` (None: a row's is unpriced)."""
    judge_usd: float | None = 0.0
    """The judge's part of ``spent_usd`` (None: a row's is unpriced)."""
    items_per_min: float | None = None
    eta_seconds: float | None = None
    pid: int | None = None
    log: str | None = None
    error: str | None = None
    """run-meta's error, or why the run is dead."""
    resume: list[str] = field(default_factory=list)
    """Commands that continue the run (resume, or finish a run cut by --max)."""
    pacing: list[dict[str, Any]] = field(default_factory=list)
    """Per provider/model: learned limits, achieved requests and tokens per minute, time lost waiting."""
    batches: dict[str, Any] | None = None
    """Batch API progress from the run's ledger (``batch_ledger.progress``): totals and one entry per batch, with
    the provider's counts as of the last poll; None when the run used no batch."""
    paused_exit: int | None = field(default=None, repr=False)
    """A ``paused`` run's recorded exit status (``exit_codes.PAUSED_EXITS``): the same ending, the same code as the
    run's own exit. Not in ``to_dict``: ``exit_status`` says it."""

    @property
    def accuracy(self) -> float | None:
        return self.correct / self.judged if self.judged else None

    @property
    def exit_status(self) -> int:
        if self.state == "paused" and self.paused_exit is not None:
            return self.paused_exit
        return EXIT_BY_STATE.get(self.state, exit_codes.EXIT_FAILED)

    def to_dict(self) -> dict[str, Any]:
        facts = asdict(self)
        del facts["paused_exit"]
        return {**facts, "accuracy": None if self.accuracy is None else round(self.accuracy, 4),
                "exit_status": self.exit_status}


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def format_line(s: Status) -> str:
    """``running  212/500 done (210 judged, 2 errors)  acc 0.871  $3.42  38.0 items/min  ETA 7m35s  run 3f2a``,
    then the pacing per model: ``openai/gpt-4o 291/300 rpm 1.94M/2M tpm throttled 85%``."""
    parts = [s.state, f"{s.done}/{s.total} done ({s.judged} judged, {s.errors} errors)"]
    parts.append(f"acc {s.accuracy:.3f}" if s.accuracy is not None else "acc -")
    parts.append("$?" if s.spent_usd is None else f"${s.spent_usd:,.2f}" if s.spent_usd >= 1 else f"${s.spent_usd:.4f}")
    if s.spent_split and (s.spent_usd is None or s.spent_usd > 0):
        parts[-1] += f" ({s.spent_split})"
    if s.items_per_min is not None:
        parts.append(f"{s.items_per_min:.1f} items/min")
    if s.eta_seconds is not None and s.state == "running":
        parts.append(f"ETA {_duration(s.eta_seconds)}")
    parts.append(f"run {s.run_id}")
    if s.batches:
        parts.append(batch_text(s.batches))
    if s.pacing:
        paced = status_text(s.pacing)
        if paced:
            parts.append(paced)
    return "  ".join(parts)


def batch_text(batches: dict[str, Any]) -> str:
    """``batches: 500 submitted, 0 in progress, 498 completed, 2 failed; judge batch_abc completed (openai
    completed 498 failed 2, last poll 2026-12-01T12:00:03Z)``: the ledger's totals, then each open batch (or
    the last one)."""
    t = batches["totals"]
    text = (f"batches: {t['submitted']} submitted, {t['in_progress']} in progress, {t['completed']} completed, "
            f"{t['failed']} failed")
    shown = [b for b in batches["batches"] if b["phase"] in ("planned", "uploaded", "submitted")] or \
        batches["batches"][-1:]
    for b in shown:
        counts = " ".join(f"{k} {v}" for k, v in (b.get("counts") or {}).items())
        poll = f", last poll {b['last_poll']}" if b.get("last_poll") else ""
        text += (f"; {b['stage']} {b.get('batch_id') or b['chunk']} {b.get('status') or b['phase']} "
                 f"({b['provider']} {b['requests']} requests{': ' + counts if counts else ''}{poll})")
    return text


def _batches(root: Path) -> dict[str, Any] | None:
    found = [p for p in (batch_ledger.progress(d) for d in run_store.run_dirs(root)) if p is not None]
    if not found:
        return None
    totals: dict[str, int] = {}
    for p in found:
        for k, v in p["totals"].items():
            totals[k] = totals.get(k, 0) + v
    return {"totals": totals, "batches": [b for p in found for b in p["batches"]]}


# --------------------------------------------------------------------------- commands printed for the user


def resume_lines(project: Path | str, run_id: str, shard: str | None = None, *, note: str = "",
                 verb: str = "resume with", counts: tuple[int, int] | None = None) -> list[str]:
    """The command that continues ``run_id``, for the shell and as the slash command Claude Code expands.

    A resume needs only the run id (and its shard): the run's settings, and its items, are read back from its
    run-meta and manifest. ``counts`` (``pending_of``): what it finishes, said before the command
    (``9 of this run's 10 items pending; resume with: ...``), so everything after ``: `` is the command alone.
    """
    extra = f" --shard {shard}" if shard else ""
    command = [sys.executable, str(SCRIPTS / "run_benchmark.py"), "--project", str(project), "--run-id", run_id]
    if counts is not None:
        verb = f"{counts[0]} of this {'shard' if shard else 'run'}'s {counts[1]} items pending; {verb}"
    return [f"{verb}: " + " ".join(shlex.quote(c) for c in command) + extra + note,
            "in Claude Code: " + command_names.slash(command_names.RUN, f"--run-id {run_id}{extra}") + note]


def pending_of(root: Path, shard: str | None) -> tuple[int, int] | None:
    """``(pending, items)`` of the run's item set (its manifest; a shard's share of it): what a resume finishes.
    None when the run has no readable manifest."""
    manifest = run_store.peek_json(run_store.manifest_path(root))
    items = None if manifest is None else manifest.get("items")
    if not isinstance(items, list):
        return None
    i, _, n = (shard or "").partition("/")
    share = (int(i), int(n)) if shard else None
    ids = [str(it.get("question_id")) for it in items
           if isinstance(it, dict) and run_store.in_shard(str(it.get("question_id")), share)]
    done = done_after_resume(root)
    return sum(1 for q in ids if q not in done), len(ids)


def done_after_resume(root: Path) -> set[str]:
    """The ids a resume counts done: every judged last row (its reconcile marks one a kill left unmarked, between
    the row's append and its mark's), not only the ids marked in ``questions_completed.jsonl``."""
    return {qid for qid, row in run_store.load_results(root).items() if row.judged}


def wait_line(run_id: str) -> str:
    venv_run = SCRIPTS / "venv_run.sh"
    return f'wait: bash "{venv_run}" run_status.py --run-id {run_id} --wait 100'


# --------------------------------------------------------------------------- reading a run


def _metas(root: Path) -> list[dict[str, Any]]:
    """The run's own meta and each shard's (the root meta of a sharded run summarises them), unchecked: a status
    poll must not fail on a file a writer is replacing."""
    return [m for m in (run_store.peek_meta(d) for d in run_store.run_dirs(root)) if m is not None]


def writer_pid(root: Path) -> int | None:
    """The pid of a live run driver that holds (or last held) one of the run's locks. The lock file keeps the
    last writer's pid after it ends, so the pid must still be alive and still be ``run_benchmark.py``."""
    for lock in run_store.writer_lock_paths(root):
        pid = run_store.RunLock(lock.parent).holder_pid()
        if pid and process_life.pid_alive(pid) and _is_run_driver(pid):
            return pid
    return None


def _is_run_driver(pid: int) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True  # no /proc (macOS, Windows): trust the live pid
    return any(Path(arg.decode("utf-8", "replace")).name == "run_benchmark.py" for arg in cmdline.split(b"\0"))


def state_of(root: Path) -> tuple[str, dict[str, Any] | None, dict[str, Any] | None, str | None]:
    """(state, run-meta, worker.json, why dead) from the run's files and its processes; cheap enough to poll."""
    meta = run_store.peek_meta(root)
    worker = background.read_worker(root)
    for directory in run_store.run_dirs(root):  # a shard has its own worker
        info = worker if directory == root else background.read_worker(directory)
        if process_life.alive(info):
            return "running", meta, info, None
    broken = _broken_meta(root) if meta is None else None
    if broken is not None:  # never "never started": the run has rows or a run-meta nobody can read
        return "broken", meta, worker, f"the run's metadata is broken: {broken}; {BROKEN_WAY_OUT}"
    if meta is None:
        if worker is not None:
            return "dead", meta, worker, "the background worker exited before it wrote run-meta.json; see its log"
        return "dead", meta, worker, "no run-meta.json and no worker: the run never started"
    status = str(meta.get("status"))
    if status == "running":
        pid = writer_pid(root)
        if pid is not None:
            return "running", meta, {**(worker or {}), "pid": pid}, None
        why = disk_full_note(root) or ("run-meta says running but no process writes the run (killed, or the "
                                       "machine restarted)")
        return "dead", meta, worker, why
    worker_start, meta_end = parse_utc((worker or {}).get("started_at")), parse_utc(meta.get("finished_at"))
    if worker_start and meta_end and meta_end < worker_start:
        return "dead", meta, worker, "the background worker exited without running the run; see its log"
    if status == "failed" and meta.get("exit_status") == exit_codes.EXIT_BILLING:
        return "blocked", meta, worker, None
    return status, meta, worker, None


BROKEN_WAY_OUT = ("restore run-meta.json from a copy of the run, or resume it with the settings its rows recorded "
                  "(a resume that cannot continue them says which)")


def _broken_meta(root: Path) -> str | None:
    """Why the run's run-meta cannot be read (the store's verdict), or that it is missing though the run has rows;
    None: it reads, or the run never wrote anything."""
    fault = run_store.meta_fault(root)
    if fault is None and not run_store.has_meta(root) and next(iter(run_store.iter_rows(root)), None) is not None:
        return f"{run_store.meta_path(root)} is missing, but the run has rows"
    return fault


FULL_BELOW_BYTES = 1 << 20
"""Less free space than this on the run's disk: a run that stopped without a word stopped because it was full."""


def disk_full_note(root: Path) -> str | None:
    """Why a run that says ``running`` has no writer, when the disk holding it is full: the disk, named."""
    try:
        st = os.statvfs(root)
    except (OSError, AttributeError):  # AttributeError: no statvfs (Windows)
        return None
    free = st.f_bavail * st.f_frsize
    if free >= FULL_BELOW_BYTES:
        return None
    return (f"run-meta says running but no process writes the run: the disk holding it ({_mount_point(root)}) is "
            f"full ({free:,} bytes free), so the run stopped when it could not write; free some space, then resume it")


def _mount_point(path: Path) -> str:
    path = Path(os.path.abspath(path))
    device = os.stat(path).st_dev
    while path.parent != path and os.stat(path.parent).st_dev == device:
        path = path.parent
    return str(path)


def collect(root: Path, project: Path) -> Status:
    """Reads every result row."""
    state, meta, worker, why = state_of(root)
    meta = meta or {}
    status = Status(state=state, run_id=root.name, pid=(worker or {}).get("pid") if state == "running" else None,
                    log=(worker or {}).get("log") or (str(root / LOG_FILE)
                                                      if (root / LOG_FILE).exists() else None),
                    error=why or meta.get("error"))
    if state == "dead" and status.log and meta.get("status") != "running":  # the worker failed at its start
        tail = _last_line(Path(status.log))
        status.error = f"{status.error}; last log line: {tail}" if tail else status.error
    manifest = run_store.peek_json(run_store.manifest_path(root)) or {}
    status.total = int(manifest.get("n_total") or (meta.get("counts") or {}).get("n_total") or 0)
    last = run_store.load_results(root)
    status.done = len(last)
    status.judged = sum(1 for r in last.values() if r.judged)
    status.errors = status.done - status.judged
    status.correct = sum(1 for r in last.values() if r.correct)
    paid = prices.spend(run_store.iter_rows(root))
    status.spent_usd, status.generation_usd, status.judge_usd = paid.total_usd, paid.generation_usd, paid.judge_usd
    status.spent_split = paid.split()
    _rate_and_eta(status, root)
    status.pacing = _pacing(root, state)
    status.batches = _batches(root)
    shard = meta.get("shard")
    pending = status.total - len(done_after_resume(root))
    counts = pending_of(root, shard)
    if state == "paused" and meta.get("exit_status") in exit_codes.PAUSED_EXITS:
        status.paused_exit = int(meta["exit_status"])
    if state in ("failed", "interrupted", "dead", "blocked") or (  # a pause that resumes as it is
            state == "paused" and status.paused_exit in (exit_codes.EXIT_BATCH_STOPPED, exit_codes.EXIT_CODE_CHANGED)):
        status.resume = resume_lines(project, root.name, shard, counts=counts)
    elif state == "paused":
        status.resume = resume_lines(project, root.name, shard, note=" --max-cost <a higher USD>")
    elif state == "completed" and pending > 0 and not meta.get("shards"):
        status.resume = resume_lines(project, root.name, shard, verb=f"{pending} items not run yet; finish with")
    return status


def _pacing(root: Path, state: str) -> list[dict[str, Any]]:
    """The pacer's figures: live from ``pacing.json`` while running, else from the last invocation's run-meta."""
    directories = run_store.run_dirs(root)
    if state == "running":
        return [e for d in directories for e in read_pacing_file(d)]
    metas = [run_store.peek_meta(d) or {} for d in directories]
    return [e for m in metas for e in ((m.get("invocations") or [{}])[-1].get("pacing") or [])]


def _last_line(path: Path) -> str | None:
    try:
        with fileio.open_file(path, "rb") as fh:
            fh.seek(max(0, fh.seek(0, os.SEEK_END) - 4096))
            lines = [x.strip() for x in fh.read().decode("utf-8", "replace").splitlines() if x.strip()]
    except (OSError, UserError):
        return None
    return lines[-1][:300] if lines else None


def _rate_and_eta(status: Status, root: Path) -> None:
    """Items per minute in the current (or last) invocation, and the time its remaining items need at that pace."""
    starts, planned, ends = [], 0, []
    for m in _metas(root):
        invocations = m.get("invocations") or []
        if invocations:
            last = invocations[-1]
            starts.append(parse_utc(last.get("started_at")))
            planned += int(last.get("planned_now") or last.get("pending_before") or 0)
            ends.append(parse_utc(last.get("finished_at")))
    starts = [s for s in starts if s]
    if not starts:
        return
    since = min(starts)
    finished = [t for t in (parse_utc(r.finished_at) for r in run_store.iter_rows(root)) if t]
    recent = sum(1 for t in finished if t >= since)
    if status.state == "running":
        until = time.time()
    elif all(ends):  # run-meta's times have whole seconds: a run inside one second ends at its start
        until = max([e for e in ends if e] + finished)
    else:  # killed: the pace up to its last row
        until = max(finished, default=since)
    if until - since < MIN_RATE_SECONDS:  # 6 rows over 1e-6 s once showed 360000000.0 items/min
        status.items_per_min = None
        return
    minutes = (until - since) / 60.0
    status.items_per_min = round(recent / minutes, 1) if recent else 0.0
    remaining = max(planned - recent, 0) if planned else max(status.total - status.done, 0)
    if recent and status.state == "running":
        status.eta_seconds = round(remaining / (recent / minutes) * 60.0, 1)


MIN_RATE_SECONDS = 0.01
"""No items/min (nor ETA) is shown over less time than this: a rate over microseconds is noise."""


# --------------------------------------------------------------------------- finding the run


def latest_run(base: Path) -> Path:
    """The most recently active run: its last start, or its background worker's start."""
    def last_active(p: Path) -> float:
        times = [parse_utc((background.read_worker(d) or {}).get("started_at")) for d in run_store.run_dirs(p)]
        for m in _metas(p)[:1]:
            times.append(parse_utc(m.get("started_at")))
            times += [parse_utc(i.get("started_at")) for i in m.get("invocations") or []]
        return max([t for t in times if t] or [0.0])

    runs = run_store.runs_under(base)
    if not runs:
        raise UserError(f"no runs under {base}", fix=f"start one: {command_names.step(command_names.RUN)}")
    return max(runs, key=lambda p: (last_active(p), p.name))


def find_run(project: Path, run_id: str | None) -> Path:
    base = run_store.runs_dir(project, require_config=True)
    if run_id is None:
        return latest_run(base)
    root = run_store.run_dir_for(base, run_store.validate_run_id(run_id))
    if not root.is_dir() or not run_store.is_run(root):
        raise UserError(f"no run {run_id} under {base}", fix="check the id (run_status.py --latest shows the newest run)")
    return root


def wait_for(root: Path, seconds: float) -> None:
    """Block until the run is not running, or ``seconds`` have passed (at most one poll interval more)."""
    deadline = time.monotonic() + max(seconds, 0.0)
    while state_of(root)[0] == "running":
        left = deadline - time.monotonic()
        if left <= 0:
            return
        time.sleep(min(POLL_S, left))
