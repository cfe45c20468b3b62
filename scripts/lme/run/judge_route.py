"""Which judge a run calls, decided before it starts: none (the verdict archive covers every pending hypothesis),
the official judge, or (the official judge gone) the archive plus a successor, or the successor throughout (a loop
run after the day, ``successor_only``). ``prepare(settings, run_id)`` replaces the run's plain probe
(``provider_probe.probe``) and returns the settings the run uses. The rules: ``references/SPEC.md``, "When the
official judge is gone"; a run that generates its answers is refused with ``OfficialJudgeGone``, a UserError the
loop's run turns into its halt.
"""

from __future__ import annotations

import dataclasses
import sys
from concurrent.futures import ThreadPoolExecutor

from lme.core.errors import UserError
from lme.core.facts import HYPOTHESES_TARGET, is_official_judge, is_offline
from lme.judge import agreement, official, request_shapes, verdict_archive
from lme.models import judge_entry, provider_probe, recent_probes
from lme.run import dry_run, judge_preview
from lme.run.settings import RunSettings


def archive_covers(settings: RunSettings, run_id: str | None) -> tuple[int, int] | None:
    """``(pending items, items needing a judge call)`` of a ``--hypotheses`` run with the official judge and a
    verdict archive; None for any other run (its hypotheses are not known before it runs). An item the file has
    no line for needs no judge (it is an error row)."""
    if not judge_preview.applies(settings) or not is_official_judge(settings.judge_provider, settings.judge_model):
        return None
    archive = verdict_archive.for_project(settings.project)
    if archive is None or not len(archive):
        return None
    previewer = judge_preview.JudgePreviewer(settings)
    pending = needed = 0
    for q in dry_run.pending_questions(settings, run_id):
        pending += 1
        call = previewer.call(q)
        needed += call is not None and not call.archived
    return pending, needed


class OfficialJudgeGone(UserError):
    """The start-up check found the official judge gone (404 / 410) and no successor or archive can judge the run:
    nothing was started."""


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def successor_line(settings: RunSettings) -> str:
    """``the successor openai:o3-mini (calibrated: ...)`` or ``(uncalibrated: ...)``."""
    provider, model = settings.successor or ("", "")
    shape = request_shapes.shape_for(provider, model, settings.judge_reasoning_effort).to_dict()
    record = agreement.latest(settings.project, provider, model, shape=shape)
    cited = (f"calibrated: {agreement.describe(record)}" if record else
             "uncalibrated: no judge_agreement.py measurement of it with this request shape in this project")
    return f"the successor {provider}:{model} ({cited})"


def prepare(settings: RunSettings, run_id: str | None) -> tuple[RunSettings, list[recent_probes.Passed]]:
    """Returns ``settings``, with ``official_judge_gone`` set when the run must not call the official judge, and
    the probes that passed now (``recent_probes.remember`` them once the run has started)."""
    if settings.successor_only and settings.successor is not None:
        return _successor_throughout(settings)
    covered = archive_covers(settings, run_id)
    if covered is not None and covered[0] and covered[1] == 0:
        _say(f"all {covered[0]} pending hypotheses have an archived official verdict: no judge call, no judge probe")
        return settings, provider_probe.probe(settings, only=[u for u in provider_probe.uses(settings)
                                                              if u.role != "judge"])
    if is_offline(settings.judge_provider) or not is_official_judge(settings.judge_provider, settings.judge_model):
        return settings, provider_probe.probe(settings)
    judge_use = (settings.judge_provider, settings.judge_model)
    others = [u for u in provider_probe.uses(settings) if u.role != "judge" and (u.provider, u.model) != judge_use]
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="probe") as pool:  # at once: one round trip
        target = pool.submit(provider_probe.probe, settings, only=others)  # a reader on the judge's model: the
        judge = pool.submit(judge_entry.status, settings)  # judge's probe covers it (one probe per model)
    passed = target.result()  # the target's refusal first, as the plain probe orders them
    entry, judge_passed = judge.result()
    passed += judge_passed
    if not entry.gone:
        return settings, passed
    gone = f"the official judge {settings.judge_provider}:{settings.judge_model} is gone ({entry.why})"
    if settings.successor is not None:
        provider, model = settings.successor
        passed += provider_probe.probe(settings, only=[provider_probe.Use("judge", provider, model)])
        _say(f"{gone}: archived official verdicts score as official; the hypotheses the archive lacks are judged "
             f"by {successor_line(settings)}; the figure that mixes them is not official")
        return dataclasses.replace(settings, official_judge_gone=True), passed
    if settings.target == HYPOTHESES_TARGET:
        _say(f"{gone}: archived official verdicts score as official; the hypotheses the archive lacks stay pending")
        return dataclasses.replace(settings, official_judge_gone=True), passed
    raise OfficialJudgeGone(f"{gone}; nothing was started: {official.CONTINUITY_HINT}")


def _successor_throughout(settings: RunSettings) -> tuple[RunSettings, list[recent_probes.Passed]]:
    """A loop run after the day: the target and the successor are probed, never the official judge (the loop
    recorded it gone), and the run makes no official call."""
    provider, model = settings.successor or ("", "")
    others = [u for u in provider_probe.uses(settings) if u.role != "judge"]
    passed = provider_probe.probe(settings, only=[*others, provider_probe.Use("judge", provider, model)])
    _say(f"the loop's judge after the day: {successor_line(settings)}, for every item (no archived official "
         "verdict, no official call); its figures are not official")
    return dataclasses.replace(settings, official_judge_gone=True), passed
