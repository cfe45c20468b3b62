"""Measure a candidate judge against the official verdicts: the calibration record a successor-judged run cites.

The command (its parser, ``main()`` and help text) is ``lme/cli/judge_agreement.py``."""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
from pathlib import Path
from typing import Any, Mapping, Sequence

from lme.core import fileio
from lme.judge import official
from lme.judge import request_shapes
from lme.judge.agreement_figures import agreement_report
from lme.core.records import Verdict
from lme.store import run_store
from lme.judge import verdict_archive
from lme.core.errors import UserError
from lme.core.facts import AGREEMENT_REGISTRY, OFFICIAL_JUDGE_MODEL, STATE_DIR, is_abstention, is_official_judge, is_offline


def registry_path(project: str | Path) -> Path:
    return Path(project) / STATE_DIR / AGREEMENT_REGISTRY


def _text_sha(text: Any) -> str:
    return hashlib.sha256(str(text).encode("utf-8")).hexdigest()


def official_records(project: Path, run_id: str | None, archive: Path | None, *, every: bool = False
                     ) -> tuple[list[dict[str, Any]], str]:
    """The official verdicts to re-judge, as archive lines (which carry question, answer and hypothesis).

    ``every``: every official verdict the project holds, once per prompt: its archive (``verdicts.jsonl``) and the
    official verdicts of all its runs (several runs, several hypothesis sources: the largest calibration set)."""
    if every:
        seen: dict[tuple[str, str], dict[str, Any]] = {}
        own = verdict_archive.archive_path(project)
        for line in (verdict_archive.read_archive(own)[1] if own.is_file() else []):
            seen.setdefault((line["prompt_sha256"], line["model"]), line)
        for line in verdict_archive.run_verdicts(run_store.runs_dir(project)):
            seen.setdefault((line["prompt_sha256"], line["model"]), line)
        return list(seen.values()), "every official verdict of the project (its archive and runs)"
    if archive is not None:
        return verdict_archive.read_archive(archive)[1], f"archive {archive}"
    run_dir = run_store.run_dir_for(run_store.runs_dir(project), run_store.validate_run_id(run_id or ""))
    if not run_store.has_meta(run_dir):
        raise UserError(f"no run {run_id!r} at {run_dir}", fix="list runs in .longmemeval-benchmarks/runs/")
    lines, endpoints = [], verdict_archive.run_endpoints(run_dir)
    for row in run_store.iter_rows(run_dir):
        line = verdict_archive.verdict_line(row, f"run {run_dir.name}", endpoints=endpoints)
        if line is not None:
            lines.append(line)
    last = {line["question_id"]: line for line in lines}  # the last row per question is its result
    return list(last.values()), f"run {run_dir.name}"


def measure(records: Sequence[Mapping[str, Any]], candidate_provider: str, candidate_model: str,
            longmemeval_root: str | Path, llm: Any, *, concurrency: int = 4, shape: Any = None) -> dict[str, Any]:
    """Judge every record with the candidate (``shape``: its request shape, default its family's); the report plus
    ``skipped`` (prompt mismatch) and ``errors`` (a failed call, or a response naming another model)."""
    shape = shape or request_shapes.shape_for(candidate_provider, candidate_model)
    builder = official.load_prompt_builder(longmemeval_root)
    jobs, skipped = [], []
    for rec in records:
        if rec.get("question_type") is None or rec.get("hypothesis") is None or rec.get("question") is None:
            skipped.append({"question_id": rec.get("question_id"), "why": "no question, type or hypothesis"})
            continue
        try:
            prompt = official.build_prompt(builder, rec["question_type"], rec["question"], rec["answer"],
                                             rec["hypothesis"], abstention=is_abstention(str(rec["question_id"])),
                                             question_id=str(rec["question_id"]))
        except official.JudgeInputError as err:
            skipped.append({"question_id": rec.get("question_id"), "why": str(err)})
            continue
        if hashlib.sha256(prompt.encode("utf-8")).hexdigest() != rec["prompt_sha256"]:
            skipped.append({"question_id": rec.get("question_id"), "why": "prompt differs from the officially judged one"})
            continue
        jobs.append((rec, official.judge_request(prompt, candidate_provider, candidate_model, shape)))

    def one(job: tuple[Mapping[str, Any], Any]) -> dict[str, Any]:
        rec, request = job
        completion = official.checked_reply(llm.complete(request), request)
        return {**_pair_base(rec), "candidate": official.label_from_reply(completion.text or ""),
                "candidate_raw": completion.text, "returned_model": completion.model}

    pairs, errors = [], []
    with cf.ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        futures = {pool.submit(one, job): job[0] for job in jobs}
        for fut in cf.as_completed(futures):
            try:
                pairs.append(fut.result())
            except Exception as err:  # noqa: BLE001 - a failed call is counted and named, never a label
                rec = futures[fut]
                errors.append({"question_id": rec["question_id"], "kind": getattr(err, "kind", type(err).__name__),
                               "message": str(err)[:300]})
    return _full_report(pairs, skipped, errors)


def _pair_base(rec: Mapping[str, Any]) -> dict[str, Any]:
    """The official side of a pair: which prompt (question, hypothesis sha256, prompt sha256), whose answers
    (``source``: the run the official judge judged, as the archive line records it) and its label."""
    return {"question_id": rec["question_id"], "question_type": rec.get("question_type"),
            "hypothesis_sha256": _text_sha(rec.get("hypothesis")), "prompt_sha256": rec.get("prompt_sha256"),
            "source": rec.get("source"), "official": bool(rec["label"])}


def _full_report(pairs: list[dict[str, Any]], skipped: list[dict[str, Any]], errors: list[dict[str, Any]]
                 ) -> dict[str, Any]:
    report = agreement_report(pairs)
    report["returned_models"] = sorted({p["returned_model"] for p in pairs})
    report["skipped"] = sorted(skipped, key=lambda s: str(s["question_id"]))
    report["errors"] = sorted(errors, key=lambda e: str(e["question_id"]))
    return report


def candidate_run(project: Path, run: str) -> tuple[str, str, dict[tuple[str, str], dict[str, Any]], str]:
    """A run judged by the candidate: (provider, model, its verdicts by (question_id, prompt_sha256), source).

    ``run`` is a run id of the project or a run directory. No call is made: the run's own verdicts are compared."""
    path = Path(run)
    if not path.is_dir():
        path = run_store.run_dir_for(run_store.runs_dir(project), run_store.validate_run_id(run))
    if not run_store.has_meta(path):
        raise UserError(f"--candidate-run {run}: no run at {path}", fix="give a run id or a run directory")
    data = run_store.load_run(path)
    provider, model = data.judge.provider, data.judge.model
    if is_offline(provider):
        raise UserError(f"--candidate-run {run} was judged offline: the offline judge is not a candidate",
                        fix="pass a run judged by provider:model")
    if is_official_judge(provider, model):
        raise UserError(f"--candidate-run {run} was judged by the official judge: there is no candidate to measure",
                        fix="pass a run judged by another judge, e.g. run_benchmark.py --hypotheses FILE "
                            "--judge-model provider:model")
    verdicts = {}
    for qid, row in data.rows.items():
        verdict = row.judgment
        if row.judged and verdict is not None and verdict.prompt_sha256:
            verdicts[(qid, str(verdict.prompt_sha256))] = verdict
    return str(provider), str(model), verdicts, f"run {data.run_id}"


def measure_against_run(records: Sequence[Mapping[str, Any]],
                        candidate: Mapping[tuple[str, str], Verdict]) -> dict[str, Any]:
    """The report for verdicts the candidate already gave (``candidate_run``): an official record is paired with
    the candidate's verdict on the same prompt (same question, hypothesis and template), else skipped."""
    pairs, skipped = [], []
    for rec in records:
        verdict = candidate.get((str(rec.get("question_id")), str(rec.get("prompt_sha256"))))
        if verdict is None:
            skipped.append({"question_id": rec.get("question_id"),
                            "why": "the candidate run has no verdict on this prompt (another hypothesis, or not judged)"})
            continue
        pairs.append({**_pair_base(rec), "candidate": bool(verdict.label), "candidate_raw": verdict.raw,
                      "returned_model": verdict.model})
    return _full_report(pairs, skipped, [])


def run_shape(verdicts: Mapping[tuple[str, str], Verdict]) -> dict[str, Any]:
    """The request shape a candidate run's verdicts record (upstream's for rows written before shapes were)."""
    for verdict in verdicts.values():
        if verdict.request_shape:
            return dict(verdict.request_shape)
    return request_shapes.UPSTREAM.to_dict()


def append_record(project: Path, record: Mapping[str, Any]) -> Path:
    path = registry_path(project)
    fileio.ensure_writable_dir(path.parent)
    fileio.append_jsonl(path, record)
    return path


def latest(project: str | Path, provider: str | None, model: str | None, *,
           shape: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """The last measured agreement of ``provider:model`` with the official verdicts in this project, or None.
    ``shape``: only a measurement made with this request shape counts (one recorded before shapes were made with
    upstream's)."""
    return latest_of(records(project), provider, model, shape=shape)


def records(project: str | Path) -> tuple[dict[str, Any], ...]:
    """Every measurement in the project's registry, in order (unreadable lines left out); () when it has none."""
    return tuple(rec for _, rec in fileio.iter_jsonl(registry_path(project), skip_bad=True))


def latest_of(measured: Sequence[Mapping[str, Any]], provider: str | None, model: str | None, *,
              shape: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """``latest`` over ``measured`` (``records``' lines): the last one of ``provider:model`` with ``shape``."""
    if not provider or not model:
        return None
    found = None
    for rec in measured:
        if rec.get("candidate_provider") != provider or model not in (rec.get("candidate_model"),
                                                                      *rec.get("returned_models", [])):
            continue
        recorded = rec.get("request_shape") or request_shapes.UPSTREAM.to_dict()
        if shape is None or dict(recorded) == dict(shape):
            found = dict(rec)
    return found


COMPACT_FIELDS = ("candidate", "candidate_provider", "candidate_model", "request_shape", "verdict_set_sha256", "n",
                  "agreement", "kappa", "kappa_ci95", "measured_at", "source")


def compact(rec: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The figures a scorecard carries for a run judged by the candidate (no per-item lists)."""
    if rec is None:
        return None
    flips = rec.get("flips")
    return {**{k: rec.get(k) for k in COMPACT_FIELDS},
            "flips": flips if isinstance(flips, int) else len(flips or [])}


def describe(rec: Mapping[str, Any]) -> str:
    flips = rec.get("flips")
    flips = flips if isinstance(flips, int) else len(flips or [])
    kappa = "undefined" if rec.get("kappa") is None else f"{rec['kappa']:.3f}"
    interval = rec.get("kappa_ci95")
    if isinstance(interval, (list, tuple)) and len(interval) == 2:
        kappa += f", 95% CI {interval[0]:.3f}-{interval[1]:.3f}"
    agreement = "—" if rec.get("agreement") is None else f"{rec['agreement']:.4f}"
    shape = f", request shape {request_shapes.describe(rec.get('request_shape'))}" if rec.get("request_shape") else ""
    return (f"agreement with the official {OFFICIAL_JUDGE_MODEL} verdicts {agreement} (Cohen's kappa {kappa}) on "
            f"{rec.get('n')} items, {flips} flip(s){shape} (judge_agreement.py, "
            f"{rec.get('measured_at')}, {rec.get('source')})")


def render_markdown(rec: Mapping[str, Any]) -> str:
    c = rec["confusion"]
    lines = [f"# Judge agreement: {rec['candidate']} vs the official {OFFICIAL_JUDGE_MODEL}", "",
             describe(rec), "",
             "| | candidate yes | candidate no |", "|---|---:|---:|",
             f"| official yes | {c['official_true_candidate_true']} | {c['official_true_candidate_false']} |",
             f"| official no | {c['official_false_candidate_true']} | {c['official_false_candidate_false']} |", "",
             "| question type | n | agreement | no -> yes | yes -> no |", "|---|---:|---:|---:|---:|"]
    for qtype, t in rec["per_type"].items():
        lines.append(f"| {qtype} | {t['n']} | {t['agreement']:.4f} | {t['to_true']} | {t['to_false']} |")
    lines += _rates_lines(rec)
    if rec["flips"]:
        lines += ["", "Flipped prompts (question id, hypothesis sha256): " + ", ".join(
            f"{f['question_id']} {str(f.get('hypothesis_sha256') or '?')[:12]} "
            f"({'no -> yes' if f['candidate'] else 'yes -> no'})" for f in rec["flips"])]
    if rec["skipped"] or rec["errors"]:
        lines += ["", f"Not compared: {len(rec['skipped'])} skipped (prompt or record mismatch), "
                      f"{len(rec['errors'])} candidate call error(s): "
                      + ", ".join(str(e["question_id"]) for e in [*rec["skipped"], *rec["errors"]][:20])]
    return "\n".join(lines) + "\n"


def _rate(hit: int, miss: int) -> str:
    return "—" if hit + miss == 0 else f"{hit / (hit + miss):.4f}"


def _rates_lines(rec: Mapping[str, Any]) -> list[str]:
    """Sensitivity and specificity overall and per hypothesis source: what a successor-judged run's estimate of
    the official accuracy is corrected with (records measured before sources were kept show none per source)."""
    c = rec["confusion"]
    lines = ["", f"Sensitivity (yes where the official judge said yes) "
                 f"{_rate(c['official_true_candidate_true'], c['official_true_candidate_false'])}, specificity (no "
                 f"where it said no) {_rate(c['official_false_candidate_false'], c['official_false_candidate_true'])}."]
    sources = rec.get("per_source") or {}
    if sources:
        lines += ["", "| hypothesis source | n | agreement | sensitivity | specificity |", "|---|---:|---:|---:|---:|"]
        for source, entry in sources.items():
            t = entry["confusion"]
            lines.append(f"| {source} | {entry['n']} | {_rate(entry['agree'], entry['n'] - entry['agree'])} | "
                         f"{_rate(t['official_true_candidate_true'], t['official_true_candidate_false'])} | "
                         f"{_rate(t['official_false_candidate_false'], t['official_false_candidate_true'])} |")
    return lines
