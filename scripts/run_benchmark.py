"""Run LongMemEval: generate -> judge -> append -> mark completed, concurrently, resumably, with a call cache.

Usage:
    python scripts/run_benchmark.py --variant _oracle --max 20
    python scripts/run_benchmark.py --run-id <id>                 # resume: completed items are skipped
    python scripts/run_benchmark.py --offline                     # no network, no keys (not comparable)
    python scripts/run_benchmark.py --dry-run                     # prompts, tokens, cost and time; no model call
    python scripts/run_benchmark.py --background --yes            # detached; then run_status.py --run-id <id> --wait 100
    python scripts/run_benchmark.py --max-cost 20                 # pause (exit 6) before passing $20
    python scripts/run_benchmark.py --hypotheses hyps.jsonl       # judge a file of {question_id, hypothesis} lines

Exit status: 0 completed, 1 failed (item errors; resumable), 2 user error (or the official judge answered
not_found: the line names the verdict archive, the Azure route and judge_agreement.py), 3 blocked on billing,
5 the estimate is above confirmCostUsd (nothing was started: ask, then add --yes), 6 paused at the --max-cost cap
(resumable with a higher cap), 130 interrupted. ``--background`` exits 0 once the worker started (its own exit
status is in its run-meta and log; run_status.py reports it).
One process writes a run directory at a time (a lock); the writer is this process's main thread, the workers only
compute rows. An item that fails after retries gets an error row and is not marked completed.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import contextlib
import os
import shlex
import signal
import sys
import threading
import time
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any, Iterator, Sequence

import checkpoint_io
import config as config_mod
import cost_gate
import dataset
import hypotheses_file
import run_settings
import run_state
from errors import UserError, run_main
from hypotheses_file import MISSING_HYPOTHESIS
from item_runner import BILLING
from records import Question
from run_settings import RunSettings

EXIT_COMPLETED, EXIT_FAILED, EXIT_BILLING, EXIT_INTERRUPTED = 0, 1, 3, 130
EXIT_JUDGE_GONE = 2
"""The official judge answered not_found (retired): one line naming the ways on, as for a user mistake."""
EXIT_NEEDS_CONFIRMATION, EXIT_COST_CAP = cost_gate.EXIT_NEEDS_CONFIRMATION, cost_gate.EXIT_COST_CAP
STATUS_BY_EXIT = {EXIT_COMPLETED: "completed", EXIT_FAILED: "failed", EXIT_BILLING: "blocked on billing",
                  EXIT_COST_CAP: "paused at the cost cap", EXIT_INTERRUPTED: "interrupted"}


# --------------------------------------------------------------------------- the run


class _Stop:
    """Set by SIGINT/SIGTERM (first: finish in-flight items; second: abandon them) or by the failure policy."""

    def __init__(self) -> None:
        self.reason: str | None = None
        self.signals = 0
        self.abandon = threading.Event()

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


class _Tally:
    """What this invocation did: counts for run-meta and the failure policy."""

    def __init__(self) -> None:
        self.evaluated = 0
        self.errors = 0
        self.errors_by_kind: dict[str, int] = {}
        self.billing_message: str | None = None

    def record(self, row: dict[str, Any]) -> None:
        self.evaluated += 1
        if row["status"] == "error":
            kind = row["error"]["kind"]
            self.errors_by_kind[kind] = self.errors_by_kind.get(kind, 0) + 1
            if kind == MISSING_HYPOTHESIS:  # the file has no answer: an error row, never a reason to stop the run
                return
            self.errors += 1
            if kind == BILLING:
                self.billing_message = row["error"]["message"]


def _drive(questions: Iterator[Question], settings: RunSettings, gateway: Any, work: Path, meta: dict[str, Any],
           tally: _Tally, stop: _Stop, progress: Any, on_abandon: Any, cap: Any = None, tick: Any = None) -> None:
    """Run items on a pool; this thread is the only writer: append the row, then mark it completed if judged.

    ``cap`` (a ``cost_gate.CostCap``) admits each item before it is started; the first refusal stops the intake
    and the items already admitted finish and are recorded.
    """
    import item_runner
    import judge_shim
    import prompt_store
    from judge_stability import StabilityRegistry

    prompts = prompt_store.PromptStore(work)
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
                requests: list = []
                fut = pool.submit(item_runner.run_item, q, settings, gateway, requests)
                requests_of[fut] = requests
                in_flight.add(fut)
            if not in_flight:
                return
            if tick is not None:
                tick()  # the live pacing figures for run_status.py
            finished, in_flight = cf.wait(in_flight, timeout=0.5, return_when=cf.FIRST_COMPLETED)
            rows = []
            for fut in finished:
                row = fut.result()
                item_prompts = requests_of.pop(fut)
                if row["status"] == "error" and row["error"]["stage"] == "judge" and judge_shim.official_judge_gone(
                        row["error"], settings.judge_provider, settings.judge_model):
                    stop.request("judge_gone")  # no row: the item stays pending for a resume with another route
                    continue
                rows.append((row, item_prompts))
            # Items that finished together are written together: prompts, then the rows that name them, then the
            # completed marks of the judged ones, one fsync per file (not three per item: the writer kept up less).
            prompts.add([request for _, item_prompts in rows for request in item_prompts])
            checkpoint_io.append_item_results(work, [row for row, _ in rows])
            checkpoint_io.mark_completed_many(work, [row["question_id"] for row, _ in rows
                                                     if row["status"] == "judged"])
            for row, _ in rows:
                tally.record(row)
                if cap is not None:
                    cap.settle(row)
                if row["status"] == "judged":
                    if not row["judgment"].get("official", False):
                        meta["judge"]["official"] = False  # e.g. a prompt that is not upstream's
                    if registry is not None:
                        registry.record(row["question_id"], row["judgment"], f"run {meta['runId']}")
                elif tally.billing_message is not None:
                    stop.request("billing")
                elif tally.errors > settings.error_threshold:
                    stop.request("errors")
                progress.update(row, gateway.stats.snapshot())
            if stop.reason not in (None, "cost_cap"):  # items queued but not started are not started now
                in_flight = {fut for fut in in_flight if not fut.cancel()}
            if stop.abandon.is_set():
                on_abandon()


def execute(settings: RunSettings, run_id: str | None, *, progress_mode: str = "auto",
            max_cost: float | None = None) -> tuple[int, Path]:
    """Run (or resume) ``run_id``; returns (exit status, run root). ``max_cost``: see ``cost_gate.CostCap``."""
    from call_cache import CallCache
    from progress import Progress
    from pacing_status import PacingFile
    from rate_pacer import Pacer
    from run_gateway import RunGateway, RunStats

    runs_dir = Path(settings.runs_dir)
    checkpoint_io.ensure_writable_dir(runs_dir)
    run_id = checkpoint_io.validate_run_id(run_id) if run_id else checkpoint_io.new_run_id()
    root = checkpoint_io.run_dir_for(runs_dir, run_id)
    work = run_state.shard_dir(root, settings.shard)
    scanned = None if root.exists() else run_state.scan_new_run(settings)
    cache = CallCache(Path(settings.cache_dir), read=settings.cache_read) if settings.cache_enabled else None
    work.mkdir(parents=True, exist_ok=True)
    t_start = time.monotonic()

    # Shards hold the root shared (they coexist); a whole-run writer holds it alone. Then the own directory.
    with checkpoint_io.RunLock(root, shared=settings.shard is not None), contextlib.ExitStack() as own:
        if settings.shard is not None:
            own.enter_context(checkpoint_io.RunLock(work))
        checkpoint_io.reconcile(work)
        meta, manifest = run_state.open_run(settings, run_id, root, work, scanned)
        if scanned is not None:  # the run exists now: the next new run on this file need not scan it again
            import dataset_scans

            dataset_scans.store(settings.cache_dir, settings.dataset_path, scanned)
        done = checkpoint_io.load_completed(root)  # root and every shard: never re-run what another shard did
        planned = [it["question_id"] for it in manifest["items"] if run_state.in_shard(it["question_id"], settings.shard)]
        pending_all = [qid for qid in planned if qid not in done]
        pending = pending_all[: settings.max_evals]

        tally = _Tally()
        limiter = Pacer(settings.concurrency, limits=settings.rate_limits)
        gateway = RunGateway(settings=_provider_settings(settings), cache=cache, limiter=limiter, stats=RunStats())
        cap = None if max_cost is None else cost_gate.CostCap(max_cost, settings, work)
        before = _run_figures(work)
        invocation: dict[str, Any] = {"started_at": run_state.utcnow(), "pending_before": len(pending_all),
                                      "planned_now": len(pending)}
        if max_cost is not None:
            invocation["max_cost_usd"] = max_cost
        meta.update(status="running", finished_at=None, error=None)
        meta.setdefault("invocations", []).append(invocation)
        checkpoint_io.write_atomic_json(work / "run-meta.json", meta)
        if settings.shard is not None:
            run_state.update_root_meta(root, manifest)

        def finish(status: str, error: str | None, exit_status: int) -> None:
            elapsed = time.monotonic() - t_start
            completed_now = checkpoint_io.load_completed(work)
            pacing = limiter.pacing()
            meta.update(
                status=status,
                error=error,
                finished_at=run_state.utcnow(),
                duration_seconds=round(float(meta.get("duration_seconds") or 0.0) + elapsed, 3),
                counts={
                    "n_total": manifest["n_total"],
                    "planned": len(planned),
                    "completed": sum(1 for q in planned if q in completed_now),
                    "pending": sum(1 for q in planned if q not in completed_now),
                },
                limiter=limiter.summary(),
                pacing=pacing,
                exit_status=exit_status,
            )
            pacing_file.write()
            invocation.update(
                finished_at=meta["finished_at"],
                status=status,
                exit_status=exit_status,
                duration_seconds=round(elapsed, 3),
                evaluated=tally.evaluated,
                errors=tally.errors,
                errors_by_kind=dict(tally.errors_by_kind),
                **gateway.stats.snapshot(),
                cache=None if cache is None else {"read": cache.read, **cache.stats()},
                pacing=pacing,
            )
            if cap is not None:
                invocation["spent_usd"] = round(cap.spent, 6)
            meta["retries"] = sum(int(inv.get("retries", 0)) for inv in meta["invocations"])
            checkpoint_io.write_atomic_json(work / "run-meta.json", meta)

        def abandon() -> None:
            finish("interrupted", "interrupted; items in flight were abandoned and will re-run", EXIT_INTERRUPTED)
            progress.close("interrupted")
            print(_resume_hint(settings, run_id), file=sys.stderr, flush=True)
            os._exit(EXIT_INTERRUPTED)  # in-flight calls cannot be cancelled; their rows were never written

        progress = Progress(progress_mode, len(pending), already_done=len(done), run_id=run_id,
                            run_total=len(planned), before=before, pacing=limiter.pacing)
        pacing_file = PacingFile(work, limiter.pacing)
        stop = _Stop()
        previous_handlers = _install_signal_handlers(stop)
        ended = None
        try:
            _drive(_pending_questions(settings, pending), settings, gateway, work, meta, tally, stop, progress, abandon,
                   cap, pacing_file.tick)
        except BaseException as err:  # never leave a run saying "running": record how it ended, then re-raise
            interrupted = isinstance(err, KeyboardInterrupt)
            ended = "interrupted" if interrupted else "failed"
            finish(ended, None if interrupted else f"{type(err).__name__}: {err}",
                   EXIT_INTERRUPTED if interrupted else EXIT_FAILED)
            raise
        finally:
            for sig, handler in previous_handlers.items():
                signal.signal(sig, handler)
            if ended is not None:
                progress.close(ended)

        if stop.reason == "judge_gone":
            import judge_shim

            code, status, error = EXIT_JUDGE_GONE, "failed", judge_shim.CONTINUITY_HINT
        elif stop.reason == "billing":
            code, status, error = EXIT_BILLING, "failed", f"blocked on API billing: {tally.billing_message}"
        elif stop.reason == "interrupted":
            code, status, error = EXIT_INTERRUPTED, "interrupted", None
        elif tally.errors > settings.error_threshold:
            summary = ", ".join(f"{k}: {v}" for k, v in sorted(tally.errors_by_kind.items()))
            code, status = EXIT_FAILED, "failed"
            error = f"{tally.errors} item error(s) after retries ({summary}); resume to retry them"
        elif stop.reason == "cost_cap":
            code, status, error = EXIT_COST_CAP, "paused", cap.message()
        else:
            code, status, error = EXIT_COMPLETED, "completed", None
        finish(status, error, code)
        progress.close("blocked" if code == EXIT_BILLING else status)
        if settings.shard is not None:
            run_state.update_root_meta(root, manifest)
    return code, root


def _run_figures(work: Path) -> dict[str, Any]:
    """The run's counts before this invocation (for status lines that count the whole run)."""
    last = checkpoint_io.load_results(work, include_shards=False)
    judged = [r for r in last.values() if r.get("status") == "judged"]
    spent, unknown = cost_gate.spent(checkpoint_io.iter_result_rows(work, include_shards=False))
    return {"judged": len(judged), "errors": len(last) - len(judged),
            "correct": sum(1 for r in judged if (r.get("judgment") or {}).get("label")),
            "spent_usd": None if unknown else spent,
            "error_ids": {q for q, r in last.items() if r.get("status") != "judged"}}


def _shard_text(settings: RunSettings) -> str | None:
    return f"{settings.shard[0]}/{settings.shard[1]}" if settings.shard else None


def _resume_hint(settings: RunSettings, run_id: str, *, note: str = "", verb: str = "resume with") -> str:
    """The shell command and the slash command that continue the run (its settings come from its run-meta)."""
    import run_status

    return "\n".join(run_status.resume_lines(settings.project, run_id, _shard_text(settings), note=note, verb=verb))


def _provider_settings(settings: RunSettings) -> Any:
    import providers

    return providers.ProviderSettings(
        timeout_s=settings.timeout_s, max_attempts=settings.max_attempts, base_urls=dict(settings.base_urls),
        azure=dict(settings.azure),
    )


def _write_scorecard(settings: RunSettings, run_id: str, progress_mode: str) -> None:
    import scorecard

    args = ["--run-id", run_id, "--project", settings.project]
    if progress_mode == "json":
        with redirect_stdout(sys.stderr):
            scorecard.main(args)
    else:
        scorecard.main(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="run_benchmark.py",
        description="Run (or resume) a LongMemEval benchmark: generate, judge, checkpoint, score.",
        epilog="Exit status: 0 completed, 1 failed (resumable), 2 user error, 3 billing, 5 estimate above "
               "confirmCostUsd (add --yes after asking), 6 paused at --max-cost, 130 interrupted. "
               "--background: 0 once started; then run_status.py --run-id ID --wait 100.",
    )
    run_settings.add_arguments(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    project = Path(args.project).resolve()
    cfg = config_mod.load_config(project)
    settings = run_settings.resolve(cfg, args, project)
    if args.dry_run:
        import dry_run

        return dry_run.run(settings, run_id=args.run_id)
    import preflight

    preflight.check_inputs(settings)  # an unknown target, bad options or no judge prompt fails here, not per item
    if not args.worker:
        _refuse_a_live_worker(settings, args.run_id)
    if args.max_cost is not None:
        cost_gate.check_cap_is_enforceable(settings, args.max_cost)
    if not (args.yes or args.worker):
        block = cost_gate.refusal(settings, args.run_id, cost_gate.confirm_threshold(cfg))
        if block is not None:
            print(block, flush=True)
            return EXIT_NEEDS_CONFIRMATION
    if args.background:
        return _start_in_background(settings, args, argv)
    progress = "status" if args.worker and args.progress in ("auto", "bar") else args.progress  # a log has no bar
    code, root = execute(settings, args.run_id, progress_mode=progress, max_cost=args.max_cost)
    run_id = root.name
    if code == EXIT_JUDGE_GONE:
        import judge_shim

        raise UserError(f"run {run_id} stopped: {judge_shim.CONTINUITY_HINT}; the items it could not judge stay "
                        f"pending (resume with --run-id {run_id})")
    if not args.no_scorecard and settings.shard is None:
        _write_scorecard(settings, run_id, args.progress)
    print(f"run {run_id}: {STATUS_BY_EXIT[code]} ({root})", file=sys.stderr)
    if code == EXIT_COST_CAP:
        print(_resume_hint(settings, run_id, note=" --max-cost <a higher USD>"), file=sys.stderr)
    elif code != EXIT_COMPLETED:
        print(_resume_hint(settings, run_id), file=sys.stderr)
    else:
        _say_how_to_finish(settings, root)
    return code


def _say_how_to_finish(settings: RunSettings, root: Path) -> None:
    """A run cut by ``--max`` (or maxEvals) completed this invocation only: print the command that finishes it."""
    meta = checkpoint_io.read_json(root / "run-meta.json") if settings.shard is None else None
    pending = int(((meta or {}).get("counts") or {}).get("pending") or 0)
    if meta is not None and settings.target == hypotheses_file.TARGET:  # no answer in the file: final, not pending
        gaps = sum(1 for r in checkpoint_io.load_results(root).values()
                   if (r.get("error") or {}).get("kind") == MISSING_HYPOTHESIS)
        if gaps:
            print(f"{gaps} questions have no hypothesis in {settings.target_options.get('file')}: error rows "
                  f"({MISSING_HYPOTHESIS}), wrong in the strict figures", file=sys.stderr)
        pending -= gaps
    if pending:
        print(_resume_hint(settings, root.name, verb=f"{pending} items not run yet; finish with"), file=sys.stderr)


def _refuse_a_live_worker(settings: RunSettings, run_id: str | None) -> None:
    import background

    if not run_id:
        return
    root = checkpoint_io.run_dir_for(Path(settings.runs_dir), checkpoint_io.validate_run_id(run_id))
    worker = background.live_worker(root) or background.live_worker(run_state.shard_dir(root, settings.shard))
    if worker is not None:
        raise UserError(f"run {run_id} is already running (pid {worker['pid']}) in the background",
                        fix=f"wait for it: run_status.py --run-id {run_id} --wait 100")


def _worker_argv(argv: Sequence[str], run_id: str, given_run_id: bool) -> list[str]:
    """The same command, minus ``--background``, for the detached worker (which skips the gate: done here)."""
    keep = [a for a in argv if not (a.startswith("--b") and "--background".startswith(a))]
    if not given_run_id:
        keep += ["--run-id", run_id]
    return [sys.executable, str(Path(__file__).resolve()), *keep, "--worker"]


def _start_in_background(settings: RunSettings, args: argparse.Namespace, argv: Sequence[str]) -> int:
    """Check what the worker would refuse, create the run directory, start the worker, say how to follow it."""
    import background
    import run_status

    runs_dir = Path(settings.runs_dir)
    checkpoint_io.ensure_writable_dir(runs_dir)
    run_id = checkpoint_io.validate_run_id(args.run_id) if args.run_id else checkpoint_io.new_run_id()
    root = checkpoint_io.run_dir_for(runs_dir, run_id)
    work = run_state.shard_dir(root, settings.shard)
    scanned = None if root.exists() else run_state.scan_new_run(settings)
    run_state.check_run(settings, run_id, root, work, scanned)
    if scanned is not None:  # the worker reads it back instead of scanning the dataset again
        import dataset_scans

        dataset_scans.store(settings.cache_dir, settings.dataset_path, scanned)
    writer = run_status.writer_pid(root) if _meta_status(work) == "running" else None
    if writer is not None:
        raise UserError(f"run {root} is being written by pid {writer}; wait for it or stop it")
    if settings.cache_enabled:  # the worker opens it; a broken cache is the caller's one-line error
        from call_cache import CallCache

        CallCache(Path(settings.cache_dir), read=settings.cache_read)
    work.mkdir(parents=True, exist_ok=True)  # a shard's worker, log and worker.json live in its own directory
    shown = " ".join(shlex.quote(a) for a in ["run_benchmark.py", *argv])
    info = background.start(work, _worker_argv(argv, run_id, bool(args.run_id)), run_id=run_id, cwd=Path.cwd(),
                            log_header=f"=== {checkpoint_io.utc_now()} started in the background: {shown}")
    log = Path(info["log"])
    try:
        log = log.relative_to(Path.cwd())
    except ValueError:
        pass
    print(f"run {run_id} started in the background (pid {info['pid']}); log: {log}")
    print(run_status.wait_line(run_id))
    return 0


def _meta_status(work: Path) -> str | None:
    path = work / "run-meta.json"
    try:
        return str(checkpoint_io.read_json(path).get("status")) if path.is_file() else None
    except Exception:  # noqa: BLE001 - unreadable: the worker's own checks will say why
        return None


if __name__ == "__main__":
    sys.exit(run_main(main))
