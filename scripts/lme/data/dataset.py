"""Stream and validate a LongMemEval file (plain, ``.xz`` or ``.gz``), hashing it in the same pass.

The command (its parser, ``main()`` and help text) is ``lme/cli/dataset.py``."""

from __future__ import annotations

import gzip
import hashlib
import lzma
import re
import zlib
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Iterator, Mapping

from lme.core import bounded_json
import ijson

from lme.core.errors import UserError
from lme.data.item_hash import item_sha256  # noqa: F401 - also this module's name for it
from lme.core.facts import QUESTION_ID_MAX, QUESTION_TYPES, id_problem
from lme.core.facts import published_file as is_known_official
from lme.core.facts import resolve_variant  # noqa: F401 - also this module's name for it
from lme.core.records import Question
from lme.core.schemas import validate


_XZ_MAGIC = b"\xfd7zXZ\x00"
_GZ_MAGIC = b"\x1f\x8b"
_READ_SIZE = 1 << 16
_REDOWNLOAD = (
    "re-download it from https://huggingface.co/datasets/xiaowu0162/longmemeval-cleaned "
    "and point datasetPath at the complete file"
)
ITEM_LIMITS = bounded_json.Limits(depth=16, string_chars=8 << 20)
"""An item nests 4 levels inside the file's array (item, sessions, session, turn); the longest turn of ``_s`` holds
about 77,000 characters."""
_ITEM_KEYS = (
    "question_id",
    "question_type",
    "question",
    "answer",
    "question_date",
    "haystack_session_ids",
    "haystack_dates",
    "haystack_sessions",
    "answer_session_ids",
)


@dataclass(frozen=True)
class DatasetScan:
    """What one streaming pass over a dataset file found (``scan``). A run's run-meta records the file as
    ``lme.core.run_records.DatasetInfo``, built from this in ``lme.run.state``."""

    path: str
    sha256: str
    """sha256 of the decompressed JSON bytes (equals the published file's hash for an unmodified copy)."""
    items: int
    variant: str | None
    """A guess from the file name, else from the number of sessions per item; None if neither tells."""
    decompressed_bytes: int = 0
    questions: tuple[tuple[str, str], ...] = ()
    """``(question_id, question_type)`` per item, in dataset order (what a run manifest lists)."""
    item_sha256: Mapping[str, str] = field(default_factory=dict)
    """Content fingerprint per question id (``item_sha256``): recognises a file by its items."""
    duplicate_sessions: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Question ids whose haystack lists a session id more than once (upstream issue #54), with those ids."""

    @property
    def official_name(self) -> str | None:
        return is_known_official(self.sha256)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        del d["questions"], d["item_sha256"]
        d["duplicate_sessions"] = {q: list(s) for q, s in self.duplicate_sessions.items()}
        d["official_name"] = self.official_name
        return d


class _HashingReader:
    """A binary reader that feeds every byte it hands out to sha256 and counts them."""

    def __init__(self, raw: IO[bytes]) -> None:
        self._raw = raw
        self.sha = hashlib.sha256()
        self.offset = 0
        self.first_byte: bytes | None = None

    def read(self, size: int = -1) -> bytes:
        # read1: hand out what decompressed cleanly before a truncation, so errors name the right item.
        data = self._raw.read1(size) if size and size > 0 else self._raw.read(size)
        if data:
            if self.first_byte is None:
                stripped = data.lstrip()
                if stripped:
                    self.first_byte = stripped[:1]
            self.sha.update(data)
            self.offset += len(data)
        return data

    def drain(self) -> None:
        while self.read(_READ_SIZE):
            pass


def _compression(path: Path) -> str:
    """``xz``, ``gz`` or ``plain``: magic bytes decide; the suffix only when the file is too short to tell."""
    with open(path, "rb") as fh:
        head = fh.read(6)
    if head.startswith(_XZ_MAGIC):
        return "xz"
    if head.startswith(_GZ_MAGIC):
        return "gz"
    if len(head) < 6 and path.suffix in (".xz", ".gz"):
        return path.suffix[1:]
    return "plain"


def _open_binary(path: Path) -> IO[bytes]:
    try:
        kind = _compression(path)
        if kind == "xz":
            return lzma.open(path, "rb")
        if kind == "gz":
            return gzip.open(path, "rb")
        return open(path, "rb", buffering=_READ_SIZE)
    except OSError as e:
        raise UserError(f"cannot open dataset file {path} ({e.strerror or e})", fix="check the path and its permissions") from None


def _check_path(path: Path) -> Path:
    path = Path(path)
    if not path.exists() and path.is_symlink():
        raise UserError(f"dataset file {path} is a symbolic link that leads nowhere (a loop, or a missing target)",
                        fix="point datasetPath at the real file")
    if not path.exists():
        raise UserError(f"dataset file {path} not found", fix=f"check datasetPath, or {_REDOWNLOAD}")
    if not path.is_file():
        raise UserError(f"dataset path {path} is not a file", fix="point datasetPath at a .json, .json.xz or .json.gz file")
    return path


def _fast_item_ok(item: Any) -> bool:
    """A quick structural check equal to item.schema.json on valid items; any doubt defers to the schema."""
    if not isinstance(item, dict) or any(k not in item for k in _ITEM_KEYS):
        return False
    qid = item["question_id"]
    if not isinstance(qid, str) or not qid or len(qid) > QUESTION_ID_MAX or not qid.isprintable():
        return False
    if item["question_type"] not in QUESTION_TYPES:
        return False
    answer = item["answer"]
    if not (isinstance(answer, str) or (isinstance(answer, int) and not isinstance(answer, bool))):
        return False
    for key in ("question", "question_date"):
        if not isinstance(item[key], str):
            return False
    for key in ("haystack_session_ids", "haystack_dates", "answer_session_ids"):
        values = item[key]
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            return False
    sessions = item["haystack_sessions"]
    if not isinstance(sessions, list):
        return False
    for session in sessions:
        if not isinstance(session, list):
            return False
        for turn in session:
            if (
                type(turn) is not dict
                or turn.get("role") not in ("user", "assistant")
                or type(turn.get("content")) is not str
                or ("has_answer" in turn and type(turn["has_answer"]) is not bool)
            ):
                return False
    return True


def _check_item(item: Any, index: int, path: Path) -> None:
    qid = item.get("question_id") if isinstance(item, dict) else None
    where = f"{path}: item {index}" + (f" (question_id {ascii(qid)[1:-1]})" if qid is not None else "")
    if not _fast_item_ok(item):
        problem = id_problem(qid) if isinstance(qid, str) else None
        if problem:
            raise UserError(f"{where}: its question_id {problem}", fix=_REDOWNLOAD)
        validate("item", item, where=where)
    ids, dates, sessions = item["haystack_session_ids"], item["haystack_dates"], item["haystack_sessions"]
    if not (len(ids) == len(dates) == len(sessions)):
        raise UserError(
            f"{where}: haystack_session_ids ({len(ids)}), haystack_dates ({len(dates)}) and haystack_sessions "
            f"({len(sessions)}) must be parallel lists of one length",
            fix=_REDOWNLOAD,
        )


def _where_after(index: int) -> str:
    return "before the first item" if index < 0 else f"after item {index}"


class _ItemStream:
    """One streaming pass over a file: yields validated items; afterwards holds count, hash and largest haystack."""

    def __init__(self, path: Path, *, fingerprints: bool = True) -> None:
        self.path = Path(path)
        self.fingerprints = fingerprints
        """Compute each item's ``item_sha256`` (the whole item as canonical JSON, hashed): a scan's job; a pass that
        only reads the items (a run's stream, an estimate, a report) skips it: on ``_s`` it is seconds a pass."""
        self.count = 0
        self.max_sessions = 0
        self.questions: list[tuple[str, str]] = []
        self.item_sha256: dict[str, str] = {}
        self.duplicate_sessions: dict[str, tuple[str, ...]] = {}
        self.reader: _HashingReader | None = None

    def __iter__(self) -> Iterator[dict]:
        path = _check_path(self.path)
        seen: dict[str, int] = {}
        index = -1
        with _open_binary(path) as raw:
            reader = self.reader = _HashingReader(raw)
            try:
                events = ijson.basic_parse(reader, use_float=True)
                for index, item in enumerate(bounded_json.items(events, str(path), limits=ITEM_LIMITS)):
                    _check_item(item, index, path)
                    qid = item["question_id"]
                    if qid in seen:
                        raise UserError(
                            f"{path}: item {index}: duplicate question_id {qid} (first seen at item {seen[qid]})",
                            fix=f"the file is not a valid LongMemEval file; {_REDOWNLOAD}",
                        )
                    seen[qid] = index
                    self.count += 1
                    self.questions.append((qid, item["question_type"]))
                    if self.fingerprints:
                        self.item_sha256[qid] = item_sha256(item)
                    repeated = [sid for sid, n in Counter(item["haystack_session_ids"]).items() if n > 1]
                    if repeated:
                        self.duplicate_sessions[qid] = tuple(repeated)
                    self.max_sessions = max(self.max_sessions, len(item["haystack_sessions"]))
                    yield item
                reader.drain()
            except ijson.JSONError as e:
                detail = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                raise UserError(
                    f"{path}: invalid or truncated JSON {_where_after(index)} "
                    f"(near byte {reader.offset:,} of the decompressed data: {detail})",
                    fix=_REDOWNLOAD,
                ) from None
            except (EOFError, lzma.LZMAError, OSError, zlib.error) as e:
                raise UserError(
                    f"{path}: data is damaged, truncated or unreadable {_where_after(index)} "
                    f"(near byte {reader.offset:,} of the decompressed data: {e})",
                    fix=_REDOWNLOAD,
                ) from None
        if reader.first_byte != b"[":
            found = "an empty file" if reader.first_byte is None else f"JSON starting with {reader.first_byte!r}"
            raise UserError(
                f"{path}: expected a JSON array of LongMemEval items, found {found}", fix=_REDOWNLOAD
            )

    def info(self) -> DatasetScan:
        reader = self.reader
        return DatasetScan(
            path=str(self.path),
            sha256=reader.sha.hexdigest() if reader else hashlib.sha256(b"").hexdigest(),
            items=self.count,
            variant=guess_variant(self.path, self.max_sessions if self.count else None),
            decompressed_bytes=reader.offset if reader else 0,
            questions=tuple(self.questions),
            item_sha256=dict(self.item_sha256),
            duplicate_sessions=dict(self.duplicate_sessions),
        )


def iter_items(path: Path) -> Iterator[dict]:
    """Stream validated items (dicts, as in the file) one at a time."""
    yield from _ItemStream(Path(path), fingerprints=False)


_VARIANT_IN_NAME = re.compile(r"(?:^|[^a-z])(?:longmemeval)?_(s|m)(?:_cleaned)?(?=[._]|$)")


def guess_variant(path: Path, max_sessions: int | None = None) -> str | None:
    """From the file name (``oracle`` / ``_s`` / ``_m``), else from the largest haystack seen."""
    name = Path(path).name.lower()
    if "oracle" in name:
        return "_oracle"
    named = _VARIANT_IN_NAME.search(name)  # longmemeval_s.json, longmemeval_m_cleaned.json; not longmemeval_sample
    if named:
        return f"_{named.group(1)}"
    if max_sessions is None:
        return None
    if max_sessions <= 10:
        return "_oracle"
    return "_s" if max_sessions <= 120 else "_m"


def scan(path: Path, on_item: Callable[[dict], None] | None = None) -> DatasetScan:
    """Validate every item and hash the decompressed bytes in one streaming pass; ``on_item`` sees each validated
    item on the way (the cost gate's estimate rides on a new run's scan)."""
    stream = _ItemStream(Path(path))
    for item in stream:
        if on_item is not None:
            on_item(item)
    return stream.info()


def load_questions(
    path: Path, *, limit: int | None = None, ids: Iterable[str] | None = None
) -> tuple[list[Question], DatasetScan]:
    """The items as Questions (dataset order), optionally only ``ids`` and/or the first ``limit``.

    The whole file is still streamed (and validated) so the DatasetScan hash and count describe the file; only
    the selected items are kept in memory.
    """
    if limit is not None and limit < 0:
        raise UserError(f"limit must be >= 0, got {limit}")
    wanted = None if ids is None else list(dict.fromkeys(str(i) for i in ids))
    wanted_set = None if wanted is None else set(wanted)
    stream = _ItemStream(Path(path))
    out: list[Question] = []
    for item in stream:
        if limit is not None and len(out) >= limit:
            continue
        if wanted_set is not None and item["question_id"] not in wanted_set:
            continue
        out.append(Question.from_dict(item))
    info = stream.info()
    if wanted is not None:
        found = {q.question_id for q in out}
        missing = [i for i in wanted if i not in found]
        if missing and (limit is None or len(out) < limit):
            shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
            raise UserError(
                f"{path}: question id(s) not in the dataset: {shown}",
                fix="check the ids against the dataset file (ids are case-sensitive)",
            )
    return out, info
