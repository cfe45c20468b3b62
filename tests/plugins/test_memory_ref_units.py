"""memory-ref's options, writer cache, rerank parsing, fusion and package loading (no server, no data)."""

from __future__ import annotations

import importlib.util
import sys
import threading
from pathlib import Path

import pytest

from lme.core.errors import UserError
from lme.core.records import ChatRequest, Completion, PublicSession, PublicTurn

PLUGINS = Path(__file__).resolve().parents[2] / "plugins"
sys.path.insert(0, str(PLUGINS))

from memory_ref import index, rerank, writer  # noqa: E402
from memory_ref.stack import Role, load_settings  # noqa: E402


class ScriptedLLM:
    """An in-process LLM: replies by function, counts calls."""

    def __init__(self, reply):
        self.reply = reply
        self.requests: list[ChatRequest] = []
        self._lock = threading.Lock()

    def complete(self, request: ChatRequest) -> Completion:
        with self._lock:
            self.requests.append(request)
        return Completion(text=self.reply(request), tokensIn=10, tokensOut=5, latencyMs=1.0,
                          provider=request.provider, model=request.model)

    def embed(self, provider, model, texts):
        raise AssertionError("not used")


def session(alias: str, text: str, day: str = "2023/05/20 (Sat) 10:00") -> PublicSession:
    return PublicSession(alias, day, (PublicTurn("user", text), PublicTurn("assistant", "ok")))


# --------------------------------------------------------------------------- options


def test_writer_and_reader_fall_back_to_the_target_model_and_embed_rerank_default_off():
    s = load_settings({}, "anthropic", "claude-x", "/tmp/c")
    assert s.roles() == {"writer": "anthropic:claude-x", "reader": "anthropic:claude-x", "embed": None,
                         "rerank": None}
    assert (s.symbolic_temporal, s.symbolic_resolver, s.symbolic_bypass) == (True, True, True)
    assert s.top_k == 10 and s.use_writer and s.facts_cache == "/tmp/c" and not s.bypass_counts


def test_stack_roles_and_switches_are_read_from_options():
    s = load_settings({"stack": {"writer": "openai:gpt-4o-mini", "embed": "openai:text-embedding-3-small"},
                       "symbolic_bypass": "false", "top_k": "5", "use_writer": False, "facts_cache": "/x"},
                      "openai", "gpt-4o", None)
    assert s.embed == Role("openai", "text-embedding-3-small")
    assert s.writer is None and not s.use_writer and not s.symbolic_bypass and s.top_k == 5
    assert s.facts_cache == "/x"


@pytest.mark.parametrize("options, needle", [
    ({"stack": {"reader": "gpt-4o"}}, "stack.reader"),
    ({"stack": {"writter": "openai:x"}}, "unknown role"),
    ({"stack": "openai:x"}, "targetOptions.stack"),
    ({"symbolic_temporal": "maybe"}, "symbolic_temporal"),
    ({"top_k": 0}, "top_k"),
    ({"granularity": "paragraph"}, "granularity"),
])
def test_bad_options_raise_a_user_error_naming_the_key(options, needle):
    with pytest.raises(UserError, match=needle):
        load_settings(options, "openai", "gpt-4o", None)


# --------------------------------------------------------------------------- writer cache


def fact_reply(request: ChatRequest) -> str:
    body = request.messages[0]["content"].split("Session:", 1)[1]
    if "cat" in body:
        return '{"fact": "The user has a cat.", "speaker": "user"}'
    if "garbled" in body:
        return "sorry, I cannot do JSON"
    return "NONE"


def test_cache_key_ignores_alias_and_date_but_not_the_model_or_content():
    role = Role("openai", "m")
    a = session("session_001", "I have a cat")
    assert writer.session_key(role, a) == writer.session_key(role, session("session_042", "I have a cat"))
    assert writer.session_key(role, a) == writer.session_key(
        role, session("session_001", "I have a cat", "2023/05/21 (Sun) 10:00"))
    assert writer.session_key(role, a) != writer.session_key(Role("openai", "m2"), a)
    assert writer.session_key(role, a) != writer.session_key(role, session("session_001", "I have a dog"))


def test_cached_facts_are_reattached_to_the_new_alias_and_not_requested_again(tmp_path):
    llm = ScriptedLLM(fact_reply)
    cache = writer.FactCache(tmp_path)
    role = Role("openai", "m")
    facts, stats = writer.extract_facts([session("session_001", "I have a cat"), session("session_002", "hi")],
                                        role, llm, cache)
    assert [f.session_id for f in facts] == ["session_001"] and stats.calls == 2 and len(cache) == 2
    again, stats2 = writer.extract_facts([session("session_007", "I have a cat")], role, llm, cache)
    assert stats2.cache_hits == 1 and stats2.calls == 0 and len(llm.requests) == 2
    assert again[0].session_id == "session_007" and again[0].text == "The user has a cat."


def test_cached_when_is_resolved_against_each_items_own_session_date(tmp_path):
    llm = ScriptedLLM(lambda r: '{"fact": "The user went hiking.", "when": "last Friday"}')
    cache = writer.FactCache(tmp_path)
    role = Role("openai", "m")
    first, _ = writer.extract_facts([session("session_001", "hike", "2023/05/20 (Sat) 10:00")], role, llm, cache)
    second, stats = writer.extract_facts([session("session_003", "hike", "2023/06/06 (Tue) 10:00")], role, llm, cache)
    assert stats.cache_hits == 1 and len(llm.requests) == 1
    assert first[0].event_date == "2023/05/19" and second[0].event_date == "2023/06/02"
    assert "2023/05/20" not in llm.requests[0].messages[0]["content"]  # the writer never sees the date


def test_malformed_writer_reply_is_counted_and_not_cached(tmp_path):
    llm = ScriptedLLM(fact_reply)
    cache = writer.FactCache(tmp_path)
    _, stats = writer.extract_facts([session("session_001", "garbled stuff")], Role("openai", "m"), llm, cache)
    assert stats.malformed_lines == 1 and len(cache) == 0


def test_cache_is_shared_safely_by_many_threads(tmp_path):
    llm = ScriptedLLM(fact_reply)
    role = Role("openai", "m")
    sessions = [session(f"session_{i:03d}", f"my cat number {i}") for i in range(40)]
    errors: list[BaseException] = []

    def work():
        try:
            writer.extract_facts(sessions, role, llm, writer.FactCache(tmp_path), parallel=4)
        except BaseException as err:  # noqa: BLE001 - surfaced below
            errors.append(err)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(writer.FactCache(tmp_path)) == 40
    assert (tmp_path / writer.CACHE_FILE).exists()


# --------------------------------------------------------------------------- rerank and fusion


def test_rerank_parse_keeps_named_ids_first_then_the_rest_in_fused_order():
    ids = ["session_001", "session_002", "session_003"]
    assert rerank.parse_order('Sure: ["session_003", "nope", "session_003"]', ids) == [
        "session_003", "session_001", "session_002"]
    assert rerank.parse_order("no list here", ids) is None
    assert rerank.parse_order('["x", "y"]', ids) is None
    assert rerank.parse_order("[broken", ids) is None


def test_rrf_rewards_agreement_and_weights_sources():
    assert index.rrf([["a", "b", "c"], ["b", "a", "c"], ["b", "c", "a"]])[0] == "b"
    assert index.rrf([["a", "b"], ["b", "a"]], weights=[1.0, 0.3]) == ["a", "b"]


def test_facts_expand_session_documents_so_a_paraphrase_is_found():
    from memory_ref.facts import Fact
    sessions = [session("session_001", "we talked about weather"), session("session_002", "some chat about pets")]
    plain = index.retrieve("adopted kitten", sessions)
    fact = Fact("The user adopted a kitten.", session_id="session_002", session_date="2023/05/20 (Sat) 10:00")
    expanded = index.retrieve("adopted kitten", sessions, [fact])
    assert expanded.ranked[0] == 1 and "facts" in expanded.lists and "facts" not in plain.lists
    assert sorted(expanded.ranked) == [0, 1]


def test_turn_granularity_uses_turn_documents_only():
    result = index.retrieve("pets", [session("session_001", "pets")], granularity="turn")
    assert set(result.lists) == {"turns"}


# --------------------------------------------------------------------------- loading


def test_package_loaded_as_a_plain_module_still_reaches_its_pipeline():
    spec = importlib.util.spec_from_file_location("some_plain_name", PLUGINS / "memory_ref" / "__init__.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    pipeline = module._pipeline()
    assert callable(pipeline.generate)


def test_an_unknown_retriever_preset_is_a_user_error():
    with pytest.raises(UserError, match="retriever must be one of"):
        load_settings({"retriever": "bm42"}, "openai", "gpt-4o-mini", None)
    assert load_settings({}, "openai", "gpt-4o-mini", None).retriever == "best"
