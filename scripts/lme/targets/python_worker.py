"""The process that runs a user's Python file for the ``python`` target: standard library only, started by
``plugins/python_file.py`` (one process per worker of the run's pool), never imported by the toolkit.

    python python_worker.py USER_FILE

It imports the file once, as a script's folder is imported (the file's folder first on ``sys.path``), and prints
one line saying so: ``{"ready": true}``, or ``{"ready": false, "error": ...}``. Then it answers one item per stdin
line ``{"item": ..., "ctx": ...}`` with one line ``{"reply": <what generate returned>}`` or ``{"error": {"type",
"message", "traceback"}}``, one item at a time, until stdin closes. What the user's code prints goes to stderr:
stdout carries only these lines. It exits on its own when the run that started it is gone.

Each item's ``ctx`` gets ``endpoints``: ``{"openai", "anthropic"}``, the base URLs of the run's target endpoint this
process was started with (``LONGMEMEVAL_OPENAI_BASE_URL`` / ``LONGMEMEVAL_ANTHROPIC_BASE_URL``, read before the
user's file is imported; each None outside a run).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any, BinaryIO

TRACEBACK_CHARS = 1500
"""The end of a traceback kept in an error reply (the frames nearest the failure)."""
MESSAGE_CHARS = 300
PARENT_CHECK_S = 0.5
ENDPOINT_VARIABLES = {"openai": "LONGMEMEVAL_OPENAI_BASE_URL", "anthropic": "LONGMEMEVAL_ANTHROPIC_BASE_URL"}
"""Where ``ctx["endpoints"]`` comes from: the variables ``lme.models.target_endpoint`` sets for a worker's token."""


def protocol_streams() -> tuple[BinaryIO, BinaryIO]:
    """(requests, replies): the process's stdin and stdout moved aside; fd 0 then reads nothing and fd 1 writes
    to stderr, so the user's prints (and its child processes') never break a reply line."""
    requests = os.fdopen(os.dup(0), "rb")
    replies = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    return requests, replies


def exit_with_parent() -> None:
    """End this process when the run that started it is gone (a run abandoned by a second Ctrl-C exits without
    stopping its workers: one stuck in ``generate`` would otherwise live on)."""
    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(PARENT_CHECK_S)
            if os.getppid() != parent:
                os._exit(3)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def failure(exc: BaseException, user_file: str) -> dict[str, str]:
    """The error reply for ``exc``: its type and message (one line) and the end of its traceback, from the user's
    frames on (each line of the exception's own text bounded, so a long message leaves room for the frames)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != user_file:
        tb = tb.tb_next  # drop this worker's frames and importlib's (a SyntaxError keeps none: it names its line)
    frames = f"Traceback (most recent call last):\n{''.join(traceback.format_tb(tb))}" if tb is not None else ""
    own = [_bounded(line) for line in "".join(traceback.format_exception_only(type(exc), exc)).splitlines()]
    text = frames + "\n".join(own)
    if len(text) > TRACEBACK_CHARS:
        text = "…" + text[-TRACEBACK_CHARS:]
    first = str(exc).splitlines()[0] if str(exc).strip() else ""
    message = _bounded(f"{type(exc).__name__}: {first}" if first else type(exc).__name__)
    return {"type": type(exc).__name__, "message": message, "traceback": text}


def _bounded(line: str) -> str:
    return line if len(line) <= MESSAGE_CHARS else line[: MESSAGE_CHARS - 1] + "…"


def module_name(path: Path) -> str:
    """The user's file as a module: its own name, unless that would hide a module already loaded or one of the
    standard library's."""
    stem = path.stem
    taken = stem in sys.modules or stem in getattr(sys, "stdlib_module_names", ())
    return "user_memory_system" if taken or not stem.isidentifier() else stem


class _FromSource(importlib.machinery.SourceFileLoader):
    """Compiles the user's file from its text every time, never from a ``.pyc``: a cached one is trusted by the
    file's size and its mtime in whole seconds, so an edit of the same size within the same second would run the
    old code under the new file's code id."""

    def get_code(self, fullname: str) -> Any:
        return self.source_to_code(self.get_data(self.path), self.path)


def load(user_file: str) -> Any:
    """Import the user's file (its folder first on ``sys.path``, as when it runs as a script)."""
    path = Path(user_file)
    sys.path[0] = str(path.parent)  # not this worker's folder: the toolkit's modules must not shadow the user's
    sys.argv = [str(path)]
    name = module_name(path)
    spec = importlib.util.spec_from_file_location(name, path, loader=_FromSource(name, str(path)))
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    if not callable(getattr(module, "generate", None)):
        raise AttributeError(f"{path.name} defines no generate(item, ctx) (see plugins/README.md)")
    return module


def plain(value: Any) -> Any:
    """A value JSON has no form for, made plain: a numpy number or array, a set or tuple, else its text."""
    for method in ("item", "tolist"):
        if callable(getattr(value, method, None)):
            return getattr(value, method)()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)


def send(replies: BinaryIO, message: dict[str, Any]) -> None:
    replies.write(json.dumps(message, ensure_ascii=False, default=plain).encode("utf-8") + b"\n")
    replies.flush()


def endpoints() -> dict[str, str | None]:
    """The run's target endpoint URLs this process was given (each None outside a run)."""
    return {api: os.environ.get(name) or None for api, name in ENDPOINT_VARIABLES.items()}


def answer(module: Any, line: bytes, user_file: str, urls: dict[str, str | None]) -> dict[str, Any]:
    """One item's reply line (its ``generate``'s answer, or the failure)."""
    try:
        request = json.loads(line)
        reply = module.generate(request["item"], {**request["ctx"], "endpoints": dict(urls)})
        json.dumps(reply, default=plain)  # fails here, as this item's error, not while sending
        return {"reply": reply}
    except BaseException as exc:  # noqa: BLE001 - the user's bug (even a SystemExit) is this item's error
        return {"error": failure(exc, user_file)}


def serve(user_file: str) -> None:
    requests, replies = protocol_streams()
    exit_with_parent()
    user_file = str(Path(user_file).resolve())
    urls = endpoints()  # before the user's code can change the environment
    try:
        module = load(user_file)
    except BaseException as exc:  # noqa: BLE001 - reported to the run, which records it as the item's error
        send(replies, {"ready": False, "error": failure(exc, user_file)})
        return
    send(replies, {"ready": True})
    for line in requests:
        if line.strip():
            send(replies, answer(module, line, user_file, urls))


if __name__ == "__main__":
    serve(sys.argv[1])
