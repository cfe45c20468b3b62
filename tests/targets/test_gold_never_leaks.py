"""No target ever shows gold to a model or a user's process.

The item carries a unique marker in every gold field (the answer, the evidence session ids) plus ``has_answer``
labels, and a marked question id. Every target runs on it; the marker, ``has_answer``, the question id and the
question type must not appear in any request the fake model server received, nor in what a subprocess or a
user's Python file was given.
"""

import json
import sys
from pathlib import Path

import pytest

from lme.targets import generation_driver as gd
from lme.targets import processes
from test_targets_common import GOLD, make_raw_item

EXAMPLES = Path(__file__).resolve().parents[2] / "plugins" / "examples"
QID = "QIDMARK_4242"
QTYPE = "knowledge-update"
FORBIDDEN = (GOLD, "has_answer", QID, QTYPE, "answer_")


def leaked_in(text: str) -> list[str]:
    return [marker for marker in FORBIDDEN if marker in text]


@pytest.fixture
def item():
    raw = make_raw_item(question_id=QID, question_type=QTYPE)
    raw["answer"] = f"Luna {GOLD}"
    return raw


@pytest.fixture
def gateway(fake_llm):
    from lme.models import providers

    return providers.Gateway(providers.ProviderSettings(max_attempts=2, backoff_base=0.01, timeout_s=20))


def _assert_server_saw_no_gold(server):
    assert server.requests, "the target made no model request: nothing was checked"
    for request in server.requests:
        text = request["raw"].decode("utf-8", errors="replace") + json.dumps(request["body"])
        assert leaked_in(text) == [], f"gold reached the model via {request['path']}"


@pytest.mark.parametrize("target,options", [
    ("full-context", {}),
    ("full-context", {"mode": "con", "history_format": "nl"}),
    ("oracle", {}),
    ("rag", {"top_k": 2}),
    ("rag", {"top_k": 2, "granularity": "turn", "embed_model": "openai:text-embedding-3-small"}),
])
def test_model_targets_never_send_gold(fake_llm, gateway, item, target, options, tmp_path):
    for provider, model in (("openai", "gpt-4o"), ("anthropic", "claude-sonnet-4-6")):
        if provider == "anthropic" and "embed_model" in options:
            continue
        gd.generate_hypothesis(item, provider, model, target=target, llm=gateway, options=options,
                               cache_dir=str(tmp_path))
    _assert_server_saw_no_gold(fake_llm)


def test_offline_target_output_and_debug_hold_no_gold(item):
    out = gd.generate_hypothesis(item, "offline", "extractive", target="offline")
    # the driver maps aliases back to real ids (which contain the marker) AFTER the target ran: check the rest
    out.pop("retrieved_session_ids")
    assert leaked_in(json.dumps(out)) == []


@pytest.mark.parametrize("mode", ["per-item", "jsonl"])
def test_command_target_stdin_holds_no_gold(item, tmp_path, mode):
    tee = tmp_path / "stdin.log"
    argv = [sys.executable, str(EXAMPLES / "echo_memory_cmd.py"), "--tee", str(tee)]
    if mode == "jsonl":
        argv.append("--jsonl")
    try:
        gd.generate_hypothesis(item, "openai", "gpt-4o", target="command", options={"command": argv, "mode": mode})
    finally:
        processes.stop_pools()
    received = tee.read_text()
    assert "adopted a kitten" in received  # the history did arrive
    assert leaked_in(received) == []


def test_python_target_receives_no_gold(item, tmp_path):
    seen = tmp_path / "seen.json"
    user = tmp_path / "spy_memory.py"
    user.write_text(
        "import json, sys\n"
        f"sys.path.insert(0, {str(EXAMPLES)!r})\n"
        "from echo_memory import generate as echo\n"
        "def generate(item, ctx):\n"
        f"    open({str(seen)!r}, 'w').write(json.dumps([item, ctx]))\n"
        "    return echo(item, ctx)\n"
    )
    gd.generate_hypothesis(item, "openai", "gpt-4o", target="python", options={"path": str(user)})
    received = seen.read_text()
    assert "adopted a kitten" in received and leaked_in(received) == []


def test_memory_ref_target_never_sends_gold(fake_llm, gateway, item, tmp_path):
    assert (gd.PLUGINS_DIR / "memory_ref" / "__init__.py").is_file()  # shipped: a missing one fails, never skips
    gd.generate_hypothesis(item, "openai", "gpt-4o", target="memory-ref", llm=gateway, cache_dir=str(tmp_path))
    _assert_server_saw_no_gold(fake_llm)
