"""Run LongMemEval: generate -> judge -> append -> mark completed, concurrently, resumably, with a call cache.

Usage:
    python scripts/run_benchmark.py --variant _oracle --max 20
    python scripts/run_benchmark.py --run-id <id>                 # resume: completed items are skipped
    python scripts/run_benchmark.py --offline                     # no network, no keys (not comparable)
    python scripts/run_benchmark.py --dry-run                     # prompts, tokens, cost and time; no model call

Exit status: 0 completed, 1 failed (item errors; resumable), 2 user error (or the official judge answered
not_found: the line names the verdict archive, the Azure route and judge_agreement.py), 3 blocked on billing,
130 interrupted.
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
import dataset
import run_settings
import run_state
from errors import UserError, run_main
from item_runner import BILLING
from records import Question
from run_settings import RunSettings

EXIT_COMPLETED, EXIT_FAILED, EXIT_BILLING, EXIT_INTERRUPTED = 0, 1, 3, 130
EXIT_JUDGE_GONE = 2
"""The official judge answered not_found (retired): one line naming the ways on, as for a user mistake."""


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
            self.errors += 1
            self.errors_by_kind[kind] = self.errors_by_kind.get(kind, 0) + 1
            if kind == BILLING:
                self.billing_message = row["error"]["message"]


def _drive(questions: Iterator[Question], settings: RunSettings, gateway: Any, work: Path, meta: dict[str, Any],
           tally: _Tally, stop: _Stop, progress: Any, on_abandon: Any) -> None:
    """Run items on a pool; this thread is the only writer: append the row, then mark it completed if judged."""
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
                requests: list = []
                fut = pool.submit(item_runner.run_item, q, settings, gateway, requests)
                requests_of[fut] = requests
                in_flight.add(fut)
            if not in_flight:
                return
            finished, in_flight = cf.wait(in_flight, timeout=0.5, return_when=cf.FIRST_COMPLETED)
            for fut in finished:
                row = fut.result()
                item_prompts = requests_of.pop(fut)
                if row["status"] == "error" and row["error"]["stage"] == "judge" and judge_shim.official_judge_gone(
                        row["error"], settings.judge_provider, settings.judge_model):
                    stop.request("judge_gone")  # no row: the item stays pending for a resume with another route
                    continue
                prompts.add(item_prompts)  # the prompts before the row that names them
                checkpoint_io.append_item_result(work, row)
                tally.record(row)
                if row["status"] == "judged":
                    checkpoint_io.mark_completed(work, row["question_id"])
                    if not row["judgment"].get("official", False):
                        meta["judge"]["official"] = False  # e.g. a prompt that is not upstream's
                    if registry is not None:
                        registry.record(row["question_id"], row["judgment"], f"run {meta['runId']}")
                elif tally.billing_message is not None:
                    stop.request("billing")
                elif tally.errors > settings.error_threshold:
                    stop.request("errors")
                progress.update(row, gateway.stats.snapshot())
            if stop.reason is not None:  # items queued but not started are not started now
                in_flight = {fut for fut in in_flight if not fut.cancel()}
            if stop.abandon.is_set():
                on_abandon()


def execute(settings: RunSettings, run_id: str | None, *, progress_mode: str = "auto") -> tuple[int, Path]:
    """Run (or resume) ``run_id``; returns (exit status, run root)."""
    from call_cache import CallCache
    from progress import Progress
    from rate_limiter import AdaptiveLimiter
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
        done = checkpoint_io.load_completed(root)  # root and every shard: never re-run what another shard did
        planned = [it["question_id"] for it in manifest["items"] if run_state.in_shard(it["question_id"], settings.shard)]
        pending_all = [qid for qid in planned if qid not in done]
        pending = pending_all[: settings.max_evals]

        tally = _Tally()
        limiter = AdaptiveLimiter(settings.concurrency)
        gateway = RunGateway(settings=_provider_settings(settings), cache=cache, limiter=limiter, stats=RunStats())
        invocation: dict[str, Any] = {"started_at": run_state.utcnow(), "pending_before": len(pending_all)}
        meta.update(status="running", finished_at=None, error=None)
        meta.setdefault("invocations", []).append(invocation)
        checkpoint_io.write_atomic_json(work / "run-meta.json", meta)
        if settings.shard is not None:
            run_state.update_root_meta(root, manifest)

        def finish(status: str, error: str | None) -> None:
            elapsed = time.monotonic() - t_start
            completed_now = checkpoint_io.load_completed(work)
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
            )
            invocation.update(
                finished_at=meta["finished_at"],
                status=status,
                duration_seconds=round(elapsed, 3),
                evaluated=tally.evaluated,
                errors=tally.errors,
                errors_by_kind=dict(tally.errors_by_kind),
                **gateway.stats.snapshot(),
                cache=None if cache is None else {"read": cache.read, **cache.stats()},
            )
            meta["retries"] = sum(int(inv.get("retries", 0)) for inv in meta["invocations"])
            checkpoint_io.write_atomic_json(work / "run-meta.json", meta)

        def abandon() -> None:
            finish("interrupted", "interrupted; items in flight were abandoned and will re-run")
            progress.close()
            print(_resume_hint(settings, run_id), file=sys.stderr, flush=True)
            os._exit(EXIT_INTERRUPTED)  # in-flight calls cannot be cancelled; their rows were never written

        progress = Progress(progress_mode, len(pending), already_done=len(done))
        stop = _Stop()
        previous_handlers = _install_signal_handlers(stop)
        try:
            _drive(_pending_questions(settings, pending), settings, gateway, work, meta, tally, stop, progress, abandon)
        except BaseException as err:  # never leave a run saying "running": record how it ended, then re-raise
            interrupted = isinstance(err, KeyboardInterrupt)
            finish("interrupted" if interrupted else "failed", None if interrupted else f"{type(err).__name__}: {err}")
            raise
        finally:
            progress.close()
            for sig, handler in previous_handlers.items():
                signal.signal(sig, handler)

        if stop.reason == "judge_gone":
            import judge_shim

            finish("failed", judge_shim.CONTINUITY_HINT)
            code = EXIT_JUDGE_GONE
        elif stop.reason == "billing":
            finish("failed", f"blocked on API billing: {tally.billing_message}")
            code = EXIT_BILLING
        elif stop.reason == "interrupted":
            finish("interrupted", None)
            code = EXIT_INTERRUPTED
        elif tally.errors > settings.error_threshold:
            summary = ", ".join(f"{k}: {v}" for k, v in sorted(tally.errors_by_kind.items()))
            finish("failed", f"{tally.errors} item error(s) after retries ({summary}); resume to retry them")
            code = EXIT_FAILED
        else:
            finish("completed", None)
            code = EXIT_COMPLETED
        if settings.shard is not None:
            run_state.update_root_meta(root, manifest)
    return code, root


def _resume_hint(settings: RunSettings, run_id: str) -> str:
    """A resume needs only the run id (and its shard): the run's settings are read back from its run-meta."""
    shard = f" --shard {settings.shard[0]}/{settings.shard[1]}" if settings.shard else ""
    command = [sys.executable, str(Path(__file__).resolve()), "--project", settings.project, "--run-id", run_id]
    return "resume with: " + " ".join(shlex.quote(c) for c in command) + shard


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
        epilog="Exit status: 0 completed, 1 failed (resumable), 2 user error, 3 billing, 130 interrupted.",
    )
    run_settings.add_arguments(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    project = Path(args.project).resolve()
    cfg = config_mod.load_config(project)
    settings = run_settings.resolve(cfg, args, project)
    if args.dry_run:
        import dry_run

        return dry_run.run(settings, run_id=args.run_id)
    import preflight

    preflight.check_inputs(settings)  # an unknown target, bad options or no judge prompt fails here, not per item
    code, root = execute(settings, args.run_id, progress_mode=args.progress)
    run_id = root.name
    if code == EXIT_JUDGE_GONE:
        import judge_shim

        raise UserError(f"run {run_id} stopped: {judge_shim.CONTINUITY_HINT}; the items it could not judge stay "
                        f"pending (resume with --run-id {run_id})")
    if not args.no_scorecard and settings.shard is None:
        _write_scorecard(settings, run_id, args.progress)
    status = {0: "completed", 1: "failed", 3: "blocked on billing", 130: "interrupted"}[code]
    print(f"run {run_id}: {status} ({root})", file=sys.stderr)
    if code != EXIT_COMPLETED:
        print(_resume_hint(settings, run_id), file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(run_main(main))
