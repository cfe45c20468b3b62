"""Upstream's file flow for the judge (``judge_shim.py --hyp-file F --ref-file R``, upstream's ``evaluate_qa.py``
contract): judge every line of a hypotheses file and write it back with its label, in upstream's bytes.
"""

from __future__ import annotations

import concurrent.futures as cf
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from lme.core import config
from lme.models import providers
from lme.models.call_cache import CallCache
from lme.core.errors import UserError
from lme.core.facts import CACHE_DIR
from lme.judge import verdict_sources
from lme.judge.official import Judged, JudgeRoute, judge_verdict, official_judge_gone
from lme.models.provider_errors import ProviderError
from lme.core.fileio import write_atomic_bytes
from lme.models.rate_pacer import Pacer
from lme.core.records import LLM, Verdict
from lme.models.run_gateway import RunGateway
from lme.data.upstream_files import load_hypotheses, load_references, upstream_bytes


def check_out_path(out: Path) -> None:
    """Refuse an output path that cannot be written before any judge call is paid for."""
    if out.is_dir():
        raise UserError(f"--out {out} is a directory", fix="pass a file path for the judged lines")
    if not out.parent.is_dir():
        raise UserError(f"--out {out}: folder {out.parent} does not exist", fix="create it or pick another --out")
    try:
        fd, probe = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".probe")
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        raise UserError(f"--out {out}: cannot write in {out.parent} ({err.strerror or err})") from None


def successor_path(out: Path) -> Path:
    """Where the successor's verdicts of a file go: ``<out>.successor.jsonl`` (never upstream's output file)."""
    return Path(f"{out}.successor.jsonl")


@dataclass(frozen=True)
class FileJudgeOptions:
    """How the lines of a hypotheses file are judged (``judge_file``)."""

    longmemeval_root: Path
    """Upstream's checkout: the judge prompt is read from it."""
    provider: str
    model: str
    archive: Any = None
    """The project's verdict archive (``verdict_archive.for_project``): an archived verdict is used instead of a call."""
    repeat: int = 1
    """K > 1: each line also gets ``autoeval_verdicts`` (all K verdicts; the first is the label)."""
    registry: Any = None
    """A ``judge_stability.StabilityRegistry`` that gets the counts of repeated verdicts."""
    concurrency: int = 1
    successor: tuple[str, str] | None = None
    """``(provider, model)`` that judges the lines the archive lacks once the official judge answers 404 / 410."""
    reasoning_effort: str | None = None
    calibration: Mapping[str, Any] | None = None
    """The successor's calibration record, written into each of its lines."""
    archive_as: str | None = None
    """``judge_shim <file>``: the official verdicts made here go into ``archive`` as they are made."""


Job = tuple[str, dict[str, Any], dict[str, Any]]
"""One line to judge: (question id, the hypotheses line, its reference item)."""


def judge_file(hyp_file: Path, ref_file: Path, out: Path, options: FileJudgeOptions, llm: LLM | None = None, *,
               make_llm: Callable[[], LLM] | None = None, counts: dict[str, int] | None = None) -> tuple[int, int]:
    """Upstream's file flow: judge each hypothesis line, write it back with ``autoeval_label``. -> (correct, n).

    ``options.concurrency`` lines are judged at once (through ``llm``, e.g. ``file_gateway``'s limiter and call
    cache); the output keeps the input's order, so it is the same whatever the concurrency. ``out`` is replaced
    atomically once every line is judged: a failed run leaves a previous ``out`` as it was (the verdicts it got are in
    the cache). ``make_llm`` builds the LLM once the inputs are checked (a mistake in them creates no call cache).

    ``options.successor``: once the official judge answers 404 / 410, the lines the archive lacks are judged by it.
    Their verdicts never enter ``out`` (upstream's ``print_qa_metrics.py`` accepts only the official snapshot there):
    they go to ``successor_path(out)`` as ``{question_id, hypothesis, successor_label: {model, label, provider,
    request_shape, calibration}}`` (still a hypotheses file upstream's judge can read). A response naming another
    model than the pinned one stops the file with nothing written (``JudgeModelMismatch``).
    ``counts`` (a dict) receives the verdicts by source: ``verdict_sources.count``.
    """
    out = Path(out)
    jobs = _jobs(hyp_file, ref_file, out)
    if make_llm is not None and jobs:
        llm = make_llm()
    verdicts = _in_order(lambda job: _judge_line(job, options, llm), jobs, options.concurrency)
    if counts is not None:
        counts.update(verdict_sources.count(verdicts))
    lines, successor_lines = _output_lines(jobs, verdicts, options, f"judge_shim {hyp_file}")
    try:
        write_atomic_bytes(out, upstream_bytes(lines))
        if successor_lines:
            write_atomic_bytes(successor_path(out), upstream_bytes(successor_lines))
    except OSError as err:
        raise UserError(f"cannot write --out {out}: {err.strerror or err}") from None
    return sum(bool(v.label) for v in verdicts), len(verdicts)


def _jobs(hyp_file: Path, ref_file: Path, out: Path) -> list[Job]:
    """The inputs read and ``out`` checked before any call: the lines whose question is in the references (the
    others are named on stderr and skipped)."""
    if out.resolve() in (Path(hyp_file).resolve(), Path(ref_file).resolve()):
        raise UserError(f"--out {out} is one of the input files", fix="pick another --out")
    references = load_references(ref_file)
    hypotheses = load_hypotheses(hyp_file)
    check_out_path(out)
    jobs = []
    for entry in hypotheses:
        qid = str(entry["question_id"])
        if qid not in references:
            print(f"skipping {qid}: not in {ref_file}", file=sys.stderr)
            continue
        jobs.append((qid, entry, references[qid]))
    return jobs


def _judge_line(job: Job, options: FileJudgeOptions, llm: LLM | None) -> Verdict:
    """One line's verdict: the official judge (or its archived verdict), else the successor once it is gone."""
    qid, entry, ref = job
    judged = Judged(qid, ref["question_type"], ref["question"], ref["answer"], str(entry["hypothesis"]))
    route = JudgeRoute(options.longmemeval_root, options.provider, options.model, llm, repeat=options.repeat,
                       reasoning_effort=options.reasoning_effort)
    try:
        return judge_verdict(judged, route.to(options.provider, options.model, archive=options.archive,
                                              archive_as=options.archive_as))
    except ProviderError as err:
        if options.successor is None or not official_judge_gone(err, options.provider, options.model):
            raise
    return judge_verdict(judged, route.to(*options.successor, successor=True))


def _output_lines(jobs: Sequence[Job], verdicts: Sequence[Verdict], options: FileJudgeOptions,
                  source: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(lines of ``out``, lines of the successor's file), in the input's order, each the input line's keys in its
    order and then ours, as upstream adds ``autoeval_label``; repeated verdicts are recorded in ``options.registry``
    under ``source``."""
    lines: list[dict[str, Any]] = []
    successor_lines: list[dict[str, Any]] = []
    for (qid, entry, _ref), verdict in zip(jobs, verdicts):
        line = dict(entry)
        if verdict.successor:
            calibration = None if options.calibration is None else dict(options.calibration)
            line["successor_label"] = {"model": verdict.model, "label": verdict.label, "provider": verdict.provider,
                                       "request_shape": dict(verdict.request_shape or {}),
                                       "calibration": calibration}
            successor_lines.append(line)
            continue
        line["autoeval_label"] = {"model": verdict.model, "label": verdict.label}
        if verdict.verdicts is not None:
            line["autoeval_verdicts"] = [dict(v) for v in verdict.verdicts]
            if options.registry is not None:
                options.registry.record(qid, verdict, source)
        lines.append(line)
    return lines, successor_lines


def _in_order(work: Callable[[Any], Any], jobs: Sequence[Any], concurrency: int) -> list[Any]:
    """``work`` over ``jobs``, at most ``concurrency`` at once, results in the jobs' order. The first failure (or
    Ctrl-C) starts no further job, lets the calls in flight finish (their replies reach the call cache), and is
    raised."""
    results: list[Any] = [None] * len(jobs)
    waiting = iter(enumerate(jobs))
    in_flight: dict[cf.Future, int] = {}
    with cf.ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="judge") as pool:
        while True:
            while len(in_flight) < max(1, concurrency):
                nxt = next(waiting, None)
                if nxt is None:
                    break
                in_flight[pool.submit(work, nxt[1])] = nxt[0]
            if not in_flight:
                return results
            done, _ = cf.wait(in_flight, return_when=cf.FIRST_COMPLETED)
            for fut in done:
                results[in_flight.pop(fut)] = fut.result()


def file_gateway(project: Path, cfg: Mapping[str, Any], concurrency: int, *, read_cache: bool = True) -> LLM:
    """The LLM of ``--hyp-file``: a run's gateway (``run_gateway``) with the project's call cache, the run's pacer
    (at most ``concurrency`` calls in flight, paced by the provider's limits), and the config's provider settings
    (``cfg``: ``project_config``)."""
    cache = None
    if cfg.get("cacheEnabled", True):
        cache_dir = config.resolve_path(project, cfg.get("cache_dir") or CACHE_DIR)
        cache = CallCache(cache_dir, read=read_cache)
    return RunGateway(settings=provider_settings(cfg), cache=cache,
                      limiter=Pacer(concurrency, limits=config.rate_limits(cfg)))


def provider_settings(cfg: Mapping[str, Any]) -> Any:
    named = cfg.get("providers") or {}
    return providers.ProviderSettings(
        base_urls={n: str(p["base_url"]) for n, p in named.items() if isinstance(p, Mapping) and p.get("base_url")},
        azure={k: str(v) for k, v in dict(named.get("azure") or {}).items()},
        timeout_s=float(cfg.get("requestTimeoutSeconds", 600)), max_attempts=int(cfg.get("maxAttempts", 8)))


def project_config(project: Path) -> dict[str, Any]:
    """The project's config.json, or {} when it has none (a file can be judged outside a project)."""
    return dict(config.load_config(project)) if config.config_path(project).is_file() else {}
