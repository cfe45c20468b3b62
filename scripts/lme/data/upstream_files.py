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
from typing import Any, Iterable, Mapping

from lme.core import bounded_json
from lme.core import fileio
from lme.core.errors import UserError
from lme.core.facts import id_problem


HYPOTHESES_LIMITS = bounded_json.Limits(document_bytes=256 << 20, string_chars=1 << 20)
"""A hypotheses file: 500 (or 5,000) short answers; one answer longer than a million characters is not one."""
REFERENCE_LIMITS = bounded_json.Limits(document_bytes=1 << 40)
"""A reference file is the dataset itself (the ``_m`` file is 2.75 GB): no bound on its size here."""


def load_records(path: Path, *, limits: bounded_json.Limits = bounded_json.DEFAULT) -> list[Any]:
    """A JSON array or JSON lines, plain or ``.xz``, read within ``limits`` (every fault one UserError line)."""
    path = Path(path)
    try:
        if path.suffix == ".xz":
            with lzma.open(path, "rb") as fh:
                blocks, size = [], 0
                while size <= limits.document_bytes and (block := fh.read(1 << 20)):
                    blocks.append(block)
                    size += len(block)
                data = b"".join(blocks)
            if len(data) > limits.document_bytes:
                raise UserError(f"{path}: more than {limits.document_bytes:,} bytes decompressed",
                                fix="pass the file your system wrote")
        else:
            data = fileio.read_bytes(path, max_bytes=limits.document_bytes, follow_symlinks=True)  # the user's file
    except OSError as err:
        raise UserError(f"cannot read {path}: {err.strerror or err}") from None
    except lzma.LZMAError as err:
        raise UserError(f"cannot read {path}: not UTF-8 JSON text ({err})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise UserError(f"cannot read {path}: not UTF-8 JSON text (byte {err.start})") from None
    if text.lstrip().startswith("["):
        data_ = bounded_json.loads(text, str(path), limits=limits, fix="write a JSON array or one object per line")
        return list(data_) if isinstance(data_, list) else [data_]
    try:
        whole = bounded_json.loads(text, str(path), limits=limits)
        return [whole]  # one object (a one-line JSON lines file)
    except ValueError:
        pass
    return [bounded_json.loads(line, f"{path}:{number}", limits=limits,
                               fix=f"{path} is neither a JSON array nor JSON lines: fix that line")
            for number, line in enumerate(upstream_lines(text), 1) if line.strip()]


def upstream_bytes(records: Iterable[Mapping[str, Any]]) -> bytes:
    """A JSON-lines file byte for byte as upstream's evaluate_qa.py writes its output (``json.dumps`` with its
    defaults, then ``print``'s newline): one we write compares with upstream's by ``cmp``."""
    return "".join(json.dumps(dict(record)) + "\n" for record in records).encode("ascii")


def upstream_lines(text: str) -> list[str]:
    """The lines of a JSON-lines file as upstream's scripts read them (a text-mode ``readlines``): ``\\n``,
    ``\\r\\n`` and ``\\r`` end a line; U+2028, U+0085 and the other breaks ``str.splitlines`` knows do not (JSON
    allows them raw inside a string)."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


REF_FIELDS = ("question_id", "question_type", "question", "answer")
"""What the judge needs from each record of the LongMemEval data file."""


def _record_name(number: int, record: Any) -> str:
    qid = record.get("question_id") if isinstance(record, dict) else None
    return f"record {number}" + (f" (question_id {qid})" if qid is not None else "")


def load_references(ref_file: Path) -> dict[str, dict[str, Any]]:
    """The data file's records by question_id; a record the judge cannot use is a UserError naming it."""
    references: dict[str, dict[str, Any]] = {}
    for number, record in enumerate(load_records(ref_file, limits=REFERENCE_LIMITS), 1):
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
    hypotheses = load_records(hyp_file, limits=HYPOTHESES_LIMITS)
    if not hypotheses:
        raise UserError(f"{flag} {hyp_file} holds no hypotheses (the file is empty)",
                        fix='write one {"question_id": ..., "hypothesis": ...} line per question your system answered')
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
        problem = id_problem(entry["question_id"]) if isinstance(entry["question_id"], str) else None
        if problem:
            raise UserError(f"{flag} {hyp_file}: record {number}: its question_id {problem}",
                            fix="write the question ids as the dataset has them")
    return hypotheses
