"""The run's driver: generate -> judge -> append -> mark completed, concurrently, resumably, with a call cache.

One process writes a run directory at a time (a lock); the writer is this process's main thread, the workers only
compute rows (``item_runner``). An item that fails after retries gets an error row and is not marked completed.
SIGINT/SIGTERM finishes the items in flight (a second one abandons them); whatever ends the run, run-meta says
how. ``run_benchmark.py`` is the command around it.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterator

from lme.run import background
from lme.run import batch_runner
from lme.run import code_version
from lme.run import cost_gate
from lme.models import prices
from lme.data import dataset
from lme.data import dataset_scans
from lme.run import item_runner
from lme.judge import official
from lme.judge import verdict_archive
from lme.store import prompt_store
from lme.models import providers
from lme.run import state
from lme.run import status as run_status
from lme.store import run_store
from lme.models.call_cache import CallCache
from lme.core import fileio
from lme.core.clock import utc_now
from lme.core.errors import FULL, UserError
from lme.core.facts import HYPOTHESES_TARGET, is_offline, is_user_system
from lme.core.memory_trim import Trimmer
from lme.data.hypotheses_file import MISSING_HYPOTHESIS
from lme.run.item_runner import BILLING
from lme.judge.stability import StabilityRegistry
from lme.run.progress import Progress
from lme.run.pacing_status import PacingFile
from lme.models.rate_pacer import Pacer
from lme.models.endpoint_forward import EndpointRoutes
from lme.models.target_endpoint import TargetEndpoint
from lme.core.records import Question
from lme.models.run_gateway import RunGateway, RunStats
from lme.core.run_records import ERROR, Invocation, ResultRow, RunMeta, counts_of
from lme.run.settings import RunSettings
from lme.run.exit_codes import EXIT_BILLING, EXIT_COMPLETED, EXIT_FAILED, EXIT_INTERRUPTED
from lme.run.outcome import Ending, outcome_of


# --------------------------------------------------------------------------- the run


@dataclass
class _Stop:
    """Set by SIGINT/SIGTERM (first: finish in-flight items; second: abandon them) or by the failure policy; the
    fields ``outcome.Ending`` takes over."""

    reason: str | None = None
    signals: int = 0
    abandon: threading.Event = field(default_factory=threading.Event)
    judge_gone: int = 0
    judge_message: str | None = None
    code_changed: str | None = None

    def request(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason


def _install_signal_handlers(stop: _Stop) -> dict[int, Any]:
    previous: dict[int, Any] = {}
    if threading.current_thread() is not threading.main_thread():
        return previous

    def handler(signum: int, _frame: Any) -> None:
        stop.signals += 1
        stop.request("interrupted")
        if stop.signals == 1:
            print("\nstopping: finishing items in flight (press Ctrl-C again to abandon them)", file=sys.stderr)
        else:
            stop.abandon.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        previous[sig] = signal.signal(sig, handler)
    return previous


def _pending_questions(settings: RunSettings, pending_ids: list[str]) -> Iterator[Question]:
    """Stream just the pending items from the dataset (``_m`` never has to fit in memory)."""
    wanted = set(pending_ids)
    if not wanted:
        return
    for raw in dataset.iter_items(Path(settings.dataset_path)):
        qid = str(raw["question_id"])
        if qid in wanted:
            wanted.discard(qid)
            yield Question.from_dict(raw)
            if not wanted:
                return


@dataclass
class _Tally:
    """What this invocation did: counts for run-meta and the failure policy."""

    evaluated: int = 0
    errors: int = 0
    errors_by_kind: dict[str, int] = field(default_factory=dict)
    billing_message: str | None = None

    def record(self, row: ResultRow) -> None:
        self.evaluated += 1
        if row.status == ERROR and row.error is not None:
            kind = row.error.kind
            self.errors_by_kind[kind] = self.errors_by_kind.get(kind, 0) + 1
            if kind == MISSING_HYPOTHESIS:  # the file has no answer: an error row, never a reason to stop the run
                return
            self.errors += 1
            if kind == BILLING:
                self.billing_message = row.error.message


class _MetaWriter:
    """The run-meta this invocation keeps current: the run's RunMeta and this invocation's entry."""

    def __init__(self, work: Path, meta: RunMeta, invocation: Invocation) -> None:
        self.work = work
        self.previous = tuple(meta.invocations)
        self.meta = meta.with_(status="running", finished_at=None, error=None)
        self.invocation = invocation

    def mark_unofficial(self) -> None:
        """A verdict was not official (e.g. a prompt that is not upstream's): neither is the run's judge."""
        if self.meta.judge.official:
            self.meta = self.meta.with_(judge=self.meta.judge.updated(official=False))

    def write(self, **changes: Any) -> None:
        self.meta = self.meta.with_(**changes, invocations=(*self.previous, self.invocation))
        run_store.write_meta(self.work, self.meta)


def _drive(run: "_Session", questions: Iterator[Question], gateway: Any, endpoint: Any = None) -> None:
    """This thread is the only writer: append the row, then mark it completed if judged.

    ``run.cap`` (a ``cost_gate.CostCap``) admits each item before it is started; the first refusal stops the intake
    and the items already admitted finish and are recorded. ``gateway``: the run's LLM (the batch phase's, after one);
    ``endpoint``: the run's target endpoint (a user's own system), or None.
    """
    settings, work, stop, cap = run.settings, run.work, run.stop, run.cap
    prompts = prompt_store.PromptStore(work)
    trimmer = Trimmer()  # freed memory back to the system between batches (a long run's RSS otherwise only grows)
    requests_of: dict[cf.Future, list] = {}
    registry = StabilityRegistry(settings.project) if settings.judge_repeat > 1 else None
    with cf.ThreadPoolExecutor(max_workers=settings.concurrency, thread_name_prefix="item") as pool:
        in_flight: set[cf.Future] = set()
        exhausted = False
        while True:
            while not exhausted and stop.reason is None and len(in_flight) < settings.concurrency * 2:
                q = next(questions, None)
                if q is None:
                    exhausted = True
                    break
                if cap is not None and not cap.admit(q):
                    stop.request("cost_cap")
                    break
                if run.code_changed():
                    break
                requests: list = []
                fut = pool.submit(_start_item, run, q, gateway, requests, endpoint)
                requests_of[fut] = requests
                in_flight.add(fut)
            if not in_flight:
                return
            run.pacing_file.tick()  # the live pacing figures for run_status.py
            finished, in_flight = cf.wait(in_flight, timeout=0.5, return_when=cf.FIRST_COMPLETED)
            rows: list[tuple[ResultRow, list]] = []
            for fut in finished:
                row: ResultRow | None = fut.result()
                item_prompts = requests_of.pop(fut)
                if row is None:
                    continue  # not started: the code changed; the item stays pending
                if _judge_stop(row, settings, stop):
                    continue  # no row: the item stays pending for a resume with another route
                rows.append((row if run.code.id is None else row.with_(code=run.code.id), item_prompts))
            # Items that finished together are written together: prompts, then the rows that name them, then the
            # completed marks of the judged ones, one fsync per file (not three per item: the writer kept up less).
            prompts.add([request for _, item_prompts in rows for request in item_prompts])
            run_store.append_rows(work, [row for row, _ in rows])
            run_store.mark_completed_many(work, [row.question_id for row, _ in rows if row.judged])
            for row, _ in rows:
                run.account(row, registry, gateway)
            if rows:
                trimmer.maybe()
            if stop.reason not in (None, "cost_cap"):  # items queued but not started are not started now
                in_flight = {fut for fut in in_flight if not fut.cancel()}
            if stop.abandon.is_set():
                run.abandon()


def _start_item(run: "_Session", q: Question, gateway: Any, requests: list, endpoint: Any) -> ResultRow | None:
    """One item on a pool thread, unless the target's code changed since the invocation hashed it: then None, not
    started (it stays pending), and the run stops taking items. Checked as the item starts (a stat per file), so no
    item begun after an edit is recorded under the code the run started with. ``endpoint``: the run's target
    endpoint (a user's own system), or None."""
    if run.code_changed():
        return None
    return item_runner.run_item(q, run.settings, gateway, requests, endpoint, run_id=run.run_id)


def _judge_stop(row: ResultRow, settings: RunSettings, stop: _Stop) -> bool:
    """A judge error that is not this item's own but the judge's: True when the row must not be written.

    - The response named another model than the pinned one: the run stops at the first such response (the rule of
      ``judge_official.JudgeModelMismatch``), the item stays pending, the run ends with one loud line.
    - The official judge is gone (404 / 410) with no successor: the item stays pending. A ``--hypotheses`` run goes
      on (its other items may have archived verdicts, which need no call); a run that generates stops its intake
      (each further item would pay for an answer no judge can score).
    """
    error = row.error
    if row.status != ERROR or error is None or error.stage != "judge":
        return False
    if official.model_mismatch(error.to_dict()):
        stop.judge_message = stop.judge_message or error.message
        stop.request("judge_mismatch")
        return True
    if official.official_judge_gone(error.to_dict(), settings.judge_provider, settings.judge_model):
        stop.judge_gone += 1
        if settings.target != HYPOTHESES_TARGET:
            stop.request("judge_gone")
        return True
    return False


def _locate(settings: RunSettings, run_id: str | None, scanned: Any = None) -> tuple[str, Path, Path, Any]:
    """The run's id (a new one when None), root and own (shard) directory, and, for a new run, the dataset scanned
    before anything is written (a bad file leaves nothing behind; ``scanned``: a scan made already, the cost
    gate's)."""
    runs_dir = Path(settings.runs_dir)
    run_store.ensure_writable_dir(runs_dir)
    run_id = run_store.validate_run_id(run_id) if run_id else run_store.new_run_id()
    root = run_store.run_dir_for(runs_dir, run_id)
    work = run_store.shard_dir(root, settings.shard)
    for path in (root, work):
        if path.exists() and not path.is_dir():
            raise UserError(f"{path} is a file, not a run directory",
                            fix="move that file away, or pick another --run-id")
    return run_id, root, work, None if root.exists() else (scanned or state.scan_new_run(settings))


def execute(settings: RunSettings, run_id: str | None, options: RunOptions | None = None, *,
            scanned: Any = None, on_start: Callable[[], None] | None = None) -> tuple[int, Path]:
    """Run (or resume) ``run_id``; returns (exit status, run root). ``options``: what the command asked of this
    invocation (``RunOptions``); ``scanned``: the new run's dataset scan when the caller made it
    (``cost_gate.check``); ``on_start``: called once the run's directory and run-meta exist (what a refused run
    must not leave behind waits for it)."""
    options = options or RunOptions()
    run_id, root, work, scanned = _locate(settings, run_id, scanned)
    state.check_run(settings, run_id, root, work, scanned, options.loop_check)  # its refusals before any
    # directory, lock or cache
    if not is_offline(settings.judge_provider):
        verdict_archive.refuse_if_newer(settings.project)
    cache = CallCache(Path(settings.cache_dir), read=settings.cache_read) if settings.cache_enabled else None
    fileio.make_dirs(work)
    t_start = time.monotonic()

    # Shards hold the root shared (they coexist); a whole-run writer holds it alone. Then the own directory.
    with run_store.RunLock(root, shared=settings.shard is not None), contextlib.ExitStack() as own:
        if settings.shard is not None:
            own.enter_context(run_store.RunLock(work))
        reserve = fileio.SpaceReserve(work / run_store.RESERVE_FILE).hold()  # room for the last word on a full disk
        own.callback(reserve.release)
        run = _Session(settings, run_id, root, work, scanned, cache=cache, reserve=reserve,
                       t_start=t_start, options=options)
        if on_start is not None:
            on_start()
        fileio.clean_leftovers(settings.project, settings.runs_dir, settings.cache_dir)  # killed writes' temps
        run.start()
        run.drive()
        code = run.finish()
    return code, root


@dataclass(frozen=True)
class RunOptions:
    """What the command asked of this invocation beyond the run's settings: ``progress_mode``; ``max_cost`` (see
    ``cost_gate.CostCap``); ``approved_usd``, what the user's ``--yes`` covers (recorded:
    ``cost_gate.APPROVAL_KEY``); ``loop_check``, the loop's hard rules a ``--loop`` run must pass
    (``run_state.LoopCheck``); ``code_paths``, the project-relative folders the user declared as their memory
    system's code (the loop's fix paths), fingerprinted with a user's target (``code_version``)."""

    progress_mode: str = "auto"
    max_cost: float | None = None
    approved_usd: float | None = None
    loop_check: state.LoopCheck | None = None
    code_paths: tuple[str, ...] = ()


class _Session:
    """One invocation of a run inside its locks: opened here (directory reconciled, run-meta written), then
    ``start`` (progress, signals), ``drive`` (the batch phase, then the items), ``finish`` (the outcome recorded)."""

    def __init__(self, settings: RunSettings, run_id: str, root: Path, work: Path, scanned: Any, *, cache: Any,
                 reserve: Any, t_start: float, options: RunOptions) -> None:
        """``run_id``, ``root``, ``work`` and ``scanned``: ``_locate``'s."""
        self.settings, self.run_id, self.root, self.work = settings, run_id, root, work
        self.cache, self.reserve, self.t_start, self.options = cache, reserve, t_start, options
        run_store.reconcile(work)
        self.code, self.code_watch = code_version.fingerprint(settings, options.code_paths)
        stored_meta, self.manifest = state.open_run(settings, run_id, root, work, scanned, options.loop_check,
                                                    self.code)
        if scanned is not None:  # the run exists now: the next new run on this file need not scan it again
            dataset_scans.store(settings.cache_dir, settings.dataset_path, (scanned[0].to_dict(), scanned[1]))
        _archive_older_runs(settings, root)
        self.done = run_store.load_completed(root)  # root and every shard: never re-run what another shard did
        self.planned = [qid for qid in self.manifest.question_ids if run_store.in_shard(qid, settings.shard)]
        self.pending = [qid for qid in self.planned if qid not in self.done]  # --max chose them at the start
        self.code_before = _last_code(stored_meta)

        self.tally = _Tally()
        self.limiter = Pacer(settings.concurrency, limits=settings.rate_limits)
        calls = providers.ProviderSettings(timeout_s=settings.timeout_s, max_attempts=settings.max_attempts,
                                           base_urls=dict(settings.base_urls), azure=dict(settings.azure))
        self.gateway = RunGateway(settings=calls, cache=cache, limiter=self.limiter, stats=RunStats())
        if settings.official_judge_gone:  # the start-up check saw 404 / 410: no official call is made
            self.gateway.mark_gone(settings.judge_provider, settings.judge_model, providers.ProviderError(
                "not_found", f"{settings.judge_provider} {settings.judge_model}: gone (the start-up check)",
                status=410))
        max_cost = options.max_cost
        self.cap = None if max_cost is None else cost_gate.CostCap(max_cost, settings, work)
        self.before = _run_figures(work)
        invocation = Invocation(
            started_at=utc_now(), pending_before=len(self.pending), planned_now=len(self.pending),
            endpoints=state.endpoints(settings),
            successor=None if settings.successor is None else settings.successor_judge,
            official_judge_gone=settings.official_judge_gone or None, successor_only=settings.successor_only or None,
            max_cost_usd=max_cost, approved_usd=options.approved_usd, code=self.code.to_dict())
        self.meta = _MetaWriter(work, stored_meta, invocation)
        self.meta.write()
        self.batched: Any = None

    def start(self) -> None:
        settings = self.settings
        if settings.shard is not None:
            state.update_root_meta(self.root, self.manifest)
        self.progress = Progress(self.options.progress_mode, len(self.pending), already_done=len(self.done),
                                 run_id=self.run_id, run_total=len(self.planned), before=self.before,
                                 pacing=self.limiter.pacing)
        self.pacing_file = PacingFile(self.work, self.limiter.pacing)
        self.stop = _Stop()
        self.say_code_change()

    def say_code_change(self) -> None:
        """A resume whose code differs from the last invocation's: one line (its rows will come from two
        versions, which the scorecard counts)."""
        before, now = self.code_before, self.code
        if before is None or before.id == now.id or not self.pending or self.options.progress_mode in ("quiet", "json"):
            return
        print(f"the code changed since this run's last invocation ({before.changes_to(now).describe() or 'other files'}"
              f"): the rows of this invocation carry code {now.id}, the earlier ones {before.id}", file=sys.stderr)

    def code_changed(self) -> bool:
        """The target's code is not as the invocation hashed it (a stat per file): the run stops taking items."""
        stop = self.stop
        if stop.code_changed is None:
            what = self.code_watch.changed()
            if what is None:
                return False
            stop.code_changed = what
        stop.request("code_changed")
        return True

    def record(self, status: str, error: str | None, exit_status: int) -> None:
        """This invocation's entry and the run-meta, as the run ends (however it ends)."""
        meta, cap, cache = self.meta, self.cap, self.cache
        elapsed = time.monotonic() - self.t_start
        finished_at = utc_now()
        pacing = self.limiter.pacing()
        try:
            self.pacing_file.write()
        except OSError:
            pass  # a hint for run_status (a full disk, say): never a reason to leave run-meta saying running
        meta.invocation = replace(
            meta.invocation,
            finished_at=finished_at,
            status=status,
            exit_status=exit_status,
            duration_seconds=round(elapsed, 3),
            evaluated=self.tally.evaluated,
            errors=self.tally.errors,
            errors_by_kind=dict(self.tally.errors_by_kind),
            **self.gateway.stats.snapshot(),
            cache=None if cache is None else {"read": cache.read, **cache.stats()},
            pacing=pacing,
            spent_usd=None if cap is None else round(cap.spent, 6),
        )
        meta.write(
            status=status,
            error=error,
            finished_at=finished_at,
            duration_seconds=round(float(meta.meta.duration_seconds or 0.0) + elapsed, 3),
            counts=counts_of(self.manifest, self.planned, run_store.load_completed(self.work)),
            limiter=self.limiter.summary(),
            pacing=pacing,
            exit_status=exit_status,
            retries=sum(inv.retries or 0 for inv in (*meta.previous, meta.invocation)),
        )

    def account(self, row: ResultRow, registry: StabilityRegistry | None, gateway: Any) -> None:
        tally, meta, stop = self.tally, self.meta, self.stop
        tally.record(row)
        if self.cap is not None:
            self.cap.settle(row)
        if row.judged and row.judgment is not None:
            if not row.judgment.official:
                meta.mark_unofficial()
            if registry is not None:
                registry.record(row.question_id, row.judgment, f"run {self.run_id}")
        elif tally.billing_message is not None:
            stop.request("billing")
        elif tally.errors > self.settings.error_threshold:
            stop.request("errors")
        self.progress.update(row, gateway.stats.snapshot())

    def abandon(self) -> None:
        self.record("interrupted", "interrupted; items in flight were abandoned and will re-run", EXIT_INTERRUPTED)
        self.progress.close("interrupted")
        print(resume_hint(self.settings, self.run_id), file=sys.stderr, flush=True)
        os._exit(EXIT_INTERRUPTED)  # in-flight calls cannot be cancelled; their rows were never written

    def drive(self) -> None:
        """Whatever ends it, run-meta says how before it re-raises."""
        settings, stop, progress_mode = self.settings, self.stop, self.options.progress_mode
        previous_handlers = _install_signal_handlers(stop)
        ended = None
        try:
            questions = _pending_questions(settings, self.pending)
            llm: Any = self.gateway
            if settings.batch != "off":
                self.batched = batched = batch_runner.run_phase(
                    settings, lambda: _pending_questions(settings, self.pending), self.gateway, self.work,
                    self.run_id, should_stop=lambda: stop.reason is not None,
                    say=(lambda line: None) if progress_mode in ("quiet", "json") else
                    (lambda line: print(line, file=sys.stderr, flush=True)))
                llm = batched.llm
                self.meta.invocation = replace(self.meta.invocation, batch={
                    "mode": settings.batch, "pending": len(batched.pending), "stop": batched.stop, **batched.figures})
                questions = (q for q in questions if batched.replay and q.question_id not in batched.pending)
            with self.target_endpoint() as endpoint:
                _drive(self, questions, llm, endpoint)
        except BaseException as err:  # never leave a run saying "running": record how it ended, then re-raise
            interrupted = isinstance(err, KeyboardInterrupt)
            ended = "interrupted" if interrupted else "failed"
            full = disk_full_line(err, settings, self.run_id)
            if full is not None:
                self.reserve.release()  # the space the run-meta below needs
            self.record(ended, None if interrupted else full or f"{type(err).__name__}: {err}",
                        EXIT_INTERRUPTED if interrupted else EXIT_FAILED)
            if full is not None:
                raise UserError(f"run {self.run_id} stopped: {full}") from None
            raise
        finally:
            for sig, handler in previous_handlers.items():
                signal.signal(sig, handler)
            if ended is not None:
                self.progress.close(ended)

    def target_endpoint(self) -> Any:
        """The run's target endpoint for a user's own system (started here, stopped when the drive ends however it
        ends); for any other target nothing (None inside)."""
        settings = self.settings
        if not is_user_system(settings.target):
            return contextlib.nullcontext()
        return TargetEndpoint(self.gateway, EndpointRoutes.for_target(settings.target_provider))

    def ending(self) -> Ending:
        stop, tally, batched, cap = self.stop, self.tally, self.batched, self.cap
        return Ending(stop_reason=stop.reason, judge_gone=stop.judge_gone, judge_message=stop.judge_message,
                      code_changed=stop.code_changed,
                      batch_stop=None if batched is None else batched.stop,
                      batch_message=None if batched is None else batched.message,
                      errors=tally.errors, error_threshold=self.settings.error_threshold,
                      errors_by_kind=dict(tally.errors_by_kind), billing_message=tally.billing_message,
                      cap_message=None if cap is None or stop.reason != "cost_cap" else cap.message())

    def finish(self) -> int:
        """The outcome (``outcome.outcome_of``) recorded and said; returns the exit status."""
        outcome = outcome_of(self.ending())
        code = outcome.exit_code
        self.record(outcome.status, outcome.error, code)
        self.progress.close("blocked" if code == EXIT_BILLING else outcome.status)
        if self.batched is not None and self.batched.message and code != EXIT_COMPLETED:
            print(f"batch: {self.batched.message}", file=sys.stderr, flush=True)
        if self.settings.shard is not None:
            state.update_root_meta(self.root, self.manifest)
        return code


def _archive_older_runs(settings: RunSettings, root: Path) -> None:
    """The official verdicts of runs made before runs archived theirs go into the project's archive (once per
    run: ``verdict_archive.backfill``; this run ``root`` too, when it is new); a run that cannot read them says so
    and goes on."""
    if is_offline(settings.judge_provider):
        return
    try:
        added = verdict_archive.backfill(Path(settings.project), starting=Path(root))
    except UserError as err:
        print(f"warning: the official verdicts of older runs were not archived: {err}", file=sys.stderr)
        return
    if added:
        print(f"archived {added} official verdict(s) of older runs in {verdict_archive.archive_path(settings.project)}",
              file=sys.stderr)


def disk_full_line(err: BaseException, settings: RunSettings, run_id: str) -> str | None:
    """The reason a run stopped on a full disk (what failed, how to go on: the resume command), or None."""
    if not isinstance(err, OSError) or err.errno not in FULL:
        return None
    command = run_status.resume_lines(settings.project, run_id, _shard_text(settings))[0].split(": ", 1)[1]
    return (f"the disk is full: cannot write {err.filename or 'to the disk'} ({err.strerror}); free some space, "
            f"then resume: {command}")


def _last_code(meta: RunMeta) -> Any:
    """The code of the run's last invocation that recorded one (None: a new run, or one made before)."""
    return next((i.code_version for i in reversed(meta.invocations) if i.code_version is not None), None)


def _run_figures(work: Path) -> dict[str, Any]:
    """The run's counts before this invocation (for status lines that count the whole run)."""
    last = run_store.load_results(work, include_shards=False)
    judged = [r for r in last.values() if r.judged]
    return {"judged": len(judged), "errors": len(last) - len(judged),
            "correct": sum(1 for r in judged if r.judgment is not None and r.judgment.label),
            "spent_usd": prices.spend(run_store.iter_rows(work, include_shards=False)).total_usd,
            "error_ids": {q for q, r in last.items() if not r.judged}}


def _shard_text(settings: RunSettings) -> str | None:
    return f"{settings.shard[0]}/{settings.shard[1]}" if settings.shard else None


def resume_hint(settings: RunSettings, run_id: str, *, note: str = "", verb: str = "resume with") -> str:
    """The shell command and the slash command that continue the run (its settings and items come from its
    run-meta and manifest), saying how many of the run's items it finishes."""
    root = run_store.run_dir_for(Path(settings.runs_dir), run_id)
    shard = _shard_text(settings)
    return "\n".join(run_status.resume_lines(settings.project, run_id, shard, note=note, verb=verb,
                                              counts=run_status.pending_of(root, shard)))


def say_how_to_finish(settings: RunSettings, root: Path) -> None:
    """A run cut by ``--max`` (or maxEvals) completed this invocation only: print the command that finishes it."""
    meta = run_store.read_meta(root) if settings.shard is None else None
    pending = int(((meta.counts if meta else None) or {}).get("pending") or 0)
    if meta is not None and settings.target == HYPOTHESES_TARGET:  # no answer in the file: final, not pending
        gaps = sum(1 for r in run_store.load_results(root).values()
                   if r.error is not None and r.error.kind == MISSING_HYPOTHESIS)
        if gaps:
            print(f"{gaps} questions have no hypothesis in {settings.target_options.get('file')}: error rows "
                  f"({MISSING_HYPOTHESIS}), wrong in the strict figures", file=sys.stderr)
        pending -= gaps
    if pending:
        print(resume_hint(settings, root.name, verb=f"{pending} items not run yet; finish with"), file=sys.stderr)


def refuse_a_live_worker(settings: RunSettings, run_id: str | None) -> None:
    if not run_id:
        return
    root = run_store.run_dir_for(Path(settings.runs_dir), run_store.validate_run_id(run_id))
    worker = background.live_worker(root) or background.live_worker(run_store.shard_dir(root, settings.shard))
    if worker is not None:
        raise UserError(f"run {run_id} is already running (pid {worker['pid']}) in the background",
                        fix=f"wait for it: run_status.py --run-id {run_id} --wait 100")


def prepare_background(settings: RunSettings, run_id: str | None, scanned: Any = None,
                       loop_check: state.LoopCheck | None = None) -> tuple[str, Path]:
    """Everything a ``--background`` worker would refuse, checked here where the user sees it; then the run's (or
    shard's) directory, where the worker keeps its log and worker.json. Returns (run id, that directory).
    ``scanned``, ``loop_check``: as for ``execute``."""
    run_id, root, work, scanned = _locate(settings, run_id, scanned)
    state.check_run(settings, run_id, root, work, scanned, loop_check)
    if scanned is not None:  # the worker reads it back instead of scanning the dataset again
        dataset_scans.store(settings.cache_dir, settings.dataset_path, (scanned[0].to_dict(), scanned[1]))
    meta = run_store.peek_meta(work)  # unreadable: the worker's own checks will say why
    writer = run_status.writer_pid(root) if meta is not None and meta.get("status") == "running" else None
    if writer is not None:
        raise UserError(f"run {root} is being written by pid {writer}; wait for it or stop it")
    if settings.cache_enabled:  # the worker opens it; a broken cache is the caller's one-line error
        CallCache(Path(settings.cache_dir), read=settings.cache_read)
    fileio.make_dirs(work)  # a shard's worker, log and worker.json live in its own directory
    return run_id, work

