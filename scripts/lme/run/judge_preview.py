"""The judge call a ``--hypotheses`` run will make for one item, known before the run starts.

A hypotheses run's judge prompts are fixed by the file: the exact prompt (upstream's ``get_anscheck_prompt`` on
the question, gold answer and the file's hypothesis), its request, and so whether the call will be made at all.
Two things make it free, as they do in the run itself (``item_runner.judge``):

- **the verdict archive** holds an official verdict for this prompt and the official judge
  (``judge_official.lookup_archived``, the run's own rule);
- **the call cache** holds the judge's reply to this exact request at the host the run sends it to (a judge entry
  is bound to its host: ``call_cache.cache_key``), when the run reads the cache.

``judge_route.archive_covers`` (no judge probe when the archive covers every pending item) and the dry run's
estimate (the cost gate's figure) both ask here, so they agree with each other and with the run. A run that
generates its answers has no such preview: its hypotheses exist only once it ran.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from lme.core.facts import HYPOTHESES_TARGET, is_offline, resolve_judge_model
from lme.core.records import ChatRequest, Question
from lme.judge import official, request_shapes, verdict_archive
from lme.models import call_cache, providers
from lme.run.settings import RunSettings
from lme.targets import generation_driver


@dataclass(frozen=True)
class JudgeCall:
    """The judge call of one hypotheses-run item, as the run will make it."""

    question_id: str
    prompt_tokens: int
    """The prompt's size in the provider layer's estimate (characters / 4)."""
    archived: bool
    """The project's archive holds an official verdict for this prompt: no call is made."""
    cache_keys: tuple[str, ...]
    """The call-cache keys the run tries, in order, before it calls (``call_cache.cache_key`` at each request's
    host): the official judge's request, then the successor's once the official judge is gone."""
    paid: ChatRequest | None
    """The request a call is made with when neither the archive nor the cache serves it: the official judge's, the
    successor's once it is gone, None when it is gone and no successor is named (the item stays pending)."""


class JudgePreviewer:
    """``call(q)`` for each item of a hypotheses run with a judge that is called (not offline)."""

    def __init__(self, settings: RunSettings) -> None:
        self.settings = settings
        self.module = generation_driver.load_target(settings.target)
        self.builder = official.load_prompt_builder(settings.longmemeval_root)
        self.archive = verdict_archive.for_project(settings.project)
        judges = [(settings.judge_provider, settings.judge_model)]
        if paying_judge(settings) != judges[0]:
            judges.append(paying_judge(settings))
        sdk_settings = providers.ProviderSettings(base_urls=dict(settings.base_urls), azure=dict(settings.azure))
        self.routes = [(provider, model, providers.endpoint_host(provider, sdk_settings),
                        request_shapes.shape_for(provider, resolve_judge_model(model), settings.judge_reasoning_effort))
                       for provider, model in judges]
        """The judges a verdict is asked of, in turn (``item_runner.judge``), each with its host and request shape:
        the official one, then the successor once it is gone."""

    def call(self, q: Question) -> JudgeCall | None:
        """The judge call of ``q``; None when the run makes none: the file has no hypothesis for ``q`` (an error
        row) or its judge prompt cannot be built (a ``judge_input`` error row)."""
        text = self.module.preview(q.question_id, self.settings.target_options)
        if text is None:
            return None
        try:
            prompt = official.build_prompt(self.builder, q.question_type, q.question, q.answer, text,
                                           abstention=q.abstention, question_id=q.question_id)
        except official.JudgeInputError:
            return None
        sha = hashlib.sha256(prompt.encode("utf-8")).hexdigest()
        archived = official.lookup_archived(self.archive, sha, *self.routes[0][:2]) is not None
        requests = [(official.judge_request(prompt, provider, model, shape), host)
                    for provider, model, host, shape in self.routes]
        keys = tuple(call_cache.cache_key(request, host) for request, host in requests)
        paid = None if no_judge_left(self.settings) else requests[-1][0]
        return JudgeCall(q.question_id, providers.estimate_tokens(prompt), archived, keys, paid)


def applies(settings: RunSettings) -> bool:
    """A hypotheses run whose judge is called: its judge calls can be previewed."""
    return settings.target == HYPOTHESES_TARGET and not is_offline(settings.judge_provider)


def paying_judge(settings: RunSettings) -> tuple[str, str]:
    """``(provider, model)`` a judge call that nothing serves is made with: the successor once the start-up check
    found the official judge gone and one is named, else the configured judge."""
    if settings.official_judge_gone and settings.successor is not None:
        return settings.successor
    return settings.judge_provider, settings.judge_model


def no_judge_left(settings: RunSettings) -> bool:
    """The official judge is gone and no successor is named: what the archive lacks stays pending, uncalled."""
    return settings.official_judge_gone and settings.successor is None


def cached(settings: RunSettings, keys: list[str]) -> set[str]:
    """Which of the judge calls' ``keys`` the run's call cache holds (empty when the run does not read it); reads
    only, creates nothing."""
    if not (settings.cache_enabled and settings.cache_read) or not keys:
        return set()
    return call_cache.cached_keys(Path(settings.cache_dir), keys)

