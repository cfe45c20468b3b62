"""A scripted fake Anthropic Messages API for driving the real Claude Code CLI in tests.

Claude Code (``claude -p``) sends every model request to ``$ANTHROPIC_BASE_URL/v1/messages?beta=true`` with
``stream: true``; this server answers with server-sent events exactly as the API streams them (``message_start``,
``content_block_start``, ``ping``, ``content_block_delta`` with ``text_delta`` or ``input_json_delta``,
``content_block_stop``, ``message_delta`` with ``stop_reason`` and ``usage``, ``message_stop``).

What the "model" says comes from a *script*: a list of steps, each a :class:`Turn` or a function of the request
(an :class:`Exchange`) that returns a ``Turn`` or ``None`` ("this step is over, go to the next one"). So a step
can read the expanded slash command the CLI sent and run its next bash block, or read a tool result and
decide. Requests that are not the agent's main loop (no ``Bash`` tool offered: titles, summaries, checks) are
side requests and get a short text reply. Once the script is exhausted every main request gets a plain
``end_turn`` text, counted in ``overruns``, so a hook that keeps the session going cannot spin for ever
unnoticed.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterable, Mapping, Sequence, Union

_ids = itertools.count(1)


def _new_id(prefix: str) -> str:
    return f"{prefix}{time.time_ns():x}{next(_ids):04d}"


# --------------------------------------------------------------------------- what the model says


@dataclass(frozen=True)
class Turn:
    """One assistant message: content blocks in order (``text`` and ``tool_use``)."""

    blocks: tuple[dict[str, Any], ...]

    @property
    def stop_reason(self) -> str:
        return "tool_use" if any(b["type"] == "tool_use" for b in self.blocks) else "end_turn"


def say(text: str) -> Turn:
    return Turn(({"type": "text", "text": text},))


def tool(name: str, tool_input: Mapping[str, Any], text: str | None = None) -> Turn:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    blocks.append({"type": "tool_use", "id": _new_id("toolu_"), "name": name, "input": dict(tool_input)})
    return Turn(tuple(blocks))


def bash(command: str, *, description: str | None = None, timeout: int | None = None,
         run_in_background: bool | None = None) -> Turn:
    """A Bash tool call, with the optional fields Claude Code's Bash tool accepts."""
    data: dict[str, Any] = {"command": command}
    if description is not None:
        data["description"] = description
    if timeout is not None:
        data["timeout"] = timeout
    if run_in_background is not None:
        data["run_in_background"] = run_in_background
    return tool("Bash", data)


# --------------------------------------------------------------------------- what the CLI sent


@dataclass
class ToolResult:
    tool_use_id: str
    text: str
    is_error: bool

    @property
    def exit_code(self) -> int:
        """The command's exit status as Claude Code reports it (``Exit code N`` opens a failing Bash result)."""
        if not self.is_error:
            return 0
        match = re.match(r"\s*Exit code (\d+)", self.text)
        return int(match[1]) if match else -1


_BASH_FENCE = re.compile(r"^(?P<indent>[ \t]*)```bash\n(?P<body>.*?)^(?P=indent)```", re.S | re.M)


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    out = []
    for block in content or ():
        if isinstance(block, Mapping):
            if block.get("type") == "text":
                out.append(str(block.get("text", "")))
            elif block.get("type") == "tool_result":
                out.extend(_texts(block.get("content")))
    return out


@dataclass
class Exchange:
    """One main-loop request from the CLI, with readers for what scripts need."""

    body: dict[str, Any]
    index: int
    """0-based among main requests."""

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or ())

    def user_texts(self) -> list[str]:
        """Every text block of every user message, in order (tool results excluded)."""
        out = []
        for message in self.messages:
            if message.get("role") != "user":
                continue
            content = message.get("content")
            if isinstance(content, str):
                out.append(content)
                continue
            out += [str(b.get("text", "")) for b in content or () if isinstance(b, Mapping) and b.get("type") == "text"]
        return out

    def last_tool_results(self) -> list[ToolResult]:
        """The tool results of the last user message (the answer to the previous turn's tool calls)."""
        for message in reversed(self.messages):
            if message.get("role") != "user":
                continue
            content = message.get("content")
            if not isinstance(content, list):
                return []
            return [ToolResult(str(b.get("tool_use_id")), "\n".join(_texts(b.get("content"))), bool(b.get("is_error")))
                    for b in content if isinstance(b, Mapping) and b.get("type") == "tool_result"]
        return []

    def last_user_text(self) -> str:
        """The text blocks of the last user message (a Stop hook's reason arrives here), joined."""
        for message in reversed(self.messages):
            if message.get("role") == "user":
                content = message.get("content")
                if isinstance(content, str):
                    return content
                return "\n".join(str(b.get("text", "")) for b in content or ()
                                 if isinstance(b, Mapping) and b.get("type") == "text")
        return ""

    def last_text(self) -> str:
        """The text blocks of the last message of any role: a Stop hook's reason arrives as a system message."""
        if not self.messages:
            return ""
        content = self.messages[-1].get("content")
        if isinstance(content, str):
            return content
        return "\n".join(_texts(content))

    def loaded_skills(self) -> dict[str, str]:
        """skill name -> the body the Skill tool loaded (the text blocks after its ``Launching skill:`` result)."""
        found: dict[str, str] = {}
        for message in self.messages:
            content = message.get("content")
            if message.get("role") != "user" or not isinstance(content, list):
                continue
            name = None
            texts = []
            for block in content:
                if not isinstance(block, Mapping):
                    continue
                if block.get("type") == "tool_result":
                    match = re.match(r"Launching skill: (\S+)", "\n".join(_texts(block.get("content"))))
                    name = match[1] if match else name
                elif block.get("type") == "text" and name:
                    texts.append(str(block.get("text", "")))
            if name and texts:
                found[name] = "\n".join(texts)
        return found

    def expanded_commands(self) -> list["ExpandedCommand"]:
        """Every slash command the CLI expanded into this conversation, in order."""
        found = []
        for text in self.user_texts():
            name = re.search(r"<command-name>(.*?)</command-name>", text, re.S)
            if name:
                args = re.search(r"<command-args>(.*?)</command-args>", text, re.S)
                found.append(ExpandedCommand(name[1].strip(), args[1] if args else "", ""))
            elif found and not found[-1].body:
                found[-1] = ExpandedCommand(found[-1].name, found[-1].args, text)
        return found


@dataclass(frozen=True)
class ExpandedCommand:
    name: str
    """As sent in ``<command-name>``, e.g. ``/longmemeval-benchmarker:longmemeval-run``."""
    args: str
    body: str
    """The command's Markdown with ``${CLAUDE_PLUGIN_ROOT}`` and ``$ARGUMENTS`` substituted by the CLI."""

    def bash_blocks(self) -> list[str]:
        return bash_blocks(self.body)


def bash_blocks(markdown: str) -> list[str]:
    """The ```bash blocks of a Markdown text, in order; a fence indented in a list is dedented with its body."""
    blocks = []
    for match in _BASH_FENCE.finditer(markdown):
        indent = match["indent"]
        lines = match["body"].splitlines(keepends=True)
        blocks.append("".join(line[len(indent):] if line.startswith(indent) else line.lstrip() for line in lines))
    return blocks


Step = Union[Turn, Callable[[Exchange], Union[Turn, None]]]


def once(fn: Callable[[Exchange], Turn]) -> Callable[[Exchange], Union[Turn, None]]:
    """A step that answers one request with ``fn(exchange)`` and is then over."""

    def step(exchange: Exchange) -> Turn | None:
        return fn(exchange)

    step.single = True  # type: ignore[attr-defined]  # the server moves on once it answered
    return step


def play_blocks(doc: Callable[[Exchange], str], *needles: str, again_on: int | None = 4,
                stop_on: Callable[[str, ToolResult], bool] | None = None) -> Step:
    """A step that runs bash blocks of ``doc(exchange)`` (the Markdown the CLI sent), one Bash call each, as written.

    With no ``needles``, every block in order; else, per needle, the first block not run yet that contains it.
    A call that exits ``again_on`` (4: "still running, run it again") is run again. ``stop_on(block, result)``
    ends the step early (e.g. on the cost gate's exit 5).
    """
    state: dict[str, Any] = {"queue": None, "last": None}

    def step(exchange: Exchange) -> Turn | None:
        if state["queue"] is None:
            blocks = [b.strip() for b in bash_blocks(doc(exchange))]
            if needles:
                chosen, used = [], set()
                for needle in needles:
                    index = next((i for i, b in enumerate(blocks) if needle in b and i not in used), None)
                    if index is None:
                        raise LookupError(f"no bash block containing {needle!r} (left: {len(blocks) - len(used)})")
                    used.add(index)
                    chosen.append(blocks[index])
                blocks = chosen
            state["queue"] = list(blocks)
        last = state["last"]
        if last is not None:
            results = exchange.last_tool_results()
            result = results[-1] if results else ToolResult("", "", True)
            if again_on is not None and result.exit_code == again_on:
                return bash(last)
            if stop_on is not None and stop_on(last, result):
                state["queue"] = []
        if not state["queue"]:
            return None
        state["last"] = state["queue"].pop(0)
        return bash(state["last"])

    return step


def command_body(exchange: Exchange) -> str:
    """The body of the last slash command the CLI expanded (what ``play_blocks`` reads for a command)."""
    commands = exchange.expanded_commands()
    if not commands:
        raise LookupError("no expanded slash command in this conversation")
    return commands[-1].body


def skill_body(name: str) -> Callable[[Exchange], str]:
    def read(exchange: Exchange) -> str:
        skills = exchange.loaded_skills()
        if name not in skills:
            raise LookupError(f"skill {name} was not loaded (loaded: {sorted(skills)})")
        return skills[name]
    return read


# --------------------------------------------------------------------------- the server


@dataclass
class ScriptedClaude:
    """Serve ``script`` to Claude Code on 127.0.0.1. ``latency`` seconds before each reply."""

    script: Sequence[Step] = ()
    latency: float = 0.0
    requests: list[dict[str, Any]] = field(default_factory=list)
    """Every request: ``{"path", "headers", "body", "main"}``."""
    turns: list[Turn] = field(default_factory=list)
    """What was sent back to main requests, in order."""
    overruns: int = 0
    errors: list[str] = field(default_factory=list)
    """Exceptions raised by script steps (the reply was then an error text)."""

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._step = 0
        self._main = 0
        self._httpd: ThreadingHTTPServer | None = None

    # ---------------------------------------------------------------- lifecycle

    def start(self) -> "ScriptedClaude":
        handler = type("_Handler", (_Handler,), {"fake": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> "ScriptedClaude":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "start() the server first"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def load(self, script: Iterable[Step]) -> None:
        """A new script for the next session (the log is kept)."""
        with self._lock:
            self.script = list(script)
            self._step = 0
            self._main = 0

    @property
    def main_requests(self) -> list[Exchange]:
        with self._lock:
            return [Exchange(r["body"], i) for i, r in enumerate(r for r in self.requests if r["main"])]

    @property
    def finished(self) -> bool:
        return self._step >= len(self.script)

    # ---------------------------------------------------------------- replies

    def reply(self, body: dict[str, Any]) -> Turn:
        tools = {t.get("name") for t in body.get("tools") or () if isinstance(t, Mapping)}
        if "Bash" not in tools:
            return say("ok")
        with self._lock:
            exchange = Exchange(body, self._main)
            self._main += 1
            while self._step < len(self.script):
                step = self.script[self._step]
                if isinstance(step, Turn):
                    self._step += 1
                    self.turns.append(step)
                    return step
                try:
                    turn = step(exchange)
                except Exception as err:  # noqa: BLE001 - a broken script step must show in the test, not hang
                    self.errors.append(f"step {self._step}: {type(err).__name__}: {err}")
                    self._step = len(self.script)
                    return say(f"script error: {err}")
                if turn is None:
                    self._step += 1
                    continue
                if getattr(step, "single", False):
                    self._step += 1
                self.turns.append(turn)
                return turn
            self.overruns += 1
            return say("(script exhausted)")


class _Handler(BaseHTTPRequestHandler):
    fake: ScriptedClaude
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - base-class signature
        pass

    def _json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - http.server naming
        self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": self.path}})

    def do_POST(self) -> None:  # noqa: N802
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        path = self.path.split("?", 1)[0]
        tools = {t.get("name") for t in body.get("tools") or () if isinstance(t, Mapping)}
        with self.fake._lock:
            self.fake.requests.append({"path": path, "headers": dict(self.headers.items()), "body": body,
                                       "main": path == "/v1/messages" and "Bash" in tools})
        if path == "/v1/messages/count_tokens":
            self._json(200, {"input_tokens": 100})
            return
        if path != "/v1/messages":
            self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": path}})
            return
        if self.fake.latency:
            time.sleep(self.fake.latency)
        turn = self.fake.reply(body)
        if body.get("stream"):
            self._stream(body, turn)
        else:
            self._json(200, _message(body, turn))
        self.close_connection = True

    def _event(self, name: str, data: Mapping[str, Any]) -> None:
        self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
        self.wfile.flush()

    def _stream(self, body: Mapping[str, Any], turn: Turn) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.send_header("request-id", _new_id("req_"))
        self.end_headers()
        start = _message(body, Turn(()))
        start.update(stop_reason=None, usage={"input_tokens": 100, "output_tokens": 1})
        self._event("message_start", {"type": "message_start", "message": start})
        for index, block in enumerate(turn.blocks):
            if block["type"] == "text":
                self._event("content_block_start", {"type": "content_block_start", "index": index,
                                                    "content_block": {"type": "text", "text": ""}})
                self._event("ping", {"type": "ping"})
                self._event("content_block_delta", {"type": "content_block_delta", "index": index,
                                                    "delta": {"type": "text_delta", "text": block["text"]}})
            else:
                self._event("content_block_start", {"type": "content_block_start", "index": index, "content_block": {
                    "type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}})
                self._event("ping", {"type": "ping"})
                self._event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {
                    "type": "input_json_delta", "partial_json": json.dumps(block["input"])}})
            self._event("content_block_stop", {"type": "content_block_stop", "index": index})
        self._event("message_delta", {"type": "message_delta",
                                      "delta": {"stop_reason": turn.stop_reason, "stop_sequence": None},
                                      "usage": {"output_tokens": 20}})
        self._event("message_stop", {"type": "message_stop"})


def _message(body: Mapping[str, Any], turn: Turn) -> dict[str, Any]:
    return {"id": _new_id("msg_"), "type": "message", "role": "assistant", "model": body.get("model", ""),
            "content": [dict(b) for b in turn.blocks], "stop_reason": turn.stop_reason, "stop_sequence": None,
            "usage": {"input_tokens": 100, "output_tokens": 20}}
