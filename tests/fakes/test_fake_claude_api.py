"""The scripted fake Messages API: the official SDK parses its stream, and its script steps behave as documented."""

from __future__ import annotations

import anthropic

from fake_claude_api import Exchange, ScriptedClaude, bash, command_body, once, play_blocks, say, skill_body, tool

MAIN = {"tools": [{"name": "Bash", "input_schema": {"type": "object"}}]}


def _stream(fake: ScriptedClaude, **extra):
    client = anthropic.Anthropic(base_url=fake.base_url, api_key="sk-ant-test-DUMMY")
    with client.messages.stream(model="claude-test", max_tokens=100, messages=[{"role": "user", "content": "hi"}],
                                **extra) as stream:
        return stream.get_final_message()


def test_the_sdk_reads_the_stream_text_and_tool_use_alike():
    with ScriptedClaude([tool("Bash", {"command": "echo 1", "timeout": 5000}, text="Running it."), say("Done.")]) as fake:
        first = _stream(fake, tools=MAIN["tools"])
        second = _stream(fake, tools=MAIN["tools"])
        side = _stream(fake)  # no Bash tool offered: a side request
    assert first.stop_reason == "tool_use" and first.content[0].text == "Running it."
    assert (first.content[1].name, first.content[1].input) == ("Bash", {"command": "echo 1", "timeout": 5000})
    assert second.stop_reason == "end_turn" and second.content[0].text == "Done."
    assert side.content[0].text == "ok" and fake.finished and fake.overruns == 0
    assert [r["main"] for r in fake.requests] == [True, True, False]


def test_an_exhausted_script_answers_and_counts_the_overrun():
    with ScriptedClaude([say("only")]) as fake:
        _stream(fake, tools=MAIN["tools"])
        assert _stream(fake, tools=MAIN["tools"]).content[0].text == "(script exhausted)"
    assert fake.overruns == 1


def _exchange(*messages) -> Exchange:
    return Exchange({**MAIN, "messages": list(messages)}, 0)


COMMAND = {"role": "user", "content": [
    {"type": "text", "text": "<command-message>p:run</command-message>\n<command-name>/p:run</command-name>\n"
                             "<command-args>--max 2</command-args>\n"},
    {"type": "text", "text": "Run it.\n\n```bash\necho one --max 2\n```\n\n1. Then:\n\n   ```bash\n   echo two\n   ```\n"}]}


def result(text: str, error: bool = False) -> dict:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": text,
                                         "is_error": error}]}


def test_the_exchange_reads_the_expanded_command_a_loaded_skill_and_tool_results():
    skill = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "s", "content": "Launching skill: p:loop"},
                                         {"type": "text", "text": "Base directory ...\n```bash\necho step\n```\n"}]}
    exchange = _exchange(COMMAND, skill, result("Exit code 4\nrunning", True))
    [command] = exchange.expanded_commands()
    assert (command.name, command.args, command.bash_blocks()) == ("/p:run", "--max 2", ["echo one --max 2\n", "echo two\n"])
    assert skill_body("p:loop")(exchange).startswith("Base directory") and command_body(exchange).startswith("Run it.")
    [last] = exchange.last_tool_results()
    assert (last.exit_code, last.text) == (4, "Exit code 4\nrunning")
    assert _exchange(result("fine")).last_tool_results()[0].exit_code == 0


def test_play_blocks_runs_each_block_again_on_exit_4_and_stops_where_told():
    step = play_blocks(command_body)
    assert step(_exchange(COMMAND)).blocks[0]["input"] == {"command": "echo one --max 2"}
    again = step(_exchange(COMMAND, result("Exit code 4\nstill running", True)))
    assert again.blocks[0]["input"]["command"] == "echo one --max 2"
    assert step(_exchange(COMMAND, result("done"))).blocks[0]["input"]["command"] == "echo two"
    assert step(_exchange(COMMAND, result("done"))) is None

    picky = play_blocks(command_body, "two", stop_on=lambda block, r: r.exit_code == 5)
    assert picky(_exchange(COMMAND)).blocks[0]["input"]["command"] == "echo two"
    assert picky(_exchange(COMMAND, result("Exit code 5\nask the user", True))) is None


def test_once_answers_one_request_and_moves_on():
    with ScriptedClaude([once(lambda ex: bash(f"echo {ex.index}")), say("end")]) as fake:
        assert _stream(fake, tools=MAIN["tools"]).content[0].input == {"command": "echo 0"}
        assert _stream(fake, tools=MAIN["tools"]).content[0].text == "end"
    assert fake.finished and fake.errors == []
