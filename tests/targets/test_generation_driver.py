import json
from pathlib import Path

import pytest

from lme.targets import generation_driver as gd
from lme.cli import generation_driver as generation_driver_cli
from lme.core.errors import UserError, run_main
from lme.core.records import Question
from test_targets_common import GOLD, RecordingLLM, make_raw_item, prompt_of


def test_unknown_target_name_is_a_user_error_listing_valid_names():
    with pytest.raises(UserError) as err:
        gd.load_target("no-such-target")
    assert "full-context" in str(err.value) and "memory-ref" in str(err.value)


def test_builtin_target_whose_file_is_absent_gives_a_clear_error(monkeypatch):
    monkeypatch.setitem(gd.BUILTIN_TARGETS, "memory-ref", "plugins/not_built_yet/__init__.py")
    with pytest.raises(UserError, match="not in this checkout"):
        gd.load_target("memory-ref")


def test_every_builtin_target_of_this_brief_loads_with_generate():
    for name in gd.BUILTIN_TARGETS:
        if name != "memory-ref":  # built elsewhere; covered by the gold-never-leaks test when present
            assert callable(gd.load_target(name).generate)


def test_target_file_without_generate_is_refused(tmp_path):
    path = tmp_path / "empty_target.py"
    path.write_text("from records import Hypothesis\nNAME = 'x'\n")  # a toolkit target: loaded in the run
    with pytest.raises(UserError, match="defines no generate"):
        gd.load_target(str(path))
    users = tmp_path / "memsys.py"
    users.write_text("NAME = 'x'\n")  # your own system: read, not run, by the run's start check
    with pytest.raises(ValueError, match="memsys.py defines no generate"):
        gd.describe_target(str(users))
    with pytest.raises(ValueError, match="imports the toolkit's Hypothesis: .* name it as --target "):
        gd.describe_target("python", {"path": str(path)})  # a toolkit target given to the dict adapter


def test_full_context_returns_hypothesis_dict_with_accounting_and_target_name():
    llm = RecordingLLM()
    out = gd.generate_hypothesis(make_raw_item(), "openai", "gpt-4o", llm=llm)
    assert out["hypothesis"] == "Your cat is named Luna."
    assert (out["tokensIn"], out["tokensOut"], out["latencyMs"]) == (100, 7, 12.5)
    assert out["target"] == "full-context" and out["calls"][0]["role"] == "reader"
    (request,) = llm.requests
    assert "pasta recipe" in prompt_of(request) and "Luna" in prompt_of(request)
    assert GOLD not in prompt_of(request)


def test_oracle_target_sees_only_the_evidence_sessions():
    llm = RecordingLLM()
    gd.generate_hypothesis(Question.from_dict(make_raw_item()), "openai", "gpt-4o", target="oracle", llm=llm)
    prompt = prompt_of(llm.requests[0])
    assert "named my cat Luna" in prompt
    assert "pasta" not in prompt and "bicycle" not in prompt and GOLD not in prompt


def test_retrieved_aliases_are_mapped_back_to_real_session_ids():
    out = gd.generate_hypothesis(make_raw_item(), "offline", "extractive", target="offline")
    assert out["retrieved_session_ids"][0] == f"answer_{GOLD}_1"
    assert sorted(out["retrieved_session_ids"]) == sorted(make_raw_item()["haystack_session_ids"])


def write_target(tmp_path: Path, body: str) -> str:
    path = tmp_path / "custom_target.py"
    path.write_text("from records import Hypothesis\n" + body)
    return str(path)


def test_unknown_retrieved_aliases_are_dropped_and_counted(tmp_path):
    target = write_target(tmp_path, "def generate(item, ctx):\n"
                                    "    return Hypothesis('x', retrieved_session_ids=('session_002', 'bogus'))\n")
    out = gd.generate_hypothesis(make_raw_item(), "offline", "m", target=target)
    assert out["retrieved_session_ids"] == [f"answer_{GOLD}_1"]
    assert out["debug"]["unknown_retrieved_session_ids"] == 1
    assert out["target"] == "custom_target"


def test_target_bug_becomes_a_target_error(tmp_path):
    target = write_target(tmp_path, "def generate(item, ctx):\n    raise KeyError('oops')\n")
    with pytest.raises(gd.TargetError) as err:
        gd.generate_hypothesis(make_raw_item(), "offline", "m", target=target)
    assert err.value.kind == "target" and "KeyError" in str(err.value)


def test_provider_error_from_a_target_passes_through_unchanged(tmp_path):
    from lme.models import providers

    target = write_target(tmp_path, "from lme.models import providers\ndef generate(item, ctx):\n"
                                    "    raise providers.ProviderError('rate_limit', 'slow down', attempts=8)\n")
    with pytest.raises(providers.ProviderError) as err:
        gd.generate_hypothesis(make_raw_item(), "offline", "m", target=target)
    assert err.value.kind == "rate_limit"


def test_empty_hypothesis_is_an_answer_to_judge_but_a_non_string_is_a_target_error(tmp_path):
    target = write_target(tmp_path, "def generate(item, ctx):\n    return Hypothesis('   ')\n")
    assert gd.generate_hypothesis(make_raw_item(), "offline", "m", target=target)["hypothesis"] == "   "
    (tmp_path / "b").mkdir()
    target = write_target(tmp_path / "b", "def generate(item, ctx):\n    return Hypothesis(None)\n")
    with pytest.raises(gd.TargetError, match="not a string"):
        gd.generate_hypothesis(make_raw_item(), "offline", "m", target=target)


def test_wall_time_fills_latency_when_the_target_reports_none(tmp_path):
    target = write_target(tmp_path, "import time\ndef generate(item, ctx):\n"
                                    "    time.sleep(0.02)\n    return Hypothesis('x')\n")
    assert gd.generate_hypothesis(make_raw_item(), "offline", "m", target=target)["latencyMs"] >= 20


def test_prepare_requests_previews_reader_calls_without_calling_a_model():
    (request,) = gd.prepare_requests_by_role(make_raw_item(), "openai", "gpt-4o", target="full-context")["reader"]
    assert "Current date: 2023/06/01 (Thu) 12:00" in prompt_of(request)
    assert gd.prepare_requests_by_role(make_raw_item(), "offline", "x", target="offline") == {"reader": []}


def test_public_view_for_oracle_keeps_only_evidence_and_hides_ids():
    view = gd.public_view(Question.from_dict(make_raw_item()), "oracle")
    assert [s.session_id for s in view.sessions] == ["session_001"]


def test_parse_option_reads_json_values_and_keeps_plain_strings():
    assert gd.parse_option("top_k=5") == ("top_k", 5)
    assert gd.parse_option('command=["a", "b"]') == ("command", ["a", "b"])
    assert gd.parse_option("mode=con") == ("mode", "con")
    with pytest.raises(UserError):
        gd.parse_option("novalue")


def test_cli_prints_the_hypothesis_json_for_one_item(tmp_path, capsys):
    data = tmp_path / "mini.json"
    data.write_text(json.dumps([make_raw_item(), make_raw_item(question_id="gen_002")]))
    code = run_main(generation_driver_cli.main, ["--dataset", str(data), "--question-id", "gen_002", "--target", "offline",
                              "--target-model", "offline:extractive"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["target"] == "offline" and "Luna" in out["hypothesis"]


def test_cli_unknown_question_id_is_one_line_exit_2(tmp_path, capsys):
    data = tmp_path / "mini.json"
    data.write_text(json.dumps([make_raw_item()]))
    code = run_main(generation_driver_cli.main, ["--dataset", str(data), "--question-id", "nope", "--target", "offline"])
    err = capsys.readouterr().err
    assert code == 2 and "nope" in err and err.count("\n") == 1


def test_plugins_readme_documents_every_builtin_target_and_its_examples_exist():
    readme = (gd.PLUGINS_DIR / "README.md").read_text()
    for name in gd.BUILTIN_TARGETS:
        assert f"`{name}`" in readme
    for example in ("examples/echo_memory.py", "examples/echo_memory_cmd.py"):
        assert example in readme and (gd.PLUGINS_DIR / example).is_file()


def test_plugins_readme_says_an_empty_hypothesis_is_judged_as_the_adapters_do(tmp_path):
    readme = " ".join((gd.PLUGINS_DIR / "README.md").read_text().split())
    assert "An empty `hypothesis` (`\"\"`) is an answer: it is judged like any other" in readme
    assert "missing or empty `hypothesis`" not in readme
    user = tmp_path / "memsys.py"
    user.write_text("def generate(item, ctx):\n    return {'hypothesis': ''}\n")  # the README's contract, as written
    assert gd.generate_hypothesis(make_raw_item(), "offline", "m", target=str(user))["hypothesis"] == ""


def test_cli_bad_target_fails_before_reading_the_dataset(capsys):
    assert run_main(generation_driver_cli.main, ["--dataset", "/nonexistent.json", "--question-id", "x", "--target", "bogus"]) == 2
    assert "unknown target 'bogus'" in capsys.readouterr().err


def test_dropped_session_aliases_become_real_ids_with_a_count_of_lost_evidence(tmp_path):
    path = tmp_path / "truncating_target.py"
    path.write_text(
        "from records import Hypothesis\n"
        "def generate(item, ctx):\n"
        "    return Hypothesis(hypothesis='x', truncation={'truncated': True, 'dropped_sessions': 3,\n"
        "        'dropped_session_ids': ['session_003', 'session_002', 'session_999']})\n"
    )
    out = gd.generate_hypothesis(make_raw_item(), "openai", "gpt-4o", target=str(path), llm=RecordingLLM())
    info = out["truncation"]
    assert info["dropped_session_ids"] == ["ultrachat_bbb_2", f"answer_{GOLD}_1"]
    assert info["dropped_evidence"] == 1 and info["unknown_dropped"] == 1
    assert info["truncated"] is True


def test_oracle_truncation_maps_aliases_within_the_evidence_only_view():
    item = make_raw_item()
    # a model with no local tokenizer: counted by estimate, no tiktoken load
    out = gd.generate_hypothesis(item, "vllm", "llama-3-70b", target="oracle", llm=RecordingLLM(),
                                 options={"context_window": 1500 + 10, "max_tokens": 500})
    info = out["truncation"]
    assert info["dropped_session_ids"] == [f"answer_{GOLD}_1"] and info["dropped_evidence"] == 1


def test_the_retrieval_detail_says_whether_top_k_covered_every_session_and_debug_is_kept_as_it_came(tmp_path):
    path = tmp_path / "retrieving_target.py"
    path.write_text(
        "from records import Hypothesis\n"
        "def generate(item, ctx):\n"
        "    k = ctx.options['top_k']\n"
        "    return Hypothesis(hypothesis='x', retrieved_session_ids=('session_003',), debug={'retrieval': {\n"
        "        'top': ['session_003', 'session_002']}}, retrieval={'top_k': k, 'granularity': 'turn'})\n"
    )
    item = make_raw_item()
    for k, covers in ((2, False), (len(item["haystack_sessions"]), True)):
        out = gd.generate_hypothesis(item, "openai", "gpt-4o", target=str(path), llm=RecordingLLM(),
                                     options={"top_k": k})
        assert out["retrieval"] == {"top_k": k, "granularity": "turn", "top_k_covers_all": covers}
        assert out["retrieved_session_ids"] == ["ultrachat_bbb_2"]
        assert out["debug"]["retrieval"]["top"] == ["session_003", "session_002"]  # the target's own, unread
