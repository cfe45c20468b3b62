"""The official judge's status before a run: its entry in the provider's model list (``shutdown_date``, the
countdown line) and whether it is gone, so the run can use the verdict archive and a successor instead of stopping.

Gone means one of two answers, nothing else: the judge's own chat call (the probe) answered 410 Gone or 404
``model_not_found`` (``provider_errors.answered_gone``), or the model list's entry names a shutdown date that has
passed. A model list that cannot be read (a gateway without ``GET /v1/models/{id}``: 404 there while chat works)
says nothing. The model-list read carries the probe header, like the probe; it is free (no tokens).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from lme.core.errors import UserError
from lme.core.facts import OFFICIAL_JUDGE_MODEL, OFFICIAL_JUDGE_SHUTDOWN, is_official_judge
from lme.models import provider_probe, provider_routes, recent_probes
from lme.models.provider_errors import ProviderError, answered_gone

ARCHIVE_NOW = ("archive your verdicts now (python scripts/judge_shim.py export-verdicts --out verdicts.jsonl; "
               "judge_shim.py archive-status counts the hypotheses that have no official verdict yet and what "
               "judging them costs)")


@dataclass(frozen=True)
class JudgeEntry:
    """What the provider says of the official judge before a run."""

    gone: bool = False
    """The snapshot is not served there any more: the probe call answered 410 / 404 ``model_not_found``, or the
    model list's shutdown date has passed."""
    status: int | None = None
    shutdown_date: str | None = None
    """``YYYY-MM-DD`` from the model list's entry, where it carries one."""
    message: str = ""

    @property
    def why(self) -> str:
        """How it is known to be gone: ``HTTP 410``, or the list's past shutdown date."""
        if self.status is None and self.shutdown_date is not None:
            return f"its model-list entry says it shut down on {self.shutdown_date}"
        return f"HTTP {self.status or 404}"


def _use(settings: Any) -> provider_probe.Use:
    return provider_probe.Use("judge", settings.judge_provider, settings.judge_model)


def _has_entry(settings: Any) -> bool:
    """The run's judge is the official one on OpenAI's API: it has a model-list entry (an Azure deployment has none)."""
    return settings.judge_provider == "openai" and is_official_judge(settings.judge_provider, settings.judge_model)


def _remembered(settings: Any, use: provider_probe.Use) -> JudgeEntry | None:
    """The entry a run on the same route, key and model read a moment ago, its probe passing in the same moment
    (``recent_probes.listing``); None when there is none, the list is not this judge's to read, or the shutdown date
    it gave (or the announced one) is a day away or past: around the retirement every run asks for itself."""
    if not _has_entry(settings):
        return None
    try:
        found, shutdown_date = recent_probes.listing(getattr(settings, "cache_dir", None),
                                                     provider_probe.fingerprint(use, settings))
    except ProviderError:
        return None
    if not found or _near(shutdown_date):
        return None
    return JudgeEntry(shutdown_date=shutdown_date)


def _near(shutdown_date: str | None, today: dt.date | None = None) -> bool:
    """The judge's shutdown (the list's date, else the announced ``OFFICIAL_JUDGE_SHUTDOWN``) is a day away or
    past: a remembered entry is not trusted then, and every run asks the list and probes the judge itself."""
    today = today or _today()
    return (dt.date.fromisoformat(shutdown_date or OFFICIAL_JUDGE_SHUTDOWN) - today).days <= 1


def _today() -> dt.date:
    return dt.datetime.now(dt.timezone.utc).date()


def _say_countdown(entry: JudgeEntry | None) -> None:
    line = countdown_line(entry)
    if line is not None:
        print(line, file=sys.stderr, flush=True)


def read_entry(settings: Any) -> JudgeEntry | None:
    """The official judge's model-list entry through the run's route; None when the run's judge is not the official
    one, the route is Azure (no model list per deployment) or not callable, or the list could not be read."""
    if not _has_entry(settings):
        return None
    routes = provider_probe._provider_settings(settings)
    try:
        route = provider_routes._route(settings.judge_provider, routes)
        model = route.client(float(settings.timeout_s)).models.retrieve(  # the run's client; the probe's timeout
            settings.judge_model, timeout=routes.timeout_s, extra_headers={provider_probe.PROBE_HEADER: "1"})
    except Exception:  # noqa: BLE001 - not read (no such route on a gateway, a 404, no host): the probe decides
        return None
    shutdown_date = _date(getattr(model, "shutdown_date", None))
    passed = shutdown_date is not None and dt.date.fromisoformat(shutdown_date) < _today()
    return JudgeEntry(gone=passed, shutdown_date=shutdown_date)


def _date(value: Any) -> str | None:
    """``YYYY-MM-DD`` from a date string or a Unix time; None for anything else."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return dt.datetime.fromtimestamp(value, dt.timezone.utc).date().isoformat()
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value[:10]).isoformat()
        except ValueError:
            return None
    return None


def countdown_line(entry: JudgeEntry | None, today: dt.date | None = None) -> str | None:
    """The countdown for an entry with a ``shutdown_date`` (None without one)."""
    if entry is None or entry.shutdown_date is None:
        return None
    today = today or dt.datetime.now(dt.timezone.utc).date()
    days = (dt.date.fromisoformat(entry.shutdown_date) - today).days
    if days < 0:
        when = f"was retired on {entry.shutdown_date} ({-days} days ago)"
    else:
        when = f"is retired on {entry.shutdown_date} (in {days} day{'s' if days != 1 else ''})"
    return f"the official judge {OFFICIAL_JUDGE_MODEL} {when}: {ARCHIVE_NOW}"


def status(settings: Any) -> tuple[JudgeEntry, list[recent_probes.Passed]]:
    """The official judge before a run: the list's entry (printing the countdown) and the probe call (unless it
    passed a moment ago: ``recent_probes``), sent at once, so the two cost one round trip; with the probe that
    passed now. When the list says gone, the probe's answer (a 404 of its own, free) is not looked at. Raises
    UserError for a refusal that is not 'gone' (a bad key, no credit, no host)."""
    use = _use(settings)
    remembered = _remembered(settings, use)
    if remembered is not None:
        _say_countdown(remembered)
        return remembered, []
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="judge-status") as pool:
        listed = pool.submit(read_entry, settings)
        # around the retirement the judge's own answer is asked for, not remembered: it is what says "gone"
        probed = pool.submit(provider_probe.probe_error, use, settings, fresh=_near(None))
        entry = listed.result()
        _say_countdown(entry)
        if entry is not None and entry.gone:
            probed.exception()  # waited for, never raised: the list has answered for it
            return entry, []
        err, passed = probed.result()
    if entry is not None:  # the list answered: the next run a moment later need not read it again
        passed = [dataclasses.replace(p, listed=True, shutdown_date=entry.shutdown_date) for p in passed]
    routes = provider_probe._provider_settings(settings)
    key_env = provider_routes.key_env_for(use.provider, routes)
    if err is None:
        return entry or JudgeEntry(), passed
    if answered_gone(err):
        return JudgeEntry(gone=True, status=err.status, message=err.message,
                          shutdown_date=None if entry is None else entry.shutdown_date), []
    url = provider_routes.shown_base_url(use.provider, routes) or "the default host"
    refusal = provider_probe.refusal_line(use, err.kind, err.status, err.message, key_env=key_env, url=url)
    if refusal is not None:
        raise UserError(refusal)
    return entry or JudgeEntry(), []
