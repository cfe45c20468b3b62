"""The exact prompts a target sent, kept per run in ``prompts.jsonl``: content-addressed, each long line stored once
(a reader's prompt is mostly session text, and the same session text comes back in many prompts).

``references/SPEC.md`` (prompts.jsonl) states the format and what a crash can leave. Only the run's writer appends
here (``PromptStore.add``), before it appends the row that names the prompts.
"""

from __future__ import annotations

import base64
import hashlib
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from lme.core import fileio
from lme.core.facts import SCHEMA_VERSIONS
from lme.core.records import ChatRequest
from lme.store.run_layout import PROMPTS_FILE, run_dirs
SHARED_LINE_CHARS = 200
"""Lines at least this long are stored once by hash; shorter ones (headers, instructions) stay inline."""
COMPRESS_LINE_CHARS = 1024
"""Stored lines at least this long are kept zlib-compressed (``z``, base64); chat text shrinks about 2.2x."""


# --------------------------------------------------------------------------- encoding


def line_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def encode_text(text: str) -> tuple[list[Any], dict[str, str]]:
    """``text`` as segments (an inline ``str`` or ``{"line": sha256}`` per line) and the long lines by key."""
    segments: list[Any] = []
    lines: dict[str, str] = {}
    for line in text.split("\n"):
        if len(line) >= SHARED_LINE_CHARS:
            key = line_key(line)
            lines[key] = line
            segments.append({"line": key})
        else:
            segments.append(line)
    return segments, lines


def decode_text(segments: Sequence[Any], line: Callable[[str], str]) -> str:
    """The exact text of ``segments`` (``line``: a stored line's text by key; KeyError when it is missing)."""
    return "\n".join(s if isinstance(s, str) else line(s["line"]) for s in segments)


def encode_request(request: ChatRequest) -> tuple[dict[str, Any], dict[str, str]]:
    """The ``prompt`` record of ``request`` and the long lines it refers to."""
    lines: dict[str, str] = {}

    def enc(text: str | None) -> list[Any] | None:
        if text is None:
            return None
        segments, found = encode_text(str(text))
        lines.update(found)
        return segments

    record = {
        "schemaVersion": SCHEMA_VERSIONS["prompt-store"],
        "kind": "prompt",
        "key": request.key(),
        "provider": request.provider,
        "model": request.model,
        "max_tokens": request.max_tokens,
        "temperature": request.temperature,
        "system": enc(request.system),
        "messages": [{"role": str(m.get("role")), "content": enc(str(m.get("content", "")))}
                     for m in request.messages],
    }
    return record, lines


def line_record(key: str, text: str) -> dict[str, Any]:
    record: dict[str, Any] = {"schemaVersion": SCHEMA_VERSIONS["prompt-store"], "kind": "line", "sha256": key}
    if len(text) >= COMPRESS_LINE_CHARS:
        record["z"] = base64.b64encode(zlib.compress(text.encode("utf-8"), 6)).decode("ascii")
    else:
        record["text"] = text
    return record


def line_text(record: Mapping[str, Any]) -> str:
    if "z" in record:
        return zlib.decompress(base64.b64decode(record["z"])).decode("utf-8")
    return str(record["text"])


# --------------------------------------------------------------------------- the writer


class PromptStore:
    """The writer's handle on one run (or shard) directory's ``prompts.jsonl``. Not for concurrent writers."""

    def __init__(self, run_dir: Path) -> None:
        self.path = Path(run_dir) / PROMPTS_FILE
        self._lines: set[str] | None = None
        self._prompts: set[str] = set()

    def _open_index(self) -> None:
        """On first use: repair a torn tail, then learn what the file already holds (a resume)."""
        fileio.repair_tail(self.path)
        self._lines = set()
        for _, record in fileio.iter_jsonl(self.path):
            if record.get("kind") == "line":
                self._lines.add(str(record.get("sha256")))
            elif record.get("kind") == "prompt":
                self._prompts.add(str(record.get("key")))

    def add(self, requests: Iterable[ChatRequest]) -> list[str]:
        """Store what is new of ``requests`` (one write + fsync); returns their keys, each once, in order."""
        if self._lines is None:
            self._open_index()
        assert self._lines is not None
        keys: list[str] = []
        blob: list[bytes] = []
        new_lines: set[str] = set()
        new_prompts: set[str] = set()
        for request in requests:
            record, lines = encode_request(request)
            if record["key"] in keys:
                continue
            keys.append(record["key"])
            if record["key"] in self._prompts or record["key"] in new_prompts:
                continue
            for key, text in lines.items():
                if key not in self._lines and key not in new_lines:
                    new_lines.add(key)
                    blob.append(fileio.json_line(line_record(key, text)))
            new_prompts.add(record["key"])
            blob.append(fileio.json_line(record))  # after its lines: a prompt record that made it has all its lines
        if blob:
            fileio.append_bytes(self.path, b"".join(blob))
            self._lines |= new_lines
            self._prompts |= new_prompts
        return keys


# --------------------------------------------------------------------------- readers


@dataclass
class StoredPrompts:
    """Everything a run's ``prompts.jsonl`` files hold (root and shards): prompt records by key, lines by key.

    Each record is kept as where it is (file and byte offset) and read when asked for: a full-context ``_s`` run
    stores ~95 MB of lines, a memory-ref run 19,000 writer prompts of 180 segments each (0.5 GB as Python
    objects), and a report reads them one at a time."""

    files: list[Path] = field(default_factory=list)
    prompt_at: dict[str, int] = field(default_factory=dict)
    """Prompt key -> where its record is (``_place``: file number and byte offset in one int)."""
    line_at: dict[bytes, int] = field(default_factory=dict)
    """Line sha256 (32 bytes) -> its place and its length in characters (``_place`` << 40 | chars): a memory-ref
    run stores 313,000 lines, and a report sizes every prompt it shows."""

    @property
    def prompts(self) -> Mapping[str, dict[str, Any]]:
        """The prompt records by key, each read from its file when looked up."""
        return _PromptsAt(self)

    def read_at(self, place: int) -> dict[str, Any]:
        return fileio.read_jsonl_at(self.files[place >> _OFFSET_BITS], place & _OFFSET_MASK)

    def line_record(self, key: str) -> dict[str, Any]:
        return self.read_at(self.line_at[_digest(key)] >> _CHARS_BITS)

    def text(self, key: str) -> str:
        return line_text(self.line_record(key))

    def has_line(self, key: str) -> bool:
        return _digest(key) in self.line_at

    def line_chars(self, key: str) -> int:
        return self.line_at[_digest(key)] & _CHARS_MASK

    def request_text(self, key: str) -> dict[str, Any]:
        """The stored request ``key`` with its system and message texts decoded exactly."""
        record = self.prompts[key]
        return {
            "key": key,
            "provider": record.get("provider"),
            "model": record.get("model"),
            "max_tokens": record.get("max_tokens"),
            "temperature": record.get("temperature"),
            "system": None if record.get("system") is None else decode_text(record["system"], self.text),
            "messages": [{"role": m.get("role"), "content": decode_text(m.get("content") or [], self.text)}
                         for m in record.get("messages") or []],
        }


_OFFSET_BITS = 48
_OFFSET_MASK = (1 << _OFFSET_BITS) - 1
_CHARS_BITS = 40
_CHARS_MASK = (1 << _CHARS_BITS) - 1


def _digest(key: str) -> bytes:
    try:
        return bytes.fromhex(key)
    except (TypeError, ValueError):
        return b""  # not a line key: found nowhere


class _PromptsAt(Mapping[str, dict[str, Any]]):
    """Prompt records by key, read from where the store's index says they are."""

    def __init__(self, store: StoredPrompts) -> None:
        self._store = store

    def __getitem__(self, key: str) -> dict[str, Any]:
        return self._store.read_at(self._store.prompt_at[key])

    def __iter__(self):
        return iter(self._store.prompt_at)

    def __len__(self) -> int:
        return len(self._store.prompt_at)


def load(run_dir: Path) -> StoredPrompts:
    """Read ``prompts.jsonl`` of a run directory and of each of its shards (a torn last line is skipped)."""
    store = StoredPrompts()
    for directory in run_dirs(run_dir):
        path = directory / PROMPTS_FILE
        number = len(store.files) << _OFFSET_BITS
        store.files.append(path)
        for offset, record in fileio.iter_jsonl_at(path):
            key = record.get("sha256") if record.get("kind") == "line" else record.get("key")
            if record.get("kind") == "line" and isinstance(key, str) and _digest(key):
                store.line_at[_digest(key)] = ((number | offset) << _CHARS_BITS) | len(line_text(record))
            elif record.get("kind") == "prompt" and isinstance(key, str):
                store.prompt_at[key] = number | offset
    return store
