"""Upstream's judge-side files: its hypotheses file and its reference (dataset) file, as ``evaluate_qa.py`` reads them.

A file is a JSON array or JSON lines, plain or ``.xz``. A hypotheses line is ``{"question_id", "hypothesis"}``; a
reference record needs ``question_id``, ``question_type``, ``question`` and ``answer``. A record that is not what
its flag says is one UserError naming the file, the record number and its question id (and a swapped pair of
files says so).
"""

from __future__ import annotations

import json
import lzma
from pathlib import Path
from typing import Any

from lme.core.errors import UserError


def load_records(path: Path) -> list[Any]:
    """A JSON array or JSON lines, plain or ``.xz``."""
    opener: Any = lzma.open if path.suffix == ".xz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as fh:
            text = fh.read()
    except OSError as err:
        raise UserError(f"cannot read {path}: {err.strerror or err}") from None
    except (UnicodeDecodeError, lzma.LZMAError) as err:
        raise UserError(f"cannot read {path}: not UTF-8 JSON text ({err})") from None
    try:
        data = json.loads(text)
        return list(data) if isinstance(data, list) else [data]
    except ValueError:
        try:
            return [json.loads(line) for line in text.splitlines() if line.strip()]
        except ValueError as err:
            raise UserError(f"{path} is neither a JSON array nor JSON lines: {err}") from None


REF_FIELDS = ("question_id", "question_type", "question", "answer")
"""What the judge needs from each record of the LongMemEval data file."""


def _record_name(number: int, record: Any) -> str:
    qid = record.get("question_id") if isinstance(record, dict) else None
    return f"record {number}" + (f" (question_id {qid})" if qid is not None else "")


def load_references(ref_file: Path) -> dict[str, dict[str, Any]]:
    """The data file's records by question_id; a record the judge cannot use is a UserError naming it."""
    references: dict[str, dict[str, Any]] = {}
    for number, record in enumerate(load_records(ref_file), 1):
        missing = [f for f in REF_FIELDS if f not in record] if isinstance(record, dict) else list(REF_FIELDS)
        if missing:
            swapped = isinstance(record, dict) and "hypothesis" in record
            hint = " (are --hyp-file and --ref-file swapped?)" if swapped else ""
            raise UserError(
                f"--ref-file {ref_file}: {_record_name(number, record)} is not a LongMemEval question: "
                f"no {', '.join(missing)}{hint}",
                fix="pass the LongMemEval data file the hypotheses answer as --ref-file",
            )
        if not isinstance(record["question_type"], str):
            raise UserError(f"--ref-file {ref_file}: {_record_name(number, record)} has a question_type that is "
                            f"not a string ({record['question_type']!r})")
        references[str(record["question_id"])] = record
    return references


def load_hypotheses(hyp_file: Path, *, flag: str = "--hyp-file") -> list[dict[str, Any]]:
    """Upstream's hypothesis lines ``{question_id, hypothesis}``; anything else is a UserError naming the record."""
    hypotheses = load_records(hyp_file)
    for number, entry in enumerate(hypotheses, 1):
        missing = ([f for f in ("question_id", "hypothesis") if f not in entry] if isinstance(entry, dict)
                   else ["question_id", "hypothesis"])
        if missing:
            swapped = isinstance(entry, dict) and "question_type" in entry
            hint = ("" if not swapped else " (are --hyp-file and --ref-file swapped?)" if flag == "--hyp-file"
                    else " (is it the dataset file?)")
            raise UserError(
                f"{flag} {hyp_file}: {_record_name(number, entry)} is not a hypothesis line: "
                f"no {', '.join(missing)}{hint}",
                fix=f'pass a JSONL file of {{"question_id": ..., "hypothesis": ...}} as {flag}',
            )
    return hypotheses
