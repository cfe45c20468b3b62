"""The effective settings of one run: config.json defaults, overridden by command-line arguments.

Resolved once, validated once, and written to run-meta.json so every run says exactly how it was made.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Mapping

from lme.run import batch_settings
from lme.core import cli_parser
from lme.core import command_names
from lme.core.errors import UserError
from lme.core.facts import (
    CACHE_DIR,
    DATA_DIR,
    FILES,
    HYPOTHESES_TARGET,
    OFFICIAL_JUDGE_MODEL,
    OFFICIAL_JUDGE_PROVIDER,
    OFFICIAL_JUDGE_ROUTES,
    OFFLINE,
    OFFLINE_JUDGE_MODEL,
    OFFLINE_TARGET_MODEL,
    SYMBOLIC_FLAGS,
    resolve_judge_model,
)
from lme.core import config
from lme.data import dataset
from lme.data import hypotheses_file
from lme.judge.successor_judge import reasoning_effort, successor_spec
from lme.store import run_store
from lme.targets import naming
from lme.targets.targets import parse_option

STATUS_EVERY_S = 15.0
"""Seconds between two status lines of ``--progress status``."""
_SHARD = re.compile(r"^(\d+)/(\d+)$")


@dataclass(frozen=True)
class RunSettings:
    project: str
    dataset_path: str
    variant: str
    runs_dir: str
    longmemeval_root: str | None
    target: str
    target_provider: str
    target_model: str
    target_options: Mapping[str, Any]
    judge_provider: str
    judge_model: str
    max_evals: int
    concurrency: int
    cache_enabled: bool
    cache_read: bool
    cache_dir: str
    error_threshold: int
    timeout_s: float
    max_attempts: int
    base_urls: Mapping[str, str] = field(default_factory=dict)
    shard: tuple[int, int] | None = None
    loop: bool = False
    judge_repeat: int = 1
    """Verdicts per hypothesis (``--judge-repeat``); the first is the label, the repeats measure stability."""
    azure: Mapping[str, str] = field(default_factory=dict)
    """Config ``providers.azure``: ``endpoint``, ``deployment``, ``api_version`` of the Azure OpenAI route."""
    rate_limits: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    """Config ``providers.<name>.rpm`` / ``tpm``: the pacer's budgets where the provider sends no rate headers."""
    batch: str = "off"
    """``--batch`` / config ``batch``: ``judge`` (or ``all``: also single-call generation) through the providers'
    Batch APIs (``batch_runner``); ``off`` calls synchronously."""
    batch_fallback: str = "resubmit"
    """Requests a batch failed or expired: ``resubmit`` them in another batch, or send them ``sync``."""
    batch_poll_s: float = 10.0
    """Config ``batchPollSeconds``: the first wait before a batch is polled (the waits then double, up to 6x it
    for the first 10 minutes and 30x it after)."""
    successor_judge: str | None = None
    """``--successor`` / config ``successorJudge`` (``provider:model``): judges the hypotheses the verdict archive
    lacks once the official judge is gone (404 / 410); its verdicts are labelled, never official."""
    judge_reasoning_effort: str | None = None
    """Config ``judgeReasoningEffort``: ``reasoning_effort`` of a reasoning-model judge (``judge_shapes``)."""
    official_judge_gone: bool = False
    """Set by the start-up check (``judge_route``), not by the user: the official judge answered 404 / 410, so
    its calls are not made (archived verdicts still score; the successor, if named, judges the rest)."""
    max_given: bool = False
    """``--max`` was on the command line (not the config's ``maxEvals``): a new run covers its first ``max_evals``
    items either way; a resume checks that it names the run's own item set (``run_state.item_set_conflict``)."""
    successor_only: bool = False
    """Set for a loop run after the day (``lme.loop.judge_day``), never by a flag: the successor judges every item
    (no archived official verdict, no official call), so every verdict a loop's rounds compare is one judge's."""

    @property
    def successor(self) -> tuple[str, str] | None:
        if not self.successor_judge:
            return None
        provider, _, model = self.successor_judge.partition(":")
        return provider, model

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["target_options"] = dict(self.target_options)
        d["base_urls"] = dict(self.base_urls)
        d["azure"] = dict(self.azure)
        d["rate_limits"] = {name: dict(limits) for name, limits in self.rate_limits.items()}
        d["shard"] = None if self.shard is None else f"{self.shard[0]}/{self.shard[1]}"
        return d


def parse_shard(value: str | None) -> tuple[int, int] | None:
    if value is None:
        return None
    m = _SHARD.match(value.strip())
    if not m or not (1 <= int(m.group(1)) <= int(m.group(2))):
        raise UserError(f"--shard {value!r} is not i/n with 1 <= i <= n", fix="e.g. --shard 1/4")
    return int(m.group(1)), int(m.group(2))


_RESUMED_FROM_META = {  # config key <- the run's stored setting: what makes its rows comparable
    "datasetPath": "dataset_path",
    "variant": "variant",
    "target": "target",
    "targetProvider": "target_provider",
    "targetModel": "target_model",
    "targetOptions": "target_options",
    "judgeProvider": "judge_provider",
    "judgeModel": "judge_model",
    "longmemeval_root": "longmemeval_root",
    "judgeRepeat": "judge_repeat",  # not a config.json key: kept only so a resume keeps the run's --judge-repeat
    "batch": "batch",  # a resume keeps polling the run's batches
    "successorJudge": "successor_judge",  # a resume keeps the run's successor (--successor still wins)
}


def stored_run_settings(cfg: Mapping[str, Any], run_id: str | None, project: Path) -> dict[str, Any] | None:
    """The settings an existing run was started with (its run-meta), or None for a new run id."""
    if not run_id:
        return None
    runs_dir = run_store.configured_runs_dir(cfg, project)
    return run_store.stored_settings(run_store.run_dir_for(runs_dir, run_store.validate_run_id(run_id)))


def resolve(cfg: Mapping[str, Any], args: argparse.Namespace, project: Path) -> RunSettings:
    """Merge config and arguments into RunSettings. Paths are resolved against the project root.

    Resuming (``--run-id`` of an existing run) continues the run as it was started: its stored dataset, target,
    options and judge take the place of the config's, so a config edited since cannot mix settings into it.
    Arguments given explicitly still win (and the run driver refuses them if they differ from the run's).
    """
    refuse_empty_values(args)
    stored = stored_run_settings(cfg, args.run_id, project)
    if stored:
        stored = _relocated(stored, args, project)
        cfg = {**cfg, **{key: stored[name] for key, name in _RESUMED_FROM_META.items() if name in stored}}
    path = partial(_project_path, project)
    variant = dataset.resolve_variant(args.variant or cfg.get("variant") or "_s")
    fields = _routes(cfg, args)
    fields.update(_target(cfg, args, fields, stored, project))
    fields.update(_counts(cfg, args))
    cache_enabled = bool(cfg.get("cacheEnabled", True))
    fields.update(_provider_blocks(cfg))
    dataset_path = _dataset_path(cfg, args, variant, project)
    settings = RunSettings(
        project=str(project),
        dataset_path=str(path(dataset_path)),
        variant=variant,
        runs_dir=str(run_store.configured_runs_dir(cfg, project)),
        longmemeval_root=path(args.longmemeval_root or cfg.get("longmemeval_root")),
        cache_enabled=cache_enabled,
        cache_read=cache_enabled and not args.no_cache and bool((stored or {}).get("cache_read", True)),
        cache_dir=str(config.owned_folder(project, cfg.get("cache_dir") or CACHE_DIR, "cache_dir")),
        timeout_s=float(cfg.get("requestTimeoutSeconds", 600)),
        max_attempts=int(cfg.get("maxAttempts", 8)),
        shard=parse_shard(args.shard),
        loop=bool(args.loop),
        batch=str(getattr(args, "batch", None) or cfg.get("batch") or "off"),
        batch_fallback=str(getattr(args, "batch_fallback", None) or cfg.get("batchFallback") or "resubmit"),
        batch_poll_s=float(cfg.get("batchPollSeconds", 10.0)),
        judge_reasoning_effort=reasoning_effort(cfg.get("judgeReasoningEffort")),
        **fields,
    )
    batch_settings.check_settings(settings)
    return settings


def _relocated(stored: Mapping[str, Any], args: argparse.Namespace, project: Path) -> dict[str, Any]:
    """The run's recorded dataset and upstream checkout where they are now (``config.moved_path``: a moved
    project's own files at its new place). A recorded dataset that is gone and not given again is refused: a
    resume never picks another file by itself."""
    out = dict(stored)
    for name in ("dataset_path", "longmemeval_root"):
        if out.get(name):
            out[name] = config.moved_path(str(out[name]), stored.get("project"), project)
    if out.get("target"):
        out["target"], out["target_options"] = moved_target(
            str(out["target"]), out.get("target_options") or {}, stored.get("project"), project)
    if out.get("dataset_path") and not args.dataset and not Path(out["dataset_path"]).exists():
        raise UserError(f"the run's dataset file {out['dataset_path']} is gone (moved or renamed?)",
                        fix="pass --dataset <its new place> (the resume checks its sha256), and "
                            "--longmemeval-root <the upstream checkout> if that moved too")
    return out


_OPTION_PATHS = ("path", "cwd", "file")
"""Target options that name a place: the ``python`` adapter's file, the ``command`` adapter's folder, the
hypotheses file (checked by its sha256)."""


def moved_target(name: str, options: Mapping[str, Any], old_project: str | None, project: Path
                 ) -> tuple[str, dict[str, Any]]:
    """A run's recorded target and options with the paths in them where they are now (``config.moved_path``)."""
    def moved(value: Any) -> Any:
        return config.moved_path(value, old_project, project) if isinstance(value, str) and value else value
    return moved(name), {key: moved(v) if key in _OPTION_PATHS else v for key, v in options.items()}


def _project_path(project: Path, value: str | None) -> str | None:
    return None if value is None else str(config.resolve_path(project, value))


def _routes(cfg: Mapping[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """The target's and the judge's provider and model (the config's, or ``--target-model`` / ``--judge-model``;
    ``--offline`` replaces both) and the successor judge, as RunSettings fields."""
    named = tuple(cfg.get("providers") or {})
    target_provider, target_model = cfg.get("targetProvider", "anthropic"), cfg.get("targetModel", "")
    if args.target_model:
        target_provider, target_model = config.parse_model_arg(args.target_model, target_provider, named)
    judge_provider, judge_model = (cfg.get("judgeProvider", OFFICIAL_JUDGE_PROVIDER),
                                   cfg.get("judgeModel", OFFICIAL_JUDGE_MODEL))
    if args.judge_model:
        judge_provider, judge_model = config.parse_model_arg(args.judge_model, judge_provider, named)
    if judge_provider in OFFICIAL_JUDGE_ROUTES:  # upstream's alias: gpt-4o is the snapshot, recorded as such
        judge_model = resolve_judge_model(judge_model)
    if args.offline:
        target_provider, target_model = OFFLINE, OFFLINE_TARGET_MODEL
        judge_provider, judge_model = OFFLINE, OFFLINE_JUDGE_MODEL
    given = getattr(args, "successor", None)
    successor = successor_spec(given or cfg.get("successorJudge"), named, judge_provider, judge_model,
                               explicit=bool(given))
    return {"target_provider": target_provider, "target_model": target_model, "judge_provider": judge_provider,
            "judge_model": judge_model, "successor_judge": successor}


def _target(cfg: Mapping[str, Any], args: argparse.Namespace, routes: Mapping[str, Any],
            stored: Mapping[str, Any] | None, project: Path) -> dict[str, Any]:
    """The target, its options (config, ``--target-option``, the symbolic flags) and, for a hypotheses file, the
    target's provider and model (``_hypotheses_target``), as RunSettings fields. Paths in them are taken from the
    project (``naming``); a resumed run keeps the spellings it stored, and only what is given again is resolved."""
    target = args.target or cfg.get("target") or "full-context"
    if args.offline and not args.target:
        target = "offline"
    options = dict(cfg.get("targetOptions") or {})
    given = dict(parse_option(pair) for pair in args.target_option or [])  # JSON values typed, else text
    options.update(given)
    for flag in SYMBOLIC_FLAGS:
        chosen = getattr(args, flag, None)
        if chosen is not None:
            options[flag] = chosen
    if not stored or args.target:
        target = naming.resolve_target(target, project)
    resolved = naming.resolve_options(target, options if not stored else given, project, defaults=not stored)
    options.update(resolved)
    target, provider, model, options = _hypotheses_target(
        args, target, routes["target_provider"], routes["target_model"], options, stored,
        partial(_project_path, project))
    return {"target": target, "target_provider": provider, "target_model": model, "target_options": options}


def _counts(cfg: Mapping[str, Any], args: argparse.Namespace) -> dict[str, int]:
    max_evals = args.max if args.max is not None else int(cfg.get("maxEvals", 500))
    concurrency = args.concurrency if args.concurrency is not None else int(cfg.get("concurrency", 8))
    if max_evals < 0:
        raise UserError(f"--max {max_evals} is negative", fix="give a count >= 1")
    if args.max == 0:
        raise UserError("--max 0 would run no item (and record the run as completed)",
                        fix="give a count >= 1, or leave --max out to run every pending item")
    if concurrency < 1:
        raise UserError(f"--concurrency {concurrency} must be >= 1", fix="e.g. --concurrency 8")
    error_threshold = int(args.error_threshold if args.error_threshold is not None else cfg.get("errorThreshold", 0))
    if error_threshold < 0:
        raise UserError(f"--error-threshold {error_threshold} is negative", fix="give a count >= 0 (0 = stop at the first error)")

    judge_repeat = args.judge_repeat if args.judge_repeat is not None else int(cfg.get("judgeRepeat", 1))
    if judge_repeat < 1:
        raise UserError(f"--judge-repeat {judge_repeat} must be >= 1", fix="e.g. --judge-repeat 3")
    return {"max_evals": max_evals, "max_given": args.max is not None, "concurrency": concurrency,
            "error_threshold": error_threshold, "judge_repeat": judge_repeat}


def _provider_blocks(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The config's ``providers`` blocks the run uses: the Azure route, base URLs and rate limits."""
    azure = {k: str(v) for k, v in dict((cfg.get("providers") or {}).get("azure") or {}).items()
             if k in ("endpoint", "deployment", "api_version")}
    base_urls = {
        name: str(p["base_url"])
        for name, p in (cfg.get("providers") or {}).items()
        if isinstance(p, Mapping) and p.get("base_url")
    }
    return {"azure": azure, "base_urls": base_urls, "rate_limits": config.rate_limits(cfg)}


def _dataset_path(cfg: Mapping[str, Any], args: argparse.Namespace, variant: str, project: Path) -> str:
    """``--dataset`` or the config's ``datasetPath``, as the file of ``variant`` (``dataset_for_variant``)."""
    dataset_path = args.dataset or cfg.get("datasetPath")
    if not dataset_path:
        raise UserError("no dataset configured", fix="set datasetPath in .longmemeval-benchmarks/config.json or pass --dataset, or run "
                        f"{command_names.SETUP}")
    return str(dataset_for_variant(_project_path(project, dataset_path), variant, explicit=bool(args.dataset),
                                   project=project,
                                   configured_variant=dataset.resolve_variant(cfg.get("variant") or "_s")))


_NON_EMPTY = ("run_id", "variant", "dataset", "target", "target_model", "judge_model", "longmemeval_root",
              "hypotheses", "shard", "project", "successor")
"""Flags whose empty value would silently fall back to a default (an unset shell variable: ``--run-id "$RUN"``)."""


def refuse_empty_values(args: argparse.Namespace) -> None:
    """``--run-id ""`` and its kind: one line, not a fresh paid run under a new id or the config's default."""
    for name in _NON_EMPTY:
        value = getattr(args, name, None)
        if isinstance(value, str) and not value.strip():
            flag = "--" + name.replace("_", "-")
            raise UserError(f"{flag} is empty (an unset shell variable?)",
                            fix=f"give {flag} a value, or leave the flag out for the default")


def _hypotheses_target(args: argparse.Namespace, target: str, provider: str, model: str, options: dict[str, Any],
                       stored: Mapping[str, Any] | None, path: Any) -> tuple[str, str, str, dict[str, Any]]:
    """``--hypotheses FILE`` (or target ``hypotheses``): answers read from the file, no model for the target; the
    options are the file and its sha256 (see ``hypotheses_file.options_for``)."""
    given = getattr(args, "hypotheses", None)
    if given:
        if args.target and args.target != HYPOTHESES_TARGET:
            raise UserError(f"--hypotheses and --target {args.target} both given",
                            fix="drop --target: --hypotheses judges the answers in the file")
        options = hypotheses_file.options_for(str(path(given)), stored)
    elif target != HYPOTHESES_TARGET:
        return target, provider, model, options
    elif options.get("file"):  # --target hypotheses --target-option file=..., or a resumed hypotheses run
        file = str(path(str(options["file"])))
        options = {"file": file, "sha256": options.get("sha256") or hypotheses_file.file_sha256(file)}
    name = Path(str(options.get("file") or "")).name or "none"
    return HYPOTHESES_TARGET, OFFLINE, name, options


def dataset_for_variant(configured: str, variant: str, *, explicit: bool, project: Path,
                        configured_variant: str | None = None) -> Path:
    """The dataset file for ``variant``: the configured (or ``--dataset``) file when its name, or the config's
    ``variant``, says it is that variant; otherwise the variant's file downloaded by setup into
    ``.longmemeval-benchmarks/data/``. ``--variant _oracle`` must never run the ``_s`` file under the oracle's name."""
    path = Path(configured)
    named = dataset.guess_variant(path)  # from the file name only
    if named == variant or (named is None and (explicit or variant == (configured_variant or variant))):
        return path
    named = named or f"{configured_variant} (the config's variant)"
    if not explicit:
        for release in ("cleaned", "original"):
            candidate = project / DATA_DIR / FILES[release][variant]
            if candidate.is_file():
                return candidate
    raise UserError(
        f"variant {variant} asked for, but the dataset {path} is a {named} file",
        fix=f"download it with {command_names.SETUP} --download {variant}, or pass --dataset <the {variant} file>",
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The run's flags, named as the user's documents name them."""
    parser.add_argument("--project", default=".", help="project root holding .longmemeval-benchmarks/ (default: .)")
    parser.add_argument("--variant", help="_s, _m or _oracle (also s, m, oracle); default from config, else _s")
    parser.add_argument("--dataset", help="dataset file (default: datasetPath from config)")
    parser.add_argument("--max", type=int,
                        help="a new run covers the dataset's first N items (default: maxEvals, 500); a resume "
                             "finishes the run's own items (a --max naming another count is refused)")
    parser.add_argument("--target", help="target (memory system under test): full-context, oracle, rag, offline, command, python, memory-ref, "
                             "or the path to your own system: a .py file defining generate(item, ctx), or an "
                             "executable (plugins/README.md)")
    parser.add_argument("--hypotheses", metavar="FILE",
                        help="judge the answers in FILE as a run (target hypotheses): upstream's JSONL of "
                             "{question_id, hypothesis} (or a JSON array); a question without a line is an error row")
    parser.add_argument("--target-model", help="reader model as provider:model or a bare model (provider from config)")
    parser.add_argument("--target-option", action="append", metavar="KEY=VALUE", help="target option (repeatable), e.g. top_k=10")
    parser.add_argument("--judge-model", help="judge as provider:model; official: openai:gpt-4o (= gpt-4o-2024-08-06)")
    parser.add_argument("--successor", metavar="PROVIDER:MODEL",
                        help="when the official judge is gone (404 / 410), judge the hypotheses the verdict archive "
                             "lacks with this model (e.g. openai:o3-mini); archived verdicts stay official, the "
                             "successor's are labelled and cite its calibration (judge_agreement.py) (default: "
                             "config successorJudge)")
    parser.add_argument("--longmemeval-root", help="upstream LongMemEval checkout holding the judge prompts")
    parser.add_argument("--judge-repeat", type=int, metavar="K", help="judge each hypothesis K times (repeats bypass the cache; the first verdict is the label): measures judge stability (default 1; a resume keeps the run's)")
    parser.add_argument("--run-id", help="resume this run (default: a new UUID)")
    parser.add_argument("--concurrency", type=int, help="items in flight at once; the pacer keeps to the provider's rate limits below it (default: config, 8)")
    parser.add_argument("--error-threshold", type=int, help="item errors tolerated before the run stops as failed (default: config, 0)")
    parser.add_argument("--shard", help="run only shard i of n (i/n), deterministic by question id")
    parser.add_argument("--no-cache", action="store_true", help="do not read the call cache (still writes it): for confirmation reruns; a resume keeps the run's choice")
    parser.add_argument("--dry-run", action="store_true", help="build every prompt, count tokens, estimate cost and time; call no model")
    parser.add_argument("--offline", action="store_true", help="offline target and offline judge: no network, no keys (not comparable)")
    parser.add_argument("--loop", action="store_true", help="iteration-loop mode: refuse partial N, a non-gpt-4o judge, symbolic flags off, or the wrong branch")
    parser.add_argument("--progress", choices=("auto", "bar", "lines", "status", "json", "quiet"), default="auto",
                        help="progress output: bar, lines (one per item), status (a status line every "
                             f"{STATUS_EVERY_S:.0f} s: count, accuracy, cost, rate, ETA), json, quiet (default: a bar "
                             "on a terminal, lines otherwise; status in the background)")
    parser.add_argument("--background", action="store_true",
                        help="check everything here, then run detached (own session; log in <run dir>/run.log, pid in "
                             "worker.json) and return at once; follow it with run_status.py --run-id ID --wait 100")
    parser.add_argument("--yes", "--confirm-cost", dest="yes", action="store_true",
                        help="start even when the estimate is above confirmCostUsd (otherwise: exit 5 with the estimate)")
    parser.add_argument("--max-cost", type=cli_parser.finite_float, metavar="USD",
                        help="stop taking new items once the run's spending plus the items in flight would pass USD: "
                             "status paused, exit 6; resume with a higher --max-cost")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)  # the --background child
    parser.add_argument("--no-scorecard", action="store_true", help="do not write the scorecard at the end")
    parser.add_argument("--batch", choices=("judge", "all", "off"),
                        help="send the judge stage (all: also single-call generation: full-context, oracle, rag; "
                             "and the roles a target declares batchable: memory-ref's writer) through the provider's "
                             "Batch API: half price, results within 24 h; the batches are in the run directory, so "
                             "a resume collects them (default: config batch, off)")
    parser.add_argument("--batch-fallback", choices=("resubmit", "sync"),
                        help="requests a batch failed or expired: resubmit them in a new batch (default) or send "
                             "them synchronously")
    for flag in SYMBOLIC_FLAGS:
        name = flag.replace("_", "-")
        parser.add_argument(f"--{name}", dest=flag, action="store_true", default=None, help=f"target option {flag}=true (memory-ref)")
        parser.add_argument(f"--no-{name}", dest=flag, action="store_false", help=f"target option {flag}=false")
