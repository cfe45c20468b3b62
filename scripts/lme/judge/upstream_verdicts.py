"""Upstream's ``*.eval-results-gpt-4o`` files as verdict-archive lines: the field's official verdicts, imported.

Upstream keeps neither the prompt nor the judge's reply, so each prompt is rebuilt from the dataset's question and
the line's hypothesis exactly as ``judge_shim.py --hyp-file`` builds it, and hashed (SPEC.md "Judge continuity":
what is refused, and what an imported line records).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Mapping

from lme.core import config, fileio
from lme.core.errors import UserError
from lme.core.facts import OFFICIAL_JUDGE_MODEL, OFFICIAL_JUDGE_PROVIDER
from lme.data import upstream_files
from lme.judge import official, verdict_archive
from lme.judge.request_shapes import UPSTREAM

LABEL_KEY = "autoeval_label"
SHOWN = 5
"""How many faulty lines a refusal names (the count says how many there are)."""


def is_upstream_file(records: list[Any]) -> bool:
    """The records are upstream's eval-results lines (not an export of ours)."""
    first = next((r for r in records if isinstance(r, Mapping)), None)
    return first is not None and LABEL_KEY in first and "prompt_sha256" not in first


def read_records(path: Path) -> list[Any]:
    return upstream_files.load_records(Path(path), limits=upstream_files.HYPOTHESES_LIMITS)


def archive_lines(path: Path, records: list[Any], references: Mapping[str, Mapping[str, Any]],
                  builder: official.PromptBuilder, file_sha256: str) -> list[dict[str, Any]]:
    """Archive lines (before ``verdict_archive.imported`` gives them their origin) for upstream's ``records``."""
    if not builder.is_upstream:
        raise UserError(f"the judge prompt function in {builder.path} is not upstream's: the prompts rebuilt from it "
                        "would not be the ones the official judge saw", fix="point --longmemeval-root at an "
                        "unmodified clone of xiaowu0162/LongMemEval")
    lines, problems = [], []
    for number, record in enumerate(records, 1):
        problem = _problem(record, references)
        if problem:
            problems.append(f"line {number}{_qid(record)}: {problem}")
            continue
        lines.append(_line(record, references[str(record["question_id"])], builder, file_sha256, number,
                           Path(path).name))
    if problems:
        more = f" (and {len(problems) - SHOWN} more)" if len(problems) > SHOWN else ""
        raise UserError(f"{path}: {len(problems)} of {len(records)} line(s) cannot be imported: "
                        f"{'; '.join(problems[:SHOWN])}{more}; nothing was imported",
                        fix="pass the LongMemEval data file the hypotheses answer (--ref-file), or fix those lines")
    return lines


def _qid(record: Any) -> str:
    qid = record.get("question_id") if isinstance(record, Mapping) else None
    return f" ({qid})" if qid is not None else ""


def _problem(record: Any, references: Mapping[str, Mapping[str, Any]]) -> str | None:
    if not isinstance(record, Mapping):
        return "not a JSON object"
    if not isinstance(record.get("question_id"), str):
        return "no question_id"
    auto = record.get(LABEL_KEY)
    if not isinstance(auto, Mapping) or not isinstance(auto.get("label"), bool):
        return f"{LABEL_KEY}.label is not true/false"
    if auto.get("model") != OFFICIAL_JUDGE_MODEL:
        return f"judged by {auto.get('model')!r}, not the official {OFFICIAL_JUDGE_MODEL} (the archive holds only " \
               "official verdicts)"
    if "hypothesis" not in record or record["hypothesis"] is None:
        return "no hypothesis"
    if record["question_id"] not in references:
        return "its question id is not in the dataset"
    return None


def _line(record: Mapping[str, Any], ref: Mapping[str, Any], builder: official.PromptBuilder,
          file_sha256: str, number: int, name: str) -> dict[str, Any]:
    qid = str(record["question_id"])
    item = official.Judged(qid, ref["question_type"], ref["question"], ref["answer"], str(record["hypothesis"]))
    prompt = official.prompt_for(builder, item)
    act = hashlib.sha256(f"upstream\0{file_sha256}\0{number}".encode("utf-8")).hexdigest()
    return {
        "schemaVersion": verdict_archive.ARCHIVE_VERSION, "verdict_id": act,
        "prompt_sha256": hashlib.sha256(prompt.encode("utf-8")).hexdigest(), "model": OFFICIAL_JUDGE_MODEL,
        "provider": OFFICIAL_JUDGE_PROVIDER, "official": True, "label": bool(record[LABEL_KEY]["label"]), "raw": None,
        "endpoint_host": None, "request_shape": UPSTREAM.to_dict(), "question_id": qid,
        "question_type": item.question_type, "question": item.question, "answer": item.answer,
        "hypothesis": item.hypothesis, "template_sha256": builder.template_sha256, "judged_at": None,
        "source": f"upstream file {name}:{number}",
    }


def references(project: Path, ref_file: Path | None, cfg: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The questions an upstream file's hypotheses answer: ``ref_file``, else the project's ``datasetPath``."""
    if ref_file is not None:
        return upstream_files.load_references(ref_file)
    configured = cfg.get("datasetPath")
    path = config.resolve_path(project, str(configured)) if configured else None
    if path is None or not path.is_file():
        raise UserError(f"an upstream eval-results file needs the dataset its hypotheses answer: the project has none "
                        f"at {path or 'datasetPath'}", fix="pass --ref-file with the LongMemEval data file")
    return upstream_files.load_references(path)


def file_lines(path: Path, refs: Mapping[str, Mapping[str, Any]], longmemeval_root: str | Path | None
               ) -> tuple[list[dict[str, Any]], str, int]:
    """``(archive lines, the file's sha256, its record count)`` of an upstream eval-results file."""
    records = read_records(path)
    builder = official.load_prompt_builder(longmemeval_root)
    sha = fileio.sha256_file(path, follow_symlinks=True)
    return archive_lines(path, records, refs, builder, sha), sha, len(records)


def import_file(project: Path, path: Path, refs: Mapping[str, Mapping[str, Any]],
                longmemeval_root: str | Path | None) -> dict[str, Any]:
    """Add an upstream eval-results file's verdicts to the project's archive (every line checked first)."""
    lines, sha, n = file_lines(path, refs, longmemeval_root)
    fileio.ensure_writable_dir(verdict_archive.archive_path(project).parent)
    result = verdict_archive.import_lines(project, verdict_archive.imported(lines, path, sha, "upstream"))
    return {**result, "format": "upstream", "file_sha256": sha, "lines": n}
