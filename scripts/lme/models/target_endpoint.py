"""The target endpoint: a local OpenAI- and Anthropic-compatible server on 127.0.0.1 that a run starts for a user's
own memory system, so that every model call the system makes goes through the run's provider layer (the call
cache, obeying ``--no-cache``; the pacer; the retry policy; prices) and lands in the row of the item it served.

Routes, under ``/t/<token>/``: ``POST v1/chat/completions`` and ``POST v1/embeddings`` (OpenAI), ``POST
v1/messages`` (Anthropic); anything else is a 404 in the API's error shape. The token names who is calling:

- ``with endpoint.item_scope() as scope:`` gives one item's token; ``scope.env()`` is the environment of a process
  that serves only this item (``OPENAI_BASE_URL`` = ``http://127.0.0.1:PORT/t/<token>/v1``, ``ANTHROPIC_BASE_URL``
  = ``http://127.0.0.1:PORT/t/<token>``, so ``openai.OpenAI()`` and ``anthropic.Anthropic()`` use it with no code
  change; the same URLs as ``LONGMEMEVAL_OPENAI_BASE_URL`` / ``LONGMEMEVAL_ANTHROPIC_BASE_URL``); ``scope.calls()``
  is the ``CallRecord`` of every call made under it, in the order they were answered.
- A long-lived worker gets a fixed token once (``endpoint.worker_token()``, its environment
  ``endpoint.worker_env(token)``); ``scope.bind(token)`` attributes the worker's calls to this item until the scope
  ends or ``scope.release(token)`` hands the worker back, so SDK clients a worker builds once are attributed to the
  item it serves now. ``endpoint.retire(token)``: the worker's process is gone, its token is refused for good.
- A call with a token that is unknown, ended, or a worker's that serves no item now is refused (403, never made):
  no call goes unattributed.
- A call already being forwarded when its item ends (its process killed at the item's timeout) is finished:
  ``scope.settle(seconds)`` waits for it, so that it lands in the item's row.

Why a small ``ThreadingHTTPServer`` over ``lme/models`` and not a library proxy (LiteLLM's): the toolkit already
owns the cache keys, the pacer's budgets, the retry policy and the price table the run's own calls use; a proxy
would bring its own of each (and dozens of packages), and the two would disagree on what a call cost or whether it
was cached. What the endpoint adds is the HTTP surface and the attribution; ``endpoint_forward`` sends each request
through the same layer as the run's own calls, and ``endpoint_sse`` tells a whole reply as a stream.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Mapping

from lme.core.records import CallRecord
from lme.models import endpoint_sse
from lme.models.endpoint_forward import API_MESSAGES, APIS, EndpointRoutes, Forwarder, error_body

HOST = "127.0.0.1"
MAX_BODY_BYTES = 64 * 1024 * 1024
"""A request body larger than this is refused (413): far above any model's context."""
PLACEHOLDER_KEY = "longmemeval-target-endpoint"
"""The key variable a process gets when the run's environment has none (the SDKs refuse to start without one);
the endpoint never reads a client's key: it calls with the run's."""
KEY_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")
_STOP_JOIN_S = 5.0
SETTLE_S = 30.0
"""How long an item that ended waits for the calls still in flight under it (``ItemScope.settle``): a call the
provider is working on is finished either way; waiting puts it in the item's row."""
THREAD_NAME = "target-endpoint"
"""The name of the endpoint's threads (its server loop and one per connection)."""


class ItemScope:
    """One item's calls through the endpoint (see the module docstring); a context manager that ends the token."""

    def __init__(self, endpoint: "TargetEndpoint", token: str) -> None:
        self.endpoint = endpoint
        """The run's endpoint this scope belongs to (a long-lived worker's token is made by it)."""
        self.token = token
        self._calls: list[CallRecord] = []
        self._lock = threading.Lock()
        self._bound: list[str] = []
        self._in_flight = 0
        self._answered = threading.Condition(self._lock)
        self.closed = False

    @property
    def openai_base_url(self) -> str:
        return self.endpoint.openai_base_url(self.token)

    @property
    def anthropic_base_url(self) -> str:
        return self.endpoint.anthropic_base_url(self.token)

    def env(self) -> dict[str, str]:
        """The environment variables of a process that serves only this item."""
        return self.endpoint.env_for(self.token)

    def calls(self) -> tuple[CallRecord, ...]:
        with self._lock:
            return tuple(self._calls)

    def bind(self, worker_token: str) -> None:
        """Attribute the calls of the worker holding ``worker_token`` to this item until the scope ends."""
        self.endpoint._bind(worker_token, self)
        with self._lock:
            self._bound.append(worker_token)

    def release(self, worker_token: str) -> None:
        """The worker holding ``worker_token`` serves this item no more (it goes back to its pool): its calls are
        refused until another scope binds it."""
        self.endpoint._unbind(worker_token, self)

    def record(self, call: CallRecord) -> None:
        with self._lock:
            self._calls.append(call)

    def _began(self) -> None:
        with self._lock:
            self._in_flight += 1

    def _done(self) -> None:
        with self._lock:
            self._in_flight -= 1
            self._answered.notify_all()

    def settle(self, seconds: float = SETTLE_S) -> int:
        """Wait up to ``seconds`` for the calls in flight under this scope to be answered (each then is in
        ``calls()``); returns how many still run. Call it once no new call can start (the item's process is gone
        or its worker released): a call the provider is working on is finished either way."""
        with self._answered:
            self._answered.wait_for(lambda: self._in_flight == 0, timeout=seconds)
            return self._in_flight

    def close(self) -> None:
        with self._lock:
            bound, self._bound, self.closed = list(self._bound), [], True
        self.endpoint._end(self.token, bound, self)

    def __enter__(self) -> "ItemScope":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256

    def __init__(self, endpoint: "TargetEndpoint") -> None:
        self.endpoint = endpoint
        self.connections: set[socket.socket] = set()
        self.workers: set[threading.Thread] = set()
        self.lock = threading.Lock()
        super().__init__((HOST, 0), _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        """ThreadingMixIn's, with the thread named (what a test looks for after ``stop``)."""
        thread = threading.Thread(target=self.process_request_thread, args=(request, client_address),
                                  name=THREAD_NAME, daemon=True)
        thread.start()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away mid-request (a killed memory system) is not an error of the run."""


class TargetEndpoint:
    """The run's endpoint for its target: ``start()`` binds 127.0.0.1 on a free port, ``stop()`` closes it and every
    connection (also as a context manager). ``gateway``: the run's ``RunGateway``; ``routes``: which provider
    routes the two API surfaces call."""

    def __init__(self, gateway: Any, routes: EndpointRoutes) -> None:
        self.forwarder = Forwarder(gateway, routes)
        self._tokens: dict[str, ItemScope | None] = {}
        """Every live token: an item's own (its scope), or a worker's (the scope it serves now, or None)."""
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._on_stop: list[Callable[[], None]] = []

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> "TargetEndpoint":
        if self._server is None:
            self._server = _Server(self)
            self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1},
                                            name=THREAD_NAME, daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, close the port and every open connection, wait for the handlers to end, then call what
        waits for the stop (``when_stopped``)."""
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        with server.lock:
            connections, workers = list(server.connections), list(server.workers)
        for conn in connections:  # a keep-alive connection's handler would otherwise wait for its next request
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        deadline = time.monotonic() + _STOP_JOIN_S  # one wait for them all: a handler still in a provider call
        for worker in (*workers, thread):           # (Ctrl-C mid-call) is a daemon and ends with the process
            if worker is not None:
                worker.join(timeout=max(0.0, deadline - time.monotonic()))
        with self._lock:
            on_stop, self._on_stop = self._on_stop, []
        for callback in on_stop:  # the workers that called it: none keeps a stopped endpoint's URL
            callback()

    def when_stopped(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` when the endpoint stops (a long-lived worker that calls it is stopped with it)."""
        with self._lock:
            self._on_stop.append(callback)

    def __enter__(self) -> "TargetEndpoint":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the target endpoint is not running")
        return int(self._server.server_address[1])

    @property
    def root_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def openai_base_url(self, token: str) -> str:
        return f"{self.root_url}/t/{token}/v1"

    def anthropic_base_url(self, token: str) -> str:
        return f"{self.root_url}/t/{token}"

    # ------------------------------------------------------------------ tokens

    def item_scope(self) -> ItemScope:
        scope = ItemScope(self, secrets.token_urlsafe(18))
        with self._lock:
            self._tokens[scope.token] = scope
        return scope

    def worker_token(self) -> str:
        """A fixed token for a long-lived worker: its calls are refused until a scope binds it (``ItemScope.bind``)."""
        token = secrets.token_urlsafe(18)
        with self._lock:
            self._tokens[token] = None
        return token

    def env_for(self, token: str) -> dict[str, str]:
        """The environment of a process calling with ``token``: both SDKs' base URL variables, the same URLs under
        our names, and a placeholder key where the run's environment has none."""
        openai_url, anthropic_url = self.openai_base_url(token), self.anthropic_base_url(token)
        env = {"OPENAI_BASE_URL": openai_url, "ANTHROPIC_BASE_URL": anthropic_url,
               "LONGMEMEVAL_OPENAI_BASE_URL": openai_url, "LONGMEMEVAL_ANTHROPIC_BASE_URL": anthropic_url}
        env.update({name: PLACEHOLDER_KEY for name in KEY_VARIABLES if not os.environ.get(name, "").strip()})
        return env

    worker_env = env_for

    def _bind(self, worker_token: str, scope: ItemScope) -> None:
        with self._lock:
            if worker_token not in self._tokens or worker_token == scope.token:
                raise ValueError("not a worker token of this endpoint (endpoint.worker_token() makes one)")
            current = self._tokens[worker_token]
            if current is not None and current is not scope:
                raise ValueError("this worker token serves another item now: its scope must end first")
            self._tokens[worker_token] = scope

    def _unbind(self, worker_token: str, scope: ItemScope) -> None:
        with self._lock:
            if self._tokens.get(worker_token) is scope:
                self._tokens[worker_token] = None

    def retire(self, worker_token: str) -> None:
        """A worker's process is gone: its token is refused for good (a call it left behind, or a child of it that
        outlived it, is never attributed to the item its worker serves next)."""
        with self._lock:
            self._tokens.pop(worker_token, None)

    def _end(self, token: str, bound: list[str], scope: ItemScope) -> None:
        with self._lock:
            self._tokens.pop(token, None)
            for worker in bound:
                if self._tokens.get(worker) is scope:
                    self._tokens[worker] = None

    def scope_of(self, token: str) -> ItemScope | None:
        """The open scope calls with ``token`` are attributed to now (None: refused)."""
        with self._lock:
            scope = self._tokens.get(token)
        return None if scope is None or scope.closed else scope

    def _begin_call(self, token: str) -> ItemScope | None:
        """``scope_of(token)``, the call counted in flight under it (``ItemScope.settle``) in the same step as the
        token is looked up: a worker released after this waits for the call; one released before refuses it."""
        with self._lock:
            scope = self._tokens.get(token)
            if scope is None or scope.closed:
                return None
            scope._began()
            return scope


def _split_path(path: str) -> tuple[str | None, str]:
    """``/t/<token>/v1/messages?beta=true`` -> ``(token, "v1/messages")``; ``(None, path)`` without a token."""
    path = path.split("?", 1)[0]
    parts = path.lstrip("/").split("/", 2)
    if len(parts) < 3 or parts[0] != "t" or not parts[1]:
        return None, path
    return parts[1], parts[2].rstrip("/")


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    timeout = 600  # an idle keep-alive connection is dropped after this

    def setup(self) -> None:
        super().setup()
        with self.server.lock:
            self.server.connections.add(self.connection)
            self.server.workers.add(threading.current_thread())

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            with self.server.lock:
                self.server.connections.discard(self.connection)
                self.server.workers.discard(threading.current_thread())

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's signature
        pass  # nothing about a user's calls goes to the run's stderr

    def _reply(self, status: int, body: bytes, content_type: str = "application/json",
               headers: Mapping[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for name, value in (headers or {}).items():
                if name.lower() != "content-type":
                    self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
        except OSError:
            self.close_connection = True

    def _refuse(self, status: int, api: str, kind: str, message: str) -> None:
        self._reply(status, error_body(api, kind, message), headers={"x-should-retry": "false"})

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        _, route = _split_path(self.path)
        self._refuse(404, API_MESSAGES if route == "v1/messages" else "", "not_found",
                     f"the LongMemEval target endpoint serves POST v1/chat/completions, v1/embeddings and "
                     f"v1/messages only (GET {route})")

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        token, route = _split_path(self.path)
        api = APIS.get(route, "")
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            self.close_connection = True
            self._refuse(413, api, "bad_request", f"request body over {MAX_BODY_BYTES} bytes")
            return
        raw = self.rfile.read(length) if length else b""
        endpoint = self.server.endpoint
        scope = None if token is None else endpoint.scope_of(token)
        if scope is None:
            self._refuse(403, api, "permission_denied", "unknown or ended LongMemEval target-endpoint token: use the "
                         "base URLs this item's environment (or ctx) gives; a call outside an item is refused")
            return
        if not api:
            self._refuse(404, api, "not_found", f"no route POST {route}: the target endpoint serves "
                         "v1/chat/completions, v1/embeddings and v1/messages")
            return
        try:
            request = json.loads(raw)
        except ValueError:
            request = None
        if not isinstance(request, dict) or not isinstance(request.get("model"), str):
            self._refuse(400, api, "bad_request", "the request body must be a JSON object with a model")
            return
        self._forward(token, api, request)

    def _forward(self, token: str, api: str, request: dict[str, Any]) -> None:
        endpoint = self.server.endpoint
        scope = endpoint._begin_call(token)
        if scope is None:  # its item ended while the request was read
            self._refuse(403, api, "permission_denied", "the item of this LongMemEval target-endpoint token ended")
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            answer = endpoint.forwarder.forward(api, request, headers)
            scope.record(answer.call)
        finally:
            scope._done()
        if answer.reply is not None and request.get("stream") is True and api != "embeddings":
            self._reply(200, endpoint_sse.stream_body(api, answer.reply, request), endpoint_sse.CONTENT_TYPE)
            return
        self._reply(answer.status, answer.body, headers=answer.headers)
