"""Run LongMemEval: generate -> judge -> append -> mark completed, concurrently, resumably, with a call cache.

Usage:
    python scripts/run_benchmark.py --variant _oracle --max 20
    python scripts/run_benchmark.py --run-id <id>                 # resume: completed items are skipped
    python scripts/run_benchmark.py --offline                     # no network, no keys (not comparable)
    python scripts/run_benchmark.py --dry-run                     # prompts, tokens, cost, time and keys; no model call
    python scripts/run_benchmark.py --dry-run --json              # the same estimate as one JSON record on stdout
    python scripts/run_benchmark.py --background --yes            # detached; then run_status.py --run-id <id> --wait 100
    python scripts/run_benchmark.py --max-cost 20                 # pause (exit 6) before passing $20
    python scripts/run_benchmark.py --hypotheses hyps.jsonl       # judge a file of {question_id, hypothesis} lines
    python scripts/run_benchmark.py --hypotheses hyps.jsonl --successor openai:o3-mini   # after the official
                                   # judge is gone: archived verdicts stay official, the successor judges the rest
    python scripts/run_benchmark.py --batch judge                 # the judge through the Batch API: half price

The exit statuses are ``lme/run/exit_codes.py``'s (``--help`` lists them). The run itself is ``lme/run/driver.py``'s
(one writer per run directory, a lock; an item that fails after retries gets an error row, never marked completed).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from concurrent.futures import ThreadPoolExecutor
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any, Sequence

from lme.core import cli_parser
from lme.run import background
from lme.core import config
from lme.run import cost_gate
from lme.run import dry_run
from lme.judge import official
from lme.loop import rules
from lme.run import preflight
from lme.run import meta_recovery
from lme.models import provider_probe
from lme.models import provider_routes
from lme.models import recent_probes
from lme.run import judge_route
from lme.run import driver
from lme.run import state
from lme.run import settings as run_settings
from lme.run import status
from lme.run import unattended_gate
from lme.targets import api_check
from lme.core import unattended
from lme.store import run_store
from lme.core.clock import utc_now
from lme.core.errors import UserError
from lme.run import exit_codes
from lme.run.exit_codes import EXIT_NEEDS_CONFIRMATION
from lme.run.outcome import STATUS_BY_EXIT
from lme.run.settings import RunSettings


def _write_scorecard(settings: RunSettings, run_id: str, progress_mode: str) -> None:
    """The scorecard's files and its Markdown on stdout (on stderr with ``--progress json``: stdout is records)."""
    from lme.report import outputs  # here: scoring and the pages are needed once, after the run

    if progress_mode == "json":
        with redirect_stdout(sys.stderr):
            outputs.score_project_run(Path(settings.project), run_id)
    else:
        outputs.score_project_run(Path(settings.project), run_id)


def _refuse_misuse(args: argparse.Namespace, settings: RunSettings) -> None:
    """Arguments that contradict each other or the run they name: ``--json`` without ``--dry-run``; on a resume, a
    ``--max`` naming another count (a run's items are chosen once, when it starts: a resume finishes them)."""
    if args.json and not args.dry_run:
        raise UserError("--json is the dry run's machine-readable form; a run prints its scorecard",
                        fix="add --dry-run, or use --progress json for a run's records")
    state.check_resume_max(settings, args.run_id)


def build_parser() -> argparse.ArgumentParser:
    parser = cli_parser.ArgumentParser(
        prog="run_benchmark.py",
        description="Run (or resume) a LongMemEval benchmark: generate, judge, checkpoint, score.",
        epilog="Exit status: 0 completed, 1 failed (resumable), 2 user error, 3 billing, 5 estimate above "
               "confirmCostUsd (add --yes after asking), 6 paused at --max-cost, 7 a batch was cancelled "
               "(resumable), 8 the target's code changed during the run (resumable), 130 interrupted. "
               "--background: 0 once started; then run_status.py --run-id ID --wait 100.",
    )
    run_settings.add_arguments(parser)
    parser.add_argument("--json", action="store_true",
                        help="with --dry-run: print only the estimate as JSON (its fields: references/SPEC.md, "
                             "\"Cost gate and cap\"); without it the dry run prints its summary for people")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    if not args.loop:
        return _run(args, argv)
    from lme.loop import judge_day  # a loop run's only: its judge across the official judge's retirement

    try:
        return _run(args, argv)
    except (judge_day.JudgeRetired, judge_route.OfficialJudgeGone) as stop:
        return _loop_halt(args, getattr(stop, "how", "found by a loop run's start-up check"))


def _loop_halt(args: argparse.Namespace, how: str) -> int:
    """The official judge retired under a loop run: the loop's halt (``judge_day.halt``: BLOCKED and the user's
    choices, or the successor's baseline to take) printed; exit 2."""
    from lme.loop import judge_day

    for line in judge_day.halt(Path(args.project).resolve(), args.run_id, how, log=not args.dry_run):
        print(line, flush=True)
    return judge_day.EXIT_HALTED


def _run(args: argparse.Namespace, argv: list[str]) -> int:
    project = Path(args.project).resolve()
    cfg = config.load_config(project)
    settings = run_settings.resolve(cfg, args, project)
    _refuse_misuse(args, settings)
    named = bool(args.offline or (args.target_model and args.judge_model))  # not the config's alone
    lost = meta_recovery.check(settings, args.run_id, named=named)  # no readable run-meta: its rows' settings
    if lost and not args.worker:
        print(lost, file=sys.stderr)
    unattended_gate.check_worker(args)
    loop_session = unattended.loop_session(loop_flag=args.loop)
    if loop_session is not None:  # an agent with standing permissions: code only from the config
        unattended_gate.check_code(settings, cfg, project, loop_session, given_successor=args.successor)
    if args.loop:  # the official judge, or after the day the user's calibrated successor throughout
        from lme.loop import judge_day

        settings = judge_day.for_loop_run(settings, args.successor)
    if args.dry_run:
        for warning in api_check.check_target(settings.target, project):  # an outdated copy: refused, one line
            print(warning, file=sys.stderr)
        return dry_run.run(settings, run_id=args.run_id, as_json=args.json)
    preflight.check_inputs(settings)  # an unknown target, bad options or no judge prompt fails here, not per item
    if not args.worker:
        driver.refuse_a_live_worker(settings, args.run_id)
    if args.max_cost is not None:
        cost_gate.check_cap_is_enforceable(settings, args.max_cost)
    # validate -> probe -> cost gate: a model that cannot be called is refused before its cost is put to the user
    if not args.worker:
        provider_probe.refuse_locally(settings)  # keys, base URLs, providers: no request needed
    # the probe (a bad key or model is one line; the official judge gone, 404 / 410: the verdict archive, then the
    # successor, if one is named), then the cost gate; probes that passed are remembered once the run has started
    probe = not args.worker and not dry_run.run_is_finished(settings, args.run_id)  # the worker's parent probed
    gate = cost_gate.confirm_threshold(cfg) if not (args.yes or args.worker) else None
    settings, passed, block, scanned = _probe_and_gate(settings, args.run_id, probe, gate)
    # scanned: a new run's dataset scan, made once: by the cost gate when it runs, else by the driver
    if block is not None:  # before the user approves: your own system on one item (preflight.smoke_line)
        smoke = preflight.smoke_line(settings)
        print(block if smoke is None else f"{smoke}\n{block}", flush=True)
        return EXIT_NEEDS_CONFIRMATION
    if args.yes and not args.worker and loop_session is not None:  # the agent's own --yes: the user's budget
        unattended_gate.check_yes(settings, cfg, args.run_id, cost_gate.confirm_threshold(cfg), loop_session)
    if args.background:
        return _start_in_background(settings, args, argv, scanned, passed)
    progress = "status" if args.worker and args.progress in ("auto", "bar") else args.progress  # a log has no bar
    approved = cost_gate.approval_to_record(settings, args.run_id) if args.yes else None  # a resume needs no second yes
    options = driver.RunOptions(progress_mode=progress, max_cost=args.max_cost, approved_usd=approved,
                                    loop_check=rules.check_settings,
                                    code_paths=tuple(rules.fix_paths(project)))
    code, root = driver.execute(settings, args.run_id, options, scanned=scanned,
                                on_start=lambda: recent_probes.remember(settings.cache_dir, passed))
    return _after_run(settings, args, code, root)


def _after_run(settings: RunSettings, args: argparse.Namespace, code: int, root: Path) -> int:
    """The scorecard, then what the run's end means for the user (the loop's halt when its judge retired)."""
    run_id = root.name
    if not args.no_scorecard and settings.shard is None:
        _write_scorecard(settings, run_id, args.progress)
    if code == exit_codes.EXIT_JUDGE_GONE:  # the official judge gone, or a judge answering as another model
        meta = run_store.read_meta(run_store.shard_dir(root, settings.shard))
        if args.loop and meta.error == official.CONTINUITY_HINT:
            return _loop_halt(args, f"found mid-run, in run {run_id}")
        raise UserError(f"run {run_id} stopped: {meta.error or official.CONTINUITY_HINT}; the items it could "
                        f"not judge stay pending (resume with --run-id {run_id})")
    print(f"run {run_id}: {STATUS_BY_EXIT[code]} ({root})", file=sys.stderr)
    if code == exit_codes.EXIT_CODE_CHANGED:  # which file, and that the rest waits for a resume
        meta = run_store.read_meta(run_store.shard_dir(root, settings.shard))
        print(f"run {run_id} {meta.error}", file=sys.stderr)
    if code == exit_codes.EXIT_COST_CAP:
        print(driver.resume_hint(settings, run_id, note=" --max-cost <a higher USD>"), file=sys.stderr)
    elif code != exit_codes.EXIT_COMPLETED:
        print(driver.resume_hint(settings, run_id), file=sys.stderr)
    else:
        driver.say_how_to_finish(settings, root)
    return code


def _probe_and_gate(settings: RunSettings, run_id: str | None, probe: bool, threshold: float | None
                    ) -> tuple[RunSettings, list[recent_probes.Passed], str | None, Any]:
    """``(settings, passed probes, the gate's block or None, the new run's dataset scan or None)``: the probe
    (``judge_route.prepare``, when ``probe``) and the cost gate (``cost_gate.check``, when ``threshold`` is given).

    Both at once once the SDKs are imported (CPU work, like the estimate): the probe's round trip then overlaps the
    estimate, so the first model call comes sooner. The probe is still acted on first: its refusal wins over
    anything the estimate raised, and the gate is decided on the settings the probe returned (estimated again when
    it changed them: the official judge gone)."""
    if not probe or threshold is None:
        passed: list[recent_probes.Passed] = []
        if probe:
            settings, passed = judge_route.prepare(settings, run_id)
        block, scanned = cost_gate.check(settings, run_id, threshold) if threshold is not None else (None, None)
        return settings, passed, block, scanned
    provider_routes.import_sdks(use.provider for use in provider_probe.uses(settings))
    failed: Exception | None = None
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="probe-route") as pool:
        routed = pool.submit(judge_route.prepare, settings, run_id)
        try:
            block, scanned = cost_gate.check(settings, run_id, threshold)
        except Exception as exc:  # a dataset the scan refuses: said after the probe, as when they ran in turn
            failed = exc
        probed, passed = routed.result()
    if probed is not settings:
        block, scanned = cost_gate.check(probed, run_id, threshold)
    elif failed is not None:
        raise failed
    return probed, passed, block, scanned


def _worker_argv(argv: Sequence[str], run_id: str, given_run_id: bool) -> list[str]:
    """The same command, minus ``--background``, for the detached worker (which skips the gate: done here)."""
    keep = [a for a in argv if not (a.startswith("--b") and "--background".startswith(a))]
    if not given_run_id:
        keep += ["--run-id", run_id]
    return [sys.executable, str((Path(__file__).resolve().parents[2] / "run_benchmark.py")), *keep, "--worker"]


def _start_in_background(settings: RunSettings, args: argparse.Namespace, argv: Sequence[str], scanned: Any,
                         passed: list[recent_probes.Passed]) -> int:
    run_id, work = driver.prepare_background(settings, args.run_id, scanned, rules.check_settings)
    recent_probes.remember(settings.cache_dir, passed)
    shown = " ".join(shlex.quote(a) for a in ["run_benchmark.py", *argv])
    os.environ.update(unattended_gate.worker_env(run_id))  # the worker's proof that --background started it
    info = background.start(work, _worker_argv(argv, run_id, bool(args.run_id)), run_id=run_id, cwd=Path.cwd(),
                            log_header=f"=== {utc_now()} started in the background: {shown}")
    log = Path(info["log"])
    try:
        log = log.relative_to(Path.cwd())
    except ValueError:
        pass
    print(f"run {run_id} started in the background (pid {info['pid']}); log: {log}")
    print(status.wait_line(run_id))
    return 0
