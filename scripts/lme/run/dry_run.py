"""``--dry-run``: build every prompt the run would send, count tokens, and estimate cost and time. No model call.

Also the cost gate's and ``--max-cost``'s source of estimates. What is exact, assumed and free: ``references/SPEC.md``,
"Cost gate and cap" ("What the estimate counts"). Beyond it: the target's requests come from
``prepare_requests_by_role``, else ``prepare_requests`` (neither: unknown; memory-ref's assumed facts block:
``plugins/memory_ref/preview.py``); a hypotheses run's exact judge prompts from ``judge_preview``; tokens are the
provider layer's estimate (characters / 4); dollars ``prices.py`` (a model not in it is unknown, never free); time a
per-call latency model divided by the concurrency: a rough figure to plan with.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Mapping

from lme.core.facts import HYPOTHESES_TARGET, is_offline, resolve_judge_model
from lme.data import hypotheses_file
from lme.core.records import Question
from lme.run.settings import RunSettings
from lme.store import run_store
from lme.models import call_cache
from lme.data import dataset
from lme.targets import generation_driver
from lme.targets.targets import users_system
from lme.models import prices
from lme.models import provider_probe
from lme.models import providers
from lme.models import batch_api
from lme.models.token_counts import estimate_request_tokens
from lme.run import batch_runner, judge_preview
from lme.run.estimate_record import BatchEstimate, Estimate, GenerationEstimate, JudgeEstimate, RoleEstimate
from lme.core.errors import UserError

ASSUMED_HYPOTHESIS_TOKENS = 60
JUDGE_TEMPLATE_TOKENS = 150
JUDGE_OUTPUT_TOKENS = 2


def _seconds_per_call(tokens_in: int, tokens_out: int) -> float:
    """A planning model of one call's latency: 0.5 s + 1 s per 20k input tokens + 20 ms per output token."""
    return 0.5 + tokens_in / 20000.0 + tokens_out * 0.02


@dataclass(frozen=True)
class Call:
    """One model call the run would make, as the dry run sees it."""

    stage: str
    """``judge`` or the target's role (``reader``, ``writer``, ``rerank``...)."""
    provider: str
    model: str
    tokens_in: int
    tokens_out: int
    """``max_tokens`` for generation: an upper bound."""
    key: str | None = None
    """The request's content address, when the dry run built the request itself."""

    def usd(self) -> float | None:
        return 0.0 if is_offline(self.provider) else prices.cost_usd(self.model, self.tokens_in, self.tokens_out)


@dataclass
class StageTotals:
    calls: int = 0
    cached_calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    usd: float | None = 0.0
    seconds: float = 0.0
    unpriced: set[str] = field(default_factory=set)

    def add(self, call: Call, *, free: bool) -> None:
        if free:
            self.cached_calls += 1
            return
        self.calls += 1
        self.tokens_in += call.tokens_in
        self.tokens_out += call.tokens_out
        self.seconds += _seconds_per_call(call.tokens_in, call.tokens_out)
        usd = call.usd()
        if usd is None:
            self.unpriced.add(f"{call.provider}:{call.model}")
            self.usd = None
        elif self.usd is not None:
            self.usd += usd


class Estimator:
    """The calls one item would cost under ``settings``: target requests by role, plus the judge call."""

    def __init__(self, settings: RunSettings) -> None:
        self.settings = settings
        self.module = generation_driver.load_target(settings.target)
        self.previewable = any(hasattr(self.module, f) for f in ("prepare_requests_by_role", "prepare_requests"))
        self.self_cached_roles = set(getattr(self.module, "CACHED_ROLES", ()))
        self.judge_provider, judge_model = judge_preview.paying_judge(settings)
        self.judge_model = resolve_judge_model(judge_model)
        self.known_hypotheses = settings.target == HYPOTHESES_TARGET
        """A hypotheses run: each judge call is sized with the file's hypothesis (none: an error row, no call)."""
        self.judge_previewer = _previewer(settings)
        """A hypotheses run's exact judge calls (None: not one, or upstream's checkout is missing, which the run's
        own checks refuse; the estimate then sizes the judge as for any run)."""

    def target_calls(self, q: Question) -> list[Call] | None:
        """The target's calls for ``q``; None when the target cannot preview them."""
        s = self.settings
        by_role = generation_driver.prepare_requests_by_role(
            q, s.target_provider, s.target_model, target=s.target, options=dict(s.target_options),
            cache_dir=s.cache_dir)
        if by_role is None:
            return None
        calls = []
        for role, requests in by_role.items():
            for req in requests:
                calls.append(Call(role, req.provider, req.model, estimate_request_tokens(req), req.max_tokens,
                                  req.key()))
        return calls

    def judge_call(self, q: Question) -> Call | None:
        """The judge call of ``q``; None when there will be none (a hypotheses file without this question)."""
        hypothesis_tokens = ASSUMED_HYPOTHESIS_TOKENS
        if self.known_hypotheses:
            text = self.module.preview(q.question_id, self.settings.target_options)
            if text is None:
                return None
            hypothesis_tokens = providers.estimate_tokens(text)
        tin = JUDGE_TEMPLATE_TOKENS + providers.estimate_tokens(f"{q.question} {q.answer}") + hypothesis_tokens
        return Call("judge", self.judge_provider, self.judge_model, tin, JUDGE_OUTPUT_TOKENS)

    def previewed_judge_call(self, q: Question) -> tuple[Call, judge_preview.JudgeCall] | None:
        """A hypotheses run's judge call of ``q``, exact (needs ``judge_previewer``); None when it makes none."""
        preview = self.judge_previewer.call(q)
        if preview is None:
            return None
        call = Call("judge", self.judge_provider, self.judge_model, preview.prompt_tokens, JUDGE_OUTPUT_TOKENS)
        return call, preview

    def item_usd(self, q: Question) -> float | None:
        """An upper-bound price of ``q`` alone (no cache, no repeats): what ``--max-cost`` reserves in flight."""
        judge = self.judge_call(q)
        calls = [*(self.target_calls(q) or []), *([judge] if judge else []) * max(1, self.settings.judge_repeat)]
        total = 0.0
        for call in calls:
            usd = call.usd()
            if usd is None:
                return None
            total += usd
        return total


def _previewer(settings: RunSettings) -> judge_preview.JudgePreviewer | None:
    if not judge_preview.applies(settings):
        return None
    try:
        return judge_preview.JudgePreviewer(settings)
    except UserError:
        return None


def run_root(settings: RunSettings, run_id: str) -> Path:
    """The directory of run ``run_id`` (a bad id: the one-line refusal)."""
    return run_store.run_dir_for(Path(settings.runs_dir), run_store.validate_run_id(run_id))


def run_is_finished(settings: RunSettings, run_id: str | None) -> bool:
    """``run_id`` names an existing run with every item of its manifest (in the shard) completed: a resume that
    calls no model."""
    if not run_id:
        return False
    run_dir = run_root(settings, run_id)
    return run_dir.is_dir() and _nothing_pending(run_dir, run_store.load_completed(run_dir), settings)


def _nothing_pending(run_dir: Path, done: set[str], settings: RunSettings) -> bool:
    ids = _run_item_ids(run_dir)  # unreadable: stream the dataset as usual
    return ids is not None and all(q in done for q in ids if run_store.in_shard(q, settings.shard))


def pending_questions(settings: RunSettings, run_id: str | None) -> Iterable[Question]:
    """The items this invocation would run, in dataset order: a resume's pending items of its own item set (its
    manifest), in the shard; a new run's first ``--max`` items, in the shard."""
    done: set[str] = set()
    wanted: set[str] | None = None
    if run_id:
        run_dir = run_root(settings, run_id)
        if run_dir.exists():
            done = run_store.load_completed(run_dir)
            if _nothing_pending(run_dir, done, settings):
                return  # a resume of a finished run: no need to stream the dataset
            wanted = _run_item_ids(run_dir)
    for index, raw in enumerate(dataset.iter_items(Path(settings.dataset_path))):
        if wanted is None and index >= settings.max_evals:
            return
        q = Question.from_dict(raw)
        if (wanted is not None and q.question_id not in wanted) or q.question_id in done \
                or not run_store.in_shard(q.question_id, settings.shard):
            continue
        yield q


def _run_item_ids(run_dir: Path) -> set[str] | None:
    """The ids of an existing run's manifest (its item set); None when it has none yet (a new run)."""
    manifest = run_store.peek_json(run_store.manifest_path(run_dir))
    items = None if manifest is None else manifest.get("items")
    if not isinstance(items, list):
        return None
    return {str(it.get("question_id")) for it in items if isinstance(it, dict)}


class EstimateTally:
    """The running totals of an estimate: ``add`` each pending item (in dataset order), then ``result``. The cost
    gate feeds it from the new run's dataset scan (``offer_new``), so the gate costs no pass of its own."""

    def __init__(self, settings: RunSettings) -> None:
        self.settings = settings
        self.est = Estimator(settings)
        self.roles: dict[str, StageTotals] = {}
        self.judge = StageTotals()
        self.archived_judge_calls = 0
        self.previewed: list[tuple[Call, judge_preview.JudgeCall]] = []
        """A hypotheses run's judge calls, decided in ``result`` with one look at the call cache for all of them."""
        self.seen: set[str] = set()
        self.items = 0
        self.unknown = 0
        self.offered = 0

    def offer_new(self, raw: Mapping[str, Any]) -> None:
        """One raw dataset item of a new run, in dataset order: counted when the run would run it (among the first
        ``--max``, in the shard)."""
        self.offered += 1
        if self.offered > self.settings.max_evals:
            return
        qid = str(raw["question_id"])
        if run_store.in_shard(qid, self.settings.shard):
            self.add(Question.from_dict(raw))

    def add(self, q: Question) -> None:
        settings, est = self.settings, self.est
        self.items += 1
        calls = est.target_calls(q)
        if calls is None:
            self.unknown += 1
            calls = []
        in_cache = set()
        if settings.cache_enabled and settings.cache_read and calls:
            in_cache = call_cache.cached_keys(Path(settings.cache_dir), [c.key for c in calls if c.key])
        for call in calls:
            repeat = call.key in self.seen and (settings.cache_read or call.stage in est.self_cached_roles)
            self.roles.setdefault(call.stage, StageTotals()).add(call, free=repeat or call.key in in_cache)
            self.seen.add(call.key)
        if est.judge_previewer is not None:
            previewed = est.previewed_judge_call(q)
            if previewed is not None:
                self.previewed.append(previewed)
            return
        judge_call = est.judge_call(q)
        for _ in range(max(1, settings.judge_repeat) if judge_call else 0):  # --judge-repeat K: K calls per item
            self.judge.add(judge_call, free=False)

    def result(self) -> Estimate:
        self._settle_previewed()
        return _totals(self.settings, self.est, self.roles, self.judge, self.items, self.unknown,
                       self.archived_judge_calls)

    def _settle_previewed(self) -> None:
        """Each previewed judge call as the run will treat it (``item_runner.judge``): the archive's verdict, else
        the cache's reply (official judge first, then the successor), else a call; ``--judge-repeat`` K adds K-1
        calls that bypass both. None is left to call once the official judge is gone with no successor."""
        previewed, self.previewed = self.previewed, []
        keys = [key for _, preview in previewed if not preview.archived for key in preview.cache_keys]
        in_cache = judge_preview.cached(self.settings, keys)
        for call, preview in previewed:
            if preview.archived:
                self.archived_judge_calls += 1
            elif any(key in in_cache for key in preview.cache_keys):
                self.judge.add(call, free=True)
            elif preview.paid is not None:
                self.judge.add(call, free=False)
            if preview.paid is not None:
                for _ in range(max(1, self.settings.judge_repeat) - 1):
                    self.judge.add(call, free=False)


def estimate(settings: RunSettings, run_id: str | None = None) -> Estimate:
    """Totals for the items this invocation would run (pending, in the shard, up to ``--max``)."""
    tally = EstimateTally(settings)
    for q in pending_questions(settings, run_id):
        tally.add(q)
    return tally.result()


def _totals(settings: RunSettings, est: Estimator, roles: dict[str, StageTotals], judge: StageTotals, items: int,
            unknown: int, archived_judge_calls: int = 0) -> Estimate:
    generation = StageTotals()
    for totals in roles.values():
        generation.calls += totals.calls
        generation.cached_calls += totals.cached_calls
        generation.tokens_in += totals.tokens_in
        generation.tokens_out += totals.tokens_out
        generation.seconds += totals.seconds
        generation.unpriced |= totals.unpriced
        generation.usd = None if generation.usd is None or totals.usd is None else generation.usd + totals.usd
    if unknown:
        generation.usd = None
    concurrency = settings.concurrency
    batch = batch_figures(settings, generation, judge, roles, concurrency)
    if settings.batch != "off":  # what this run would pay: its batched stages at batch prices
        total_usd = batch.chosen_usd_max
    else:
        total_usd = None if generation.usd is None or judge.usd is None else generation.usd + judge.usd
    return Estimate(
        items=items, items_without_prompt_preview=unknown,
        generation=GenerationEstimate(
            calls=generation.calls, cached_calls=generation.cached_calls, tokens_in=generation.tokens_in,
            tokens_out_max=generation.tokens_out, usd_max=generation.usd,
            seconds=round(generation.seconds / concurrency, 1), unpriced_models=tuple(sorted(generation.unpriced)),
            by_role={role: RoleEstimate(calls=t.calls, cached_calls=t.cached_calls, tokens_in=t.tokens_in,
                                        tokens_out_max=t.tokens_out, usd_max=t.usd) for role, t in roles.items()}),
        judge=JudgeEstimate(
            calls=judge.calls, cached_calls=judge.cached_calls, archived_calls=archived_judge_calls,
            tokens_in=judge.tokens_in, tokens_out=judge.tokens_out, usd=judge.usd,
            seconds=round(judge.seconds / concurrency, 1), unpriced_models=tuple(sorted(judge.unpriced))),
        total_usd_max=total_usd, batch=batch, seconds=round((generation.seconds + judge.seconds) / concurrency, 1),
        concurrency=concurrency, target=f"{settings.target} {settings.target_provider}:{settings.target_model}",
        judge_model=_judge_named(settings, est), note=_note(settings, est, unknown))


def _note(settings: RunSettings, est: Estimator, unknown: int) -> str:
    if est.judge_previewer is not None:
        sized = "each judge prompt exact, sized with the file's own hypothesis"
        judged = "judge calls the verdict archive or the call cache would serve are free"
    else:
        sized = ("each judge call sized with the file's own hypothesis" if est.known_hypotheses
                 else f"judge hypothesis assumed {ASSUMED_HYPOTHESIS_TOKENS} tokens")
        judged = "judge calls are all counted"
    notes = [f"tokens ~ chars/4; generation output counted at max_tokens; {sized}; latency model in dry_run.py",
             f"calls in the call cache and repeated identical calls are free; {judged}"]
    if users_system(settings.target):  # its calls go through the user's code, not our gateway
        notes.append(f"target {settings.target} makes its own model calls: not counted (only the judge is ours)")
    if unknown:
        notes.append(f"target {settings.target} cannot preview its requests (no prepare_requests): "
                     "generation cost unknown")
    assumptions = getattr(est.module, "DRY_RUN_ASSUMPTIONS", None)
    if assumptions:
        notes.append(f"target {settings.target}: {assumptions}")
    return "; ".join(notes)


def _judge_named(settings: RunSettings, est: Estimator) -> str:
    """The judge the estimate prices: the successor once the start-up check found the official judge gone."""
    if judge_preview.paying_judge(settings) != (settings.judge_provider, settings.judge_model):
        official = f"{settings.judge_provider}:{resolve_judge_model(settings.judge_model)}"
        return f"{est.judge_provider}:{est.judge_model} (successor: {official} is gone)"
    return f"{est.judge_provider}:{est.judge_model}"


BATCH_TIME = "most batches end within 1 h, at most 24 h (the providers' completion window)"


def _batches_needed(provider: str, calls: int, tokens_in: int) -> int:
    """Batches for ``calls`` requests of ``tokens_in`` input tokens: the providers' request and size limits
    (``batch_api.LIMITS``), sizing a request at 4.4 bytes per token (characters / 4, plus JSON escapes) and 300 bytes of JSON around it."""

    if not calls:
        return 0
    max_n, max_bytes = batch_api.LIMITS.get(provider, batch_api.LIMITS["openai"])
    size = int(tokens_in * 4.4) + calls * 300
    return max(-(-calls // max_n), -(-size // max_bytes))


def batch_figures(settings: RunSettings, generation: StageTotals, judge: StageTotals,
                  roles: dict[str, StageTotals], concurrency: int) -> BatchEstimate:
    """Both prices and both times per stage: synchronous, and through the Batch APIs (``prices.BATCH_DISCOUNT``),
    with the requests the synchronous path would send (each one drawn from the per-minute rate limits)."""

    def half(usd: float | None) -> float | None:
        return None if usd is None else usd * prices.BATCH_DISCOUNT

    whole = batch_runner.generation_batchable(settings)
    batch_roles = set(batch_runner.batchable_roles(settings))
    generation_batch: float | None = half(generation.usd) if whole else generation.usd
    batches = _batches_needed(settings.target_provider, generation.calls, generation.tokens_in) if whole else 0
    if batch_roles and generation.usd is not None:  # only the declared roles at batch prices
        generation_batch = 0.0
        for role, t in roles.items():
            usd = half(t.usd) if role in batch_roles else t.usd
            generation_batch = None if usd is None or generation_batch is None else generation_batch + usd
            if role in batch_roles:
                batches += _batches_needed(settings.target_provider, t.calls, t.tokens_in)
    stages = {
        "generation": {"calls": generation.calls, "sync_usd_max": generation.usd, "batch_usd_max": generation_batch,
                       "batchable": whole or sorted(batch_roles & set(roles)) or False,
                       "sync_seconds": round(generation.seconds / concurrency, 1), "batches": batches},
        "judge": {"calls": judge.calls, "sync_usd_max": judge.usd, "batch_usd_max": half(judge.usd),
                  "batchable": True, "sync_seconds": round(judge.seconds / concurrency, 1),
                  "batches": _batches_needed(settings.judge_provider, judge.calls, judge.tokens_in)},
    }
    chosen = batch_runner.batched_stages(settings)

    def total(pick: Any) -> float | None:
        values = [pick(name, stage) for name, stage in stages.items()]
        return None if any(v is None for v in values) else sum(values)

    return BatchEstimate(
        mode=settings.batch, discount=prices.BATCH_DISCOUNT, stages=stages,
        sync_usd_max=total(lambda name, st: st["sync_usd_max"]),
        batch_usd_max=total(lambda name, st: st["batch_usd_max"]),
        chosen_usd_max=total(lambda name, st: st["batch_usd_max"] if (name == "generation" and set(chosen) -
                             {"judge"}) or (name == "judge" and "judge" in chosen) else st["sync_usd_max"]),
        sync_requests=generation.calls + judge.calls,
        sync_seconds=round((generation.seconds + judge.seconds) / concurrency, 1),
        batch_time=BATCH_TIME, by_role_calls={role: t.calls for role, t in roles.items()})


def dollars(value: float | None, *, bound: bool = False) -> str:
    if value is None:
        return "unknown (a model is not in the price table)"
    return f"{'<= ' if bound else ''}${value:,.2f}" if value >= 1 else f"{'<= ' if bound else ''}${value:.4f}"


def duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 90:
        return f"{seconds}s"
    if seconds < 5400:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{(seconds % 3600) // 60:02d}m"


def format_block(result: Estimate) -> str:
    """The estimate as people read it: one line per stage, the total, what was assumed."""
    g, j = result.generation, result.judge
    lines = [f"estimate: {result.items} items; target {result.target}, judge {result.judge_model}"]

    def stage(name: str, calls: int, cached: int, tin: int, tout: int, usd: float | None, bound: bool) -> str:
        free = f" (+{cached:,} cached or repeated, free)" if cached else ""
        return (f"  {name:<10} {calls:>7,} calls{free}  {tin:>13,} tokens in  {'<= ' if bound else ''}{tout:,} out"
                f"  {dollars(usd, bound=bound)}")

    roles = g.by_role
    for role, t in roles.items():
        lines.append(stage(role, t.calls, t.cached_calls, t.tokens_in, t.tokens_out_max, t.usd_max, True))
    if result.items_without_prompt_preview:
        lines.append(f"  {'target':<10} unknown for {result.items_without_prompt_preview} items (no preview)")
    elif not roles:
        lines.append(f"  {'target':<10}       0 calls")
    judge_line = stage("judge", j.calls, j.cached_calls, j.tokens_in, j.tokens_out, j.usd, False)
    if j.archived_calls:
        judge_line += f"  (+{j.archived_calls:,} from the verdict archive, free)"
    lines.append(judge_line)
    unpriced = sorted(set(g.unpriced_models) | set(j.unpriced_models))
    total = dollars(result.total_usd_max, bound=True)
    if unpriced:
        total += f": no price for {', '.join(unpriced)}"
    lines.append(f"  total      {total}; ~{duration(result.seconds)} at concurrency {result.concurrency}")
    b = result.batch
    ratio = (f" (x{b.batch_usd_max / b.sync_usd_max:.2f} of sync)"
             if b.sync_usd_max and b.batch_usd_max is not None else "")
    chosen = "" if b.mode == "off" else f"; this run (--batch {b.mode}): {dollars(b.chosen_usd_max, bound=True)}"
    lines.append(f"  sync       {dollars(b.sync_usd_max, bound=True)} for {b.sync_requests:,} requests, "
                 f"~{duration(b.sync_seconds)} at concurrency {result.concurrency}")
    lines.append(f"  batch API  {dollars(b.batch_usd_max, bound=True)}{ratio}, {BATCH_TIME}{chosen}")
    lines.append(f"  ({result.note})")
    return "\n".join(lines)


def calls_check(settings: RunSettings) -> dict[str, Any]:
    """Whether each model the run calls can be called, checked without a request (keys, providers, base URLs):
    ``{"keys": {env: set?}, "problems": [the run's one-line refusal per model]}``."""
    problems = provider_probe.local_problems(settings)
    keys = {env: bool(os.environ.get(env)) for _, env in provider_probe.key_envs(settings)}
    return {"keys": keys, "problems": [str(err) for _, err in problems]}


def check_lines(check: dict[str, Any]) -> list[str]:
    """The calls check as people read it: one NOT READY line per model the run could not call (the run's own
    refusal), else the keys it found."""
    if check["problems"]:
        return [f"  NOT READY  {problem}" for problem in check["problems"]]
    keys = check["keys"]
    return [f"  {'keys':<10} {'set: ' + ', '.join(keys) if keys else 'none needed (no model call through this toolkit)'}"]


def run(settings: RunSettings, run_id: str | None = None, *, as_json: bool = False) -> int:
    """``--dry-run``: the estimate and whether every model can be called; stdout carries the summary for people
    (last, so it stays on screen), or with ``as_json`` (``--json``) only the JSON record. Exit 0 either way."""
    if settings.target == HYPOTHESES_TARGET:  # a bad, changed or mismatched file: the run's one-line refusal
        hypotheses_file.check_run_inputs(settings)
    check = calls_check(settings)
    result = replace(estimate(settings, run_id), calls_check=check)
    if as_json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        print("\n".join(["dry run " + format_block(result), *check_lines(check)]))
    return 0
