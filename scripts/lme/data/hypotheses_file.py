"""A hypotheses file judged as a run (``run_benchmark.py --hypotheses FILE``): read it, check it, look answers up.

``references/SPEC.md`` ("Judging a hypotheses file") states the file's format, what is refused before anything is
written (each one line, exit 2), the ``missing_hypothesis`` error row of a question the file lacks, and the
file's ``sha256`` a resume checks.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Collection, Mapping

from lme.core import fileio
from lme.core.errors import UserError
from lme.core.facts import HYPOTHESES_TARGET
from lme.data.upstream_files import load_hypotheses
from lme.data import dataset

MISSING_HYPOTHESIS = "missing_hypothesis"
"""The error kind of a question the file has no hypothesis for."""
FLAG = "--hypotheses"


@dataclass(frozen=True)
class HypothesesFile:
    path: str
    sha256: str
    """sha256 of the file's bytes (as stored: a ``.xz`` file hashes compressed)."""
    hypotheses: Mapping[str, str]
    """question_id -> hypothesis, in file order, exactly as written (judged unstripped, as upstream does)."""
    record_of: Mapping[str, int]
    """question_id -> its 1-based record number in the file."""


def file_sha256(path: str | Path, *, flag: str = FLAG) -> str:
    try:
        return fileio.sha256_file(path, follow_symlinks=True)
    except FileNotFoundError:
        raise UserError(f"{flag} {path}: no such file",
                        fix='give the JSONL file your system wrote, one {"question_id", "hypothesis"} per line') from None
    except OSError as err:
        raise UserError(f"{flag} {path}: cannot read it ({err.strerror or err})") from None


_CACHE: dict[tuple[str, int, int], HypothesesFile] = {}
_CACHE_LOCK = threading.Lock()


def load(path: str | Path, *, flag: str = FLAG) -> HypothesesFile:
    """The file, read and checked (UserError naming file and record); cached per (path, size, mtime)."""
    path = Path(path)
    try:
        stat = path.stat()
    except OSError:
        file_sha256(path, flag=flag)  # the one-line error for a missing or unreadable file
        raise
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    with _CACHE_LOCK:
        found = _CACHE.get(key)
    if found is None:
        found = _read(path, flag)
        with _CACHE_LOCK:
            _CACHE[key] = found
    return found


def _read(path: Path, flag: str) -> HypothesesFile:
    sha256 = file_sha256(path, flag=flag)
    hypotheses: dict[str, str] = {}
    record_of: dict[str, int] = {}
    for number, entry in enumerate(load_hypotheses(path, flag=flag), 1):
        qid, text = entry["question_id"], entry["hypothesis"]
        where = f"{flag} {path}: record {number}"
        if isinstance(qid, bool) or not isinstance(qid, (str, int)):
            raise UserError(f"{where}: question_id {qid!r} is not a string", fix="write each question_id as text")
        qid = str(qid)
        if isinstance(text, bool) or not isinstance(text, (str, int, float)):
            raise UserError(f"{where} (question_id {qid}): the hypothesis is {_json_type(text)}, not text",
                            fix='write the answer as a string; an empty answer is ""')
        if qid in hypotheses:
            raise UserError(
                f"{flag} {path}: question_id {qid} appears twice (records {record_of[qid]} and {number}); a run "
                "judges one hypothesis per question",
                fix="keep one line per question_id (upstream's evaluate_qa.py would judge and count both)")
        hypotheses[qid] = str(text)  # a number as upstream formats it into the judge prompt
        record_of[qid] = number
    return HypothesesFile(path=str(path), sha256=sha256, hypotheses=hypotheses, record_of=record_of)


def _json_type(value: Any) -> str:
    return {type(None): "null", bool: "true/false", list: "a list", dict: "an object"}.get(type(value), "not text")


def options_for(file: str, stored: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The target options of a run judging ``file``: its path and sha256. Resuming a run that judged the same
    path keeps the run's recorded sha256, so a changed file is refused by ``check_run_inputs``, not run."""
    stored_options = dict((stored or {}).get("target_options") or {})
    if (stored or {}).get("target") == HYPOTHESES_TARGET and stored_options.get("file") == file:
        return stored_options
    return {"file": file, "sha256": file_sha256(file)}


def check_run_inputs(settings: Any) -> tuple[HypothesesFile, list[str]]:
    """Refuse a run whose file is missing, malformed, changed since the run started, or names questions the
    dataset does not hold; returns the file and the dataset's question ids it has no hypothesis for."""
    options = dict(settings.target_options)
    if not options.get("file"):
        raise UserError("target hypotheses has no file to judge", fix="run run_benchmark.py --hypotheses FILE")
    hf = load(options["file"])
    recorded = options.get("sha256")
    if recorded and recorded != hf.sha256:
        raise UserError(
            f"hypotheses file {hf.path} changed since this run started (sha256 {hf.sha256[:12]}, the run's "
            f"{str(recorded)[:12]})",
            fix="restore the file to resume this run, or judge the changed file as a new run (omit --run-id)")
    ids = [qid for qid, _ in dataset.scan(Path(settings.dataset_path)).questions]
    return hf, check_against_dataset(hf, ids, settings.dataset_path)


def check_against_dataset(hf: HypothesesFile, dataset_ids: Collection[str], dataset_path: str) -> list[str]:
    """UserError when the file names questions the dataset lacks; else the dataset ids the file does not cover."""
    known = set(dataset_ids)
    unknown = [qid for qid in hf.hypotheses if qid not in known]
    if unknown:
        shown = ", ".join(unknown[:3]) + (" ..." if len(unknown) > 3 else "")
        raise UserError(
            f"{FLAG} {hf.path}: {len(unknown)} question id(s) are not in the dataset {dataset_path} "
            f"(first: {shown}; record {hf.record_of[unknown[0]]})",
            fix="judge the file against the dataset it answers (--dataset or --variant), or drop those lines")
    return [qid for qid in dataset_ids if qid not in hf.hypotheses]
