"""A fake of both providers' batch endpoints, close enough that the official SDKs drive and parse it.

OpenAI Files + Batches (``client.files.create/retrieve/content/delete``, ``client.batches.create/retrieve/cancel/
list``) and Anthropic Message Batches (``client.messages.batches.create/retrieve/results/cancel/list/delete``).
Nothing here reaches the internet. Shapes follow the SDKs' own types (``openai/types/batch*.py``,
``openai/types/file_object.py``, ``anthropic/types/messages/message_batch*.py``) and the providers' batch guides;
``/work/team/ISSUE-17-NOTES.md`` records the sources and the few places where this fake has to guess.

Mounting: ``BatchAPI.handle(method, path, query, headers, body) -> (status, headers, body) | None`` answers any
batch route and returns None for every other path, so an HTTP handler mounts it with a few lines (before it parses
the body as JSON: a file upload is multipart). ``serve(api)`` runs it alone on a thread.

Life of a batch (nothing moves on its own; a test drives the state):

- OpenAI: ``validating`` -> ``in_progress`` (the input file is parsed: JSON lines, ``method`` POST, ``url`` equal to
  the batch's endpoint, unique ``custom_id``s, one model, at most ``openai_max_requests``; else ``failed`` with
  ``errors.data``) -> ``finalizing`` (every request still pending is answered) -> ``completed`` (the output and error
  files are written). ``cancel`` gives ``cancelling`` -> ``cancelled``; past ``expires_at`` (24 h after creation on
  ``now``) it is ``expired``. Requests not run by then go to the error file as ``batch_cancelled`` /
  ``batch_expired``. ``output_file_id`` / ``error_file_id`` stay None when that file would be empty.
- Anthropic: ``in_progress`` -> ``ended`` (every pending request answered), ``cancel`` gives ``canceling`` ->
  ``ended`` with the requests not run as ``canceled``; expiry gives ``ended`` with them ``expired``. As the SDK
  documents, ``request_counts`` show every request as ``processing`` until the batch ends.

Controls: ``advance(batch_id, steps=1)``, ``finish(batch_id)``, ``process(batch_id, n)`` (answer n pending requests
while in progress: partial progress before a cancel or expiry), ``expire(batch_id)``, ``advance_clock(seconds)``
(expiry on ``now``), ``auto_advance_every = N`` (every Nth retrieve of a batch advances it one step first),
``fail_requests(*custom_ids, status=500)`` / ``fail_if(custom_id, body) -> status | None`` (per-request errors),
``submissions()`` (files uploaded, batches created, requests submitted: proves "resumed without resubmitting"),
``polls(batch_id)`` and ``calls`` (every (method, path) handled). Answers come from ``answer(body) -> text``, where
``body`` is the chat-completions body (OpenAI) or the Messages ``params`` (Anthropic): pass the fake model server's
policy (``FakeLLMServer.reply_text``) to get the same answers as the synchronous path. Results files are shuffled
(seeded), as neither provider promises request order.

CLI (for a benchmark that needs it in a subprocess): ``python tests/fake_batch_api.py --port 0 --auto-advance 1``
prints the root URL (Anthropic's base URL; OpenAI's is that plus ``/v1``) and serves until killed.
"""

from __future__ import annotations

import argparse
import contextlib
import email.parser
import email.policy
import json
import random
import re
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterator, Mapping, Sequence
from urllib.parse import parse_qs

from fake_llm_server import MODEL_ALIASES, estimate_tokens, prompt_text

Response = tuple[int, dict[str, str], bytes]
WINDOW_S = 24 * 3600
FILE_TTL_S = 30 * 24 * 3600  # batch files expire after 30 days by default (openai files.create docstring)
ANTHROPIC_CUSTOM_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")
OPENAI_ENDPOINTS = ("/v1/responses", "/v1/chat/completions", "/v1/embeddings", "/v1/completions",
                    "/v1/moderations", "/v1/images/generations", "/v1/images/edits", "/v1/videos")
OPENAI_TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})
_OPENAI_ERROR_TYPE = {400: "invalid_request_error", 401: "invalid_request_error", 404: "invalid_request_error",
                      429: "requests", 500: "server_error", 503: "server_error"}
_ANTHROPIC_ERROR_TYPE = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
                         429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}
_NOT_RUN = {
    "cancelled": ("batch_cancelled", "This request was not executed because the batch was cancelled."),
    "expired": ("batch_expired", "This request could not be executed before the completion window expired."),
}


def default_answer(body: Mapping[str, Any]) -> str:
    return "ok"


def _rfc3339(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _json(status: int, payload: Any, headers: Mapping[str, str] | None = None) -> Response:
    return status, {"Content-Type": "application/json", **(headers or {})}, json.dumps(payload).encode("utf-8")


def _openai_error(status: int, message: str, code: str | None = None, param: str | None = None) -> Response:
    kind = _OPENAI_ERROR_TYPE.get(status, "invalid_request_error")
    return _json(status, {"error": {"message": message, "type": kind, "param": param, "code": code}})


def _anthropic_error(status: int, message: str) -> Response:
    kind = _ANTHROPIC_ERROR_TYPE.get(status, "invalid_request_error")
    return _json(status, {"type": "error", "error": {"type": kind, "message": message}})


def _jsonl(rows: Sequence[Mapping[str, Any]]) -> bytes:
    return b"".join(json.dumps(row).encode("utf-8") + b"\n" for row in rows)


def _multipart(content_type: str, body: bytes) -> dict[str, tuple[str | None, bytes]]:
    """``{field name: (filename, bytes)}`` of a multipart/form-data body (empty when it is not one)."""
    head = b"Content-Type: " + content_type.encode("latin-1") + b"\r\n\r\n"
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + body)
    if not message.is_multipart():
        return {}
    parts: dict[str, tuple[str | None, bytes]] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if name:
            parts[str(name)] = (part.get_filename(), part.get_payload(decode=True) or b"")
    return parts


@dataclass
class _Request:
    custom_id: str
    body: Any
    result: dict[str, Any] | None = None
    """Once run: OpenAI's ``response`` object, or Anthropic's ``result`` object."""
    ok: bool = False


@dataclass
class _File:
    id: str
    filename: str
    purpose: str
    data: bytes
    created_at: int

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "object": "file", "bytes": len(self.data), "created_at": self.created_at,
                "filename": self.filename, "purpose": self.purpose, "status": "processed",
                "expires_at": self.created_at + FILE_TTL_S, "status_details": None}


@dataclass
class _OpenAIBatch:
    id: str
    input_file_id: str
    endpoint: str
    completion_window: str
    metadata: dict[str, str] | None
    created_at: int
    status: str = "validating"
    requests: list[_Request] = field(default_factory=list)
    times: dict[str, int] = field(default_factory=dict)
    errors: list[dict[str, Any]] | None = None
    output_file_id: str | None = None
    error_file_id: str | None = None
    model: str | None = None
    polls: int = 0

    def to_dict(self) -> dict[str, Any]:
        ran = [r for r in self.requests if r.result is not None]
        usage = None
        if self.status == "completed":
            tokens_in = sum(r.result["body"]["usage"]["prompt_tokens"] for r in ran if r.ok)
            tokens_out = sum(r.result["body"]["usage"]["completion_tokens"] for r in ran if r.ok)
            usage = {"input_tokens": tokens_in, "input_tokens_details": {"cached_tokens": 0},
                     "output_tokens": tokens_out, "output_tokens_details": {"reasoning_tokens": 0},
                     "total_tokens": tokens_in + tokens_out}
        return {
            "id": self.id, "object": "batch", "endpoint": self.endpoint, "model": self.model,
            "errors": {"object": "list", "data": self.errors} if self.errors else None,
            "input_file_id": self.input_file_id, "completion_window": self.completion_window,
            "status": self.status, "output_file_id": self.output_file_id, "error_file_id": self.error_file_id,
            "created_at": self.created_at, "expires_at": self.created_at + WINDOW_S,
            **{f"{name}_at": self.times.get(name) for name in
               ("in_progress", "finalizing", "completed", "failed", "expired", "cancelling", "cancelled")},
            "request_counts": {"total": len(self.requests), "completed": sum(r.ok for r in ran),
                               "failed": sum(not r.ok for r in ran)},
            "usage": usage, "metadata": self.metadata,
        }


@dataclass
class _AnthropicBatch:
    id: str
    created_at: float
    requests: list[_Request]
    processing_status: str = "in_progress"
    ended_at: float | None = None
    cancel_initiated_at: float | None = None
    polls: int = 0

    def to_dict(self, root_url: str) -> dict[str, Any]:
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        for request in self.requests:
            if self.processing_status != "ended":
                counts["processing"] += 1
            else:
                counts[str(request.result["type"])] += 1  # type: ignore[index]
        ended = self.processing_status == "ended"
        return {
            "id": self.id, "type": "message_batch", "processing_status": self.processing_status,
            "request_counts": counts, "created_at": _rfc3339(self.created_at),
            "expires_at": _rfc3339(self.created_at + WINDOW_S), "ended_at": _rfc3339(self.ended_at),
            "cancel_initiated_at": _rfc3339(self.cancel_initiated_at), "archived_at": None,
            "results_url": f"{root_url}/v1/messages/batches/{self.id}/results" if ended else None,
        }


_ROUTES: tuple[tuple[str, re.Pattern[str], str], ...] = tuple(
    (method, re.compile(pattern), name) for method, pattern, name in (
        ("POST", r"/v1/files", "openai_upload"),
        ("GET", r"/v1/files/(?P<file>[^/]+)", "openai_file"),
        ("DELETE", r"/v1/files/(?P<file>[^/]+)", "openai_delete_file"),
        ("GET", r"/v1/files/(?P<file>[^/]+)/content", "openai_file_content"),
        ("POST", r"/v1/batches", "openai_create"),
        ("GET", r"/v1/batches", "openai_list"),
        ("GET", r"/v1/batches/(?P<openai>[^/]+)", "openai_retrieve"),
        ("POST", r"/v1/batches/(?P<openai>[^/]+)/cancel", "openai_cancel"),
        ("POST", r"/v1/messages/batches", "anthropic_create"),
        ("GET", r"/v1/messages/batches", "anthropic_list"),
        ("GET", r"/v1/messages/batches/(?P<anthropic>[^/]+)", "anthropic_retrieve"),
        ("DELETE", r"/v1/messages/batches/(?P<anthropic>[^/]+)", "anthropic_delete"),
        ("GET", r"/v1/messages/batches/(?P<anthropic>[^/]+)/results", "anthropic_results"),
        ("POST", r"/v1/messages/batches/(?P<anthropic>[^/]+)/cancel", "anthropic_cancel"),
    )
)
"""(method, path, handler). A named group says what the id in the path is: handle() looks it up (404 when
unknown, expiry applied) and passes the object to ``_<handler>(target, request)``."""


@dataclass(frozen=True)
class _Call:
    """One HTTP request as the route handlers see it."""

    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        try:
            return json.loads(self.body or b"{}")
        except ValueError:
            return None

    @property
    def root_url(self) -> str:
        """Where the client reached us (Anthropic's ``results_url`` is absolute, on the API's own host)."""
        return f"http://{self.headers.get('host', '127.0.0.1')}"


class BatchAPI:
    """Both providers' batch state, answered through ``handle``; see the module docstring for the controls."""

    def __init__(self, answer: Callable[[Mapping[str, Any]], str] = default_answer, *, now: float | None = None,
                 seed: int = 0) -> None:
        self.answer = answer
        self.now: float = time.time() if now is None else float(now)
        """The fake's clock (Unix seconds): stamps every object and decides expiry. Tests move it."""
        self.auto_advance_every: int | None = None
        self.fail_if: Callable[[str, Any], int | None] | None = None
        self.shuffle_results = True
        self.openai_max_requests = 50_000
        self.openai_max_file_bytes = 200 * 1024 * 1024
        self.anthropic_max_requests = 100_000
        self.calls: list[tuple[str, str]] = []
        self._failing: dict[str, int] = {}
        self._rng = random.Random(seed)
        self._lock = threading.RLock()
        self._files: dict[str, _File] = {}
        self._openai: dict[str, _OpenAIBatch] = {}
        self._anthropic: dict[str, _AnthropicBatch] = {}
        self._counter = 0
        self._counts = {"files_uploaded": 0, "openai_batches": 0, "anthropic_batches": 0, "requests": 0}

    # ------------------------------------------------------------------ test controls

    def submissions(self) -> dict[str, int]:
        """What was submitted so far: batch input files uploaded, batches created per provider, requests in them."""
        with self._lock:
            return dict(self._counts)

    def polls(self, batch_id: str) -> int:
        with self._lock:
            return self._batch(batch_id).polls

    def status(self, batch_id: str) -> str:
        """``status`` (OpenAI) or ``processing_status`` (Anthropic) of a batch."""
        with self._lock:
            batch = self._batch(batch_id)
            self._check_expiry(batch)
            return batch.status if isinstance(batch, _OpenAIBatch) else batch.processing_status

    def fail_requests(self, *custom_ids: str, status: int = 500) -> None:
        """These custom_ids come back as errors with this HTTP status, in any batch they are submitted in."""
        with self._lock:
            self._failing.update((custom_id, int(status)) for custom_id in custom_ids)

    def advance_clock(self, seconds: float) -> None:
        with self._lock:
            self.now += seconds

    def advance(self, batch_id: str, steps: int = 1) -> str:
        """Move a batch ``steps`` states on (a no-op once it has ended); returns its status."""
        with self._lock:
            batch = self._batch(batch_id)
            for _ in range(steps):
                self._step(batch)
            return self.status(batch_id)

    def finish(self, batch_id: str) -> str:
        """Advance until the batch has ended; returns its final status."""
        with self._lock:
            return self.advance(batch_id, steps=4)

    def process(self, batch_id: str, n: int) -> int:
        """Answer up to ``n`` pending requests of an in-progress batch (submission order); returns how many ran."""
        with self._lock:
            batch = self._batch(batch_id)
            running = batch.status == "in_progress" if isinstance(batch, _OpenAIBatch) else (
                batch.processing_status == "in_progress")
            if not running:
                raise ValueError(f"batch {batch_id} is not in progress")
            pending = [r for r in batch.requests if r.result is None][:n]
            for request in pending:
                self._run(request, openai=isinstance(batch, _OpenAIBatch))
            return len(pending)

    def expire(self, batch_id: str) -> str:
        """Expire a batch now, whatever the clock says (what the provider does 24 h after creation)."""
        with self._lock:
            batch = self._batch(batch_id)
            self._end(batch, "expired")
            return self.status(batch_id)

    # ------------------------------------------------------------------ HTTP entry point

    def handle(self, method: str, path: str, query: str, headers: Mapping[str, str], body: bytes) -> Response | None:
        """Answer a batch route; None when ``method path`` is not one (the host server answers it)."""
        for route_method, pattern, name in _ROUTES:
            match = pattern.fullmatch(path)
            if match and route_method == method.upper():
                call = _Call(parse_qs(query), {k.lower(): v for k, v in headers.items()}, body)
                with self._lock:
                    self.calls.append((method.upper(), path))
                    target: Any = None
                    for kind, wanted in match.groupdict().items():
                        target = self._lookup(kind, wanted)
                        if target is None:
                            return self._not_found(kind, wanted)
                    return getattr(self, f"_{name}")(target, call)
        return None

    def _lookup(self, kind: str, wanted: str) -> Any:
        found = {"file": self._files, "openai": self._openai, "anthropic": self._anthropic}[kind].get(wanted)
        if found is not None and kind != "file":
            self._check_expiry(found)
        return found

    @staticmethod
    def _not_found(kind: str, wanted: str) -> Response:
        if kind == "anthropic":
            return _anthropic_error(404, f"No Message Batch found with id {wanted}")
        if kind == "openai":
            return _openai_error(404, f"No batch found with id '{wanted}'.")
        return _openai_error(404, f"No such File object: {wanted}", param="id")

    # ------------------------------------------------------------------ state machine

    def _next_id(self, prefix: str) -> str:
        self._counter += 1
        return f"{prefix}{self._counter:024d}"

    def _batch(self, batch_id: str) -> _OpenAIBatch | _AnthropicBatch:
        batch = self._openai.get(batch_id) or self._anthropic.get(batch_id)
        if batch is None:
            raise KeyError(f"no batch {batch_id!r}")
        return batch

    def _check_expiry(self, batch: _OpenAIBatch | _AnthropicBatch) -> None:
        created = batch.created_at
        if self.now >= created + WINDOW_S:
            self._end(batch, "expired")

    def _step(self, batch: _OpenAIBatch | _AnthropicBatch) -> None:
        self._check_expiry(batch)
        if isinstance(batch, _AnthropicBatch):
            if batch.processing_status == "in_progress":
                for request in batch.requests:
                    if request.result is None:
                        self._run(request, openai=False)
                self._end(batch, "succeeded")
            elif batch.processing_status == "canceling":
                self._end(batch, "canceled")
            return
        stamp = int(self.now)
        if batch.status == "validating":
            self._validate(batch)
        elif batch.status == "in_progress":
            for request in batch.requests:
                if request.result is None:
                    self._run(request, openai=True)
            batch.status, batch.times["finalizing"] = "finalizing", stamp
        elif batch.status == "finalizing":
            self._write_files(batch, None)
            batch.status, batch.times["completed"] = "completed", stamp
        elif batch.status == "cancelling":
            self._end(batch, "cancelled")

    def _end(self, batch: _OpenAIBatch | _AnthropicBatch, how: str) -> None:
        """End a batch: requests not run yet become ``how`` (Anthropic) / batch_cancelled|expired (OpenAI)."""
        if isinstance(batch, _AnthropicBatch):
            if batch.processing_status == "ended":
                return
            for request in batch.requests:
                if request.result is None:
                    request.result = {"type": "expired" if how == "expired" else "canceled"}
            batch.processing_status, batch.ended_at = "ended", self.now
            return
        if batch.status in OPENAI_TERMINAL:
            return
        self._write_files(batch, how)
        batch.status = how
        batch.times[how] = int(self.now)

    def _validate(self, batch: _OpenAIBatch) -> None:
        """validating -> in_progress, or -> failed with ``errors.data`` (the documented validation codes)."""
        data = self._files[batch.input_file_id].data
        errors: list[dict[str, Any]] = []
        requests: list[_Request] = []
        seen: set[str] = set()
        models: set[str] = set()
        lines = [line for line in data.decode("utf-8", "replace").splitlines() if line.strip()]
        for number, line in enumerate(lines, start=1):
            try:
                row = json.loads(line)
            except ValueError:
                row = None
            if not isinstance(row, dict):
                errors.append(self._line_error("invalid_json_line", number, "This line is not parseable as valid "
                                               "JSON."))
                continue
            custom_id = row.get("custom_id")
            if not isinstance(custom_id, str) or not custom_id:
                errors.append(self._line_error("missing_required_parameter", number, "Missing required parameter: "
                                               "'custom_id'.", "custom_id"))
                continue
            if custom_id in seen:
                errors.append(self._line_error("duplicate_custom_id", number, "The custom_id for this request is a "
                                               "duplicate of another request. The custom_id parameter must be "
                                               "unique for each request in a batch.", "custom_id"))
                continue
            if row.get("method") != "POST" or row.get("url") != batch.endpoint:
                errors.append(self._line_error("url_mismatch", number, "The provided URL or method does not match "
                                               f"the batch endpoint {batch.endpoint} (POST).", "url"))
                continue
            seen.add(custom_id)
            body = row.get("body")
            if isinstance(body, dict) and isinstance(body.get("model"), str):
                models.add(body["model"])
            requests.append(_Request(custom_id, body))
        if not lines:
            errors.append(self._line_error("empty_file", None, "The batch input file is empty."))
        if len(models) > 1:
            errors.append(self._line_error("model_mismatch", None, "The batch input file must contain requests for "
                                           f"a single model; found {', '.join(sorted(models))}.", "body.model"))
        if len(requests) > self.openai_max_requests:
            errors.append(self._line_error("too_many_tasks", None, f"The batch input file has {len(requests)} "
                                           f"requests; the limit is {self.openai_max_requests}."))
        stamp = int(self.now)
        if errors:
            batch.errors, batch.status, batch.times["failed"] = errors, "failed", stamp
            return
        batch.requests = requests
        batch.model = MODEL_ALIASES.get(next(iter(models)), next(iter(models))) if models else None
        batch.status, batch.times["in_progress"] = "in_progress", stamp

    @staticmethod
    def _line_error(code: str, line: int | None, message: str, param: str | None = None) -> dict[str, Any]:
        return {"code": code, "line": line, "message": message, "param": param}

    def _forced_status(self, custom_id: str, body: Any) -> int | None:
        if custom_id in self._failing:
            return self._failing[custom_id]
        return self.fail_if(custom_id, body) if self.fail_if is not None else None

    def _run(self, request: _Request, *, openai: bool) -> None:
        """Answer one request into ``request.result`` (a success, or an error the test asked for)."""
        body = request.body
        status = self._forced_status(request.custom_id, body)
        message = "The server had an error while processing your request."
        if status is None and not (isinstance(body, dict) and isinstance(body.get("messages"), list)
                                   and isinstance(body.get("model"), str)
                                   and (openai or isinstance(body.get("max_tokens"), int))):
            status, message = 400, "Invalid request: model, messages" + ("" if openai else " and max_tokens") + \
                " are required."
        elif status is not None and status < 500:
            message = f"Request failed with status {status}."
        if openai:
            request_id = self._next_id("req_")
            if status is None:
                request.result = {"status_code": 200, "request_id": request_id, "body": self._chat_body(body)}
                request.ok = True
            else:
                kind = _OPENAI_ERROR_TYPE.get(status, "invalid_request_error")
                request.result = {"status_code": status, "request_id": request_id,
                                  "body": {"error": {"message": message, "type": kind, "param": None,
                                                     "code": None}}}
            return
        if status is None:
            request.result = {"type": "succeeded", "message": self._message_body(body)}
            request.ok = True
        else:
            kind = _ANTHROPIC_ERROR_TYPE.get(status, "invalid_request_error")
            request.result = {"type": "errored",
                              "error": {"type": "error", "error": {"type": kind, "message": message}}}

    def _chat_body(self, body: Mapping[str, Any]) -> dict[str, Any]:
        text = str(self.answer(body))
        tokens_in, tokens_out = estimate_tokens(prompt_text(body)), estimate_tokens(text)
        model = str(body.get("model", ""))
        choices = [{"index": i, "message": {"role": "assistant", "content": text, "refusal": None},
                    "logprobs": None, "finish_reason": "stop"} for i in range(int(body.get("n") or 1))]
        return {"id": self._next_id("chatcmpl-"), "object": "chat.completion", "created": int(self.now),
                "model": MODEL_ALIASES.get(model, model), "choices": choices, "system_fingerprint": "fp_fake",
                "usage": {"prompt_tokens": tokens_in, "completion_tokens": tokens_out,
                          "total_tokens": tokens_in + tokens_out}}

    def _message_body(self, params: Mapping[str, Any]) -> dict[str, Any]:
        text = str(self.answer(params))
        model = str(params.get("model", ""))
        return {"id": self._next_id("msg_"), "type": "message", "role": "assistant",
                "model": MODEL_ALIASES.get(model, model), "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn", "stop_sequence": None,
                "usage": {"input_tokens": estimate_tokens(prompt_text(params)),
                          "output_tokens": estimate_tokens(text)}}

    def _write_files(self, batch: _OpenAIBatch, not_run: str | None) -> None:
        """Output file (2xx lines) and error file (the rest, and ``not_run`` requests); None when empty."""
        output: list[dict[str, Any]] = []
        failed: list[dict[str, Any]] = []
        for request in batch.requests:
            line: dict[str, Any] = {"id": self._next_id("batch_req_"), "custom_id": request.custom_id}
            if request.result is not None:
                line.update(response=request.result, error=None)
                (output if request.ok else failed).append(line)
            elif not_run is not None:
                code, message = _NOT_RUN[not_run]
                line.update(response=None, error={"code": code, "message": message})
                failed.append(line)
        for rows, attr in ((output, "output_file_id"), (failed, "error_file_id")):
            if rows:
                if self.shuffle_results:
                    self._rng.shuffle(rows)
                created = _File(self._next_id("file-"), f"{batch.id}_{attr[:-8]}.jsonl", "batch_output",
                                _jsonl(rows), int(self.now))
                self._files[created.id] = created
                setattr(batch, attr, created.id)

    # ------------------------------------------------------------------ OpenAI routes

    def _openai_upload(self, _: None, call: _Call) -> Response:
        parts = _multipart(call.headers.get("content-type", ""), call.body)
        purpose = parts.get("purpose", (None, b""))[1].decode("utf-8", "replace")
        if "file" not in parts:
            return _openai_error(400, "Missing required parameter: 'file'.", param="file")
        filename, data = parts["file"]
        if purpose not in ("batch", "assistants", "fine-tune", "vision", "user_data", "evals"):
            return _openai_error(400, f"Invalid value for 'purpose': {purpose!r}.", param="purpose")
        if purpose == "batch" and not str(filename or "").endswith(".jsonl"):
            return _openai_error(400, "Invalid file format for Batch API. Must be .jsonl")
        if purpose == "batch" and len(data) > self.openai_max_file_bytes:
            return _openai_error(400, f"File is too large for the Batch API: {len(data)} bytes; the limit is "
                                 f"{self.openai_max_file_bytes}.", param="file")
        created = _File(self._next_id("file-"), str(filename or "upload"), purpose, data, int(self.now))
        self._files[created.id] = created
        if purpose == "batch":
            self._counts["files_uploaded"] += 1
        return _json(200, created.to_dict(), {"x-request-id": self._next_id("req_")})

    def _openai_file(self, file: _File, _: _Call) -> Response:
        return _json(200, file.to_dict())

    def _openai_delete_file(self, file: _File, _: _Call) -> Response:
        del self._files[file.id]
        return _json(200, {"id": file.id, "object": "file", "deleted": True})

    def _openai_file_content(self, file: _File, _: _Call) -> Response:
        return 200, {"Content-Type": "application/octet-stream"}, file.data

    def _openai_create(self, _: None, call: _Call) -> Response:
        params = call.json()
        if not isinstance(params, dict):
            return _openai_error(400, "We could not parse the JSON body of your request.")
        file = self._files.get(str(params.get("input_file_id")))
        if file is None:
            return _openai_error(404, f"No such File object: {params.get('input_file_id')}", param="input_file_id")
        if file.purpose != "batch":
            return _openai_error(400, "The input file must be uploaded with purpose 'batch'.", param="input_file_id")
        if params.get("endpoint") not in OPENAI_ENDPOINTS:
            return _openai_error(400, f"Invalid value for 'endpoint': {params.get('endpoint')!r}.", param="endpoint")
        if params.get("completion_window") != "24h":
            return _openai_error(400, "Invalid value for 'completion_window': only '24h' is supported.",
                                 param="completion_window")
        metadata = params.get("metadata")
        if metadata is not None and (not isinstance(metadata, dict) or len(metadata) > 16 or any(
                len(str(k)) > 64 or not isinstance(v, str) or len(v) > 512 for k, v in metadata.items())):
            return _openai_error(400, "Invalid 'metadata': at most 16 string pairs, keys up to 64 characters, "
                                 "values up to 512.", param="metadata")
        batch = _OpenAIBatch(self._next_id("batch_"), file.id, str(params["endpoint"]), "24h", metadata,
                             int(self.now))
        self._openai[batch.id] = batch
        self._counts["openai_batches"] += 1
        self._counts["requests"] += sum(1 for line in file.data.splitlines() if line.strip())
        return _json(200, batch.to_dict(), {"x-request-id": self._next_id("req_")})

    def _openai_retrieve(self, batch: _OpenAIBatch, _: _Call) -> Response:
        self._poll(batch)
        return _json(200, batch.to_dict(), {"x-request-id": self._next_id("req_")})

    def _openai_cancel(self, batch: _OpenAIBatch, _: _Call) -> Response:
        if batch.status in OPENAI_TERMINAL:
            return _openai_error(409, f"Cannot cancel a batch with status '{batch.status}'.")
        if batch.status != "cancelling":
            batch.status, batch.times["cancelling"] = "cancelling", int(self.now)
        return _json(200, batch.to_dict(), {"x-request-id": self._next_id("req_")})

    def _openai_list(self, _: None, call: _Call) -> Response:
        page, has_more = self._page(self._openai, call.query, "after", 100)
        data = [b.to_dict() for b in page]
        return _json(200, {"object": "list", "data": data, "first_id": data[0]["id"] if data else None,
                           "last_id": data[-1]["id"] if data else None, "has_more": has_more})

    # ------------------------------------------------------------------ Anthropic routes

    def _anthropic_create(self, _: None, call: _Call) -> Response:
        params = call.json()
        requests = params.get("requests") if isinstance(params, dict) else None
        if not isinstance(requests, list) or not requests:
            return _anthropic_error(400, "requests: Field required (a non-empty list)")
        if len(requests) > self.anthropic_max_requests:
            return _anthropic_error(400, f"requests: at most {self.anthropic_max_requests} requests per batch")
        seen: set[str] = set()
        for i, item in enumerate(requests):
            custom_id = item.get("custom_id") if isinstance(item, dict) else None
            if not isinstance(custom_id, str):
                return _anthropic_error(400, f"requests.{i}.custom_id: Field required")
            if len(custom_id) > 64:
                return _anthropic_error(400, f"requests.{i}.custom_id: String should have at most 64 characters")
            if not ANTHROPIC_CUSTOM_ID.fullmatch(custom_id):
                return _anthropic_error(400, f"requests.{i}.custom_id: String should match pattern "
                                        "'^[a-zA-Z0-9_-]{1,64}$'")
            if custom_id in seen:
                return _anthropic_error(400, f"requests.{i}.custom_id: Duplicate custom_id {custom_id!r}; each "
                                        "custom_id must be unique within the batch")
            if not isinstance(item.get("params"), dict):
                return _anthropic_error(400, f"requests.{i}.params: Field required")
            seen.add(custom_id)
        batch = _AnthropicBatch(self._next_id("msgbatch_"), self.now,
                                [_Request(item["custom_id"], item["params"]) for item in requests])
        self._anthropic[batch.id] = batch
        self._counts["anthropic_batches"] += 1
        self._counts["requests"] += len(requests)
        return _json(200, batch.to_dict(call.root_url), {"request-id": self._next_id("req_")})

    def _anthropic_retrieve(self, batch: _AnthropicBatch, call: _Call) -> Response:
        self._poll(batch)
        return _json(200, batch.to_dict(call.root_url), {"request-id": self._next_id("req_")})

    def _anthropic_results(self, batch: _AnthropicBatch, _: _Call) -> Response:
        if batch.processing_status != "ended":
            return _anthropic_error(404, f"Message Batch {batch.id} has not ended; its results are not available")
        rows = [{"custom_id": r.custom_id, "result": r.result} for r in batch.requests]
        if self.shuffle_results:
            self._rng.shuffle(rows)
        return 200, {"Content-Type": "application/binary"}, _jsonl(rows)

    def _anthropic_cancel(self, batch: _AnthropicBatch, call: _Call) -> Response:
        if batch.processing_status == "ended":
            return _anthropic_error(409, f"Message Batch {batch.id} has already ended and cannot be canceled")
        if batch.processing_status == "in_progress":
            batch.processing_status, batch.cancel_initiated_at = "canceling", self.now
        return _json(200, batch.to_dict(call.root_url), {"request-id": self._next_id("req_")})

    def _anthropic_delete(self, batch: _AnthropicBatch, _: _Call) -> Response:
        if batch.processing_status != "ended":
            return _anthropic_error(409, f"Message Batch {batch.id} is still processing; cancel it first")
        del self._anthropic[batch.id]
        return _json(200, {"id": batch.id, "type": "message_batch_deleted"})

    def _anthropic_list(self, _: None, call: _Call) -> Response:
        page, has_more = self._page(self._anthropic, call.query, "after_id", 1000)
        data = [b.to_dict(call.root_url) for b in page]
        return _json(200, {"data": data, "has_more": has_more, "first_id": data[0]["id"] if data else None,
                           "last_id": data[-1]["id"] if data else None})

    # ------------------------------------------------------------------ shared

    def _poll(self, batch: _OpenAIBatch | _AnthropicBatch) -> None:
        self._check_expiry(batch)
        batch.polls += 1
        if self.auto_advance_every and batch.polls % self.auto_advance_every == 0:
            self._step(batch)

    def _page(self, batches: Mapping[str, Any], query: Mapping[str, list[str]], cursor: str,
              cap: int) -> tuple[list[Any], bool]:
        """One page of ``batches``, newest first (both providers' order), starting after the ``cursor`` id."""
        items = sorted(batches.values(), key=lambda b: (b.created_at, b.id), reverse=True)
        for batch in items:
            self._check_expiry(batch)
        limit = max(1, min(cap, int((query.get("limit") or ["20"])[0])))
        ids = [item.id for item in items]
        after = (query.get(cursor) or [None])[0]
        start = ids.index(after) + 1 if after in ids else 0
        return items[start:start + limit], start + limit < len(items)


# ---------------------------------------------------------------------- standalone server


class _Handler(BaseHTTPRequestHandler):
    api: BatchAPI
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - signature from the base class
        pass

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        path, _, query = self.path.partition("?")
        answer = self.api.handle(self.command, path, query, dict(self.headers.items()),
                                 self.rfile.read(length) if length else b"")
        status, headers, data = answer or _openai_error(404, f"no route for {self.command} {path}")
        self.send_response(status)
        for key, value in {**headers, "Content-Length": str(len(data))}.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_DELETE = _serve  # noqa: N815 - http.server naming


@contextlib.contextmanager
def serve(api: BatchAPI, host: str = "127.0.0.1", port: int = 0) -> Iterator[str]:
    """Serve ``api`` alone on a thread; yields the root URL (Anthropic's base URL; OpenAI's is it + ``/v1``)."""
    httpd = ThreadingHTTPServer((host, port), type("_BoundHandler", (_Handler,), {"api": api}))
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve fake OpenAI and Anthropic batch endpoints until killed.")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port to bind; 0 picks a free one (default 0)")
    parser.add_argument("--auto-advance", type=int, default=1, metavar="N",
                        help="every Nth retrieve of a batch moves it one state on; 0 never (default 1)")
    args = parser.parse_args(argv)
    api = BatchAPI()
    api.auto_advance_every = args.auto_advance or None
    with serve(api, args.host, args.port) as root_url:
        print(root_url, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
