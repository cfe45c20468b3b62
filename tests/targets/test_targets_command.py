"""The command and python adapters, with real subprocesses and real user files."""

import sys
import time
from pathlib import Path

import pytest

from lme.targets import generation_driver as gd
from lme.targets import processes
from test_targets_common import GOLD, make_raw_item

EXAMPLES = Path(__file__).resolve().parents[2] / "plugins" / "examples"
ECHO_CMD = [sys.executable, str(EXAMPLES / "echo_memory_cmd.py")]


@pytest.fixture(autouse=True)
def _stop_jsonl_processes():
    yield
    processes.stop_pools()


def run_command(options, item=None):
    return gd.generate_hypothesis(item or make_raw_item(), "offline", "none", target="command", options=options)


def script(tmp_path: Path, body: str) -> list[str]:
    path = tmp_path / "user_system.py"
    path.write_text("import json, sys, time, os\n" + body)
    return [sys.executable, str(path)]


def test_per_item_command_answers_from_the_example_memory_system():
    out = run_command({"command": ECHO_CMD})
    assert "Luna" in out["hypothesis"]
    assert out["retrieved_session_ids"][0] == f"answer_{GOLD}_1"
    assert out["debug"]["command_adapter"] == {"mode": "per-item"}


def test_command_given_as_a_string_is_split_without_a_shell(tmp_path):
    out = run_command({"command": f"{sys.executable} {EXAMPLES / 'echo_memory_cmd.py'}"})
    assert "Luna" in out["hypothesis"]


def test_jsonl_mode_keeps_one_process_for_many_items():
    outs = [run_command({"command": ECHO_CMD + ["--jsonl"], "mode": "jsonl"},
                        make_raw_item(question_id=f"g{i}")) for i in range(3)]
    assert all("Luna" in o["hypothesis"] for o in outs)
    assert [o["debug"]["command_adapter"]["process_starts"] for o in outs] == [1, 1, 1]


def test_timeout_kills_the_process_group_and_reports_stderr(tmp_path):
    argv = script(tmp_path, "import subprocess\nprint('thinking hard', file=sys.stderr, flush=True)\n"
                            "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
                            "time.sleep(60)\n")
    t0 = time.monotonic()
    with pytest.raises(gd.TargetError) as err:
        run_command({"command": argv, "timeout_s": 1})
    assert time.monotonic() - t0 < 10
    assert "timed out after 1s" in str(err.value) and "thinking hard" in str(err.value)


def test_non_zero_exit_reports_status_and_the_stderr_tail(tmp_path):
    argv = script(tmp_path, "sys.stderr.write('x' * 5000 + 'TAIL-END')\nsys.exit(3)\n")
    with pytest.raises(gd.TargetError) as err:
        run_command({"command": argv})
    message = str(err.value)
    assert "status 3" in message and message.endswith("TAIL-END") and len(message) < 2300


def test_stdout_without_a_json_object_is_a_target_error_quoting_its_last_line(tmp_path):
    argv = script(tmp_path, "sys.stdin.read()\nprint('the answer is Luna')\n")
    with pytest.raises(gd.TargetError, match="no JSON object line .its last line: 'the answer is Luna'"):
        run_command({"command": argv})


def test_log_lines_before_the_json_reply_are_tolerated(tmp_path):
    argv = script(tmp_path, "sys.stdin.read()\nprint('loading index...')\nprint(json.dumps({'hypothesis': 'Luna'}))\n")
    assert run_command({"command": argv})["hypothesis"] == "Luna"


def test_an_empty_hypothesis_is_an_answer_not_an_error(tmp_path):
    argv = script(tmp_path, "sys.stdin.read()\nprint(json.dumps({'hypothesis': ''}))\n")
    assert run_command({"command": argv})["hypothesis"] == ""


@pytest.mark.parametrize("reply", [{"answer": "Luna"}, {"hypothesis": None}, ["Luna"]])
def test_missing_or_non_string_hypothesis_is_a_target_error(tmp_path, reply):
    argv = script(tmp_path, f"sys.stdin.read()\nprint(json.dumps({reply!r}))\n")
    with pytest.raises(gd.TargetError, match="hypothesis"):
        run_command({"command": argv})


def test_missing_program_is_a_target_error():
    with pytest.raises(gd.TargetError, match="cannot start command"):
        run_command({"command": ["/nonexistent/memory-system"]})


def test_jsonl_crash_is_reported_then_the_process_is_restarted(tmp_path):
    argv = script(tmp_path, "for line in sys.stdin:\n"
                            "    item = json.loads(line)\n"
                            "    if 'crash' in item['question']:\n"
                            "        print('segfault-ish', file=sys.stderr, flush=True); os._exit(9)\n"
                            "    print(json.dumps({'hypothesis': 'pid %d' % os.getpid()}), flush=True)\n")
    options = {"command": argv, "mode": "jsonl", "timeout_s": 5}
    first = run_command(options)
    with pytest.raises(gd.TargetError) as err:
        run_command(options, make_raw_item(question="please crash now"))
    assert "status 9" in str(err.value) and "segfault-ish" in str(err.value)
    after = run_command(options)
    assert after["debug"]["command_adapter"]["process_starts"] == 2
    assert after["hypothesis"] != first["hypothesis"]  # a new process answered


def test_jsonl_timeout_and_invalid_line_are_errors_not_hangs(tmp_path):
    argv = script(tmp_path, "for line in sys.stdin:\n"
                            "    if 'slow' in line: time.sleep(30)\n"
                            "    print('not json' if 'bad' in line else json.dumps({'hypothesis': 'ok'}), flush=True)\n")
    options = {"command": argv, "mode": "jsonl", "timeout_s": 1}
    with pytest.raises(gd.TargetError, match="no reply line within"):
        run_command(options, make_raw_item(question="slow one"))
    with pytest.raises(gd.TargetError, match="invalid JSON line"):
        run_command(options, make_raw_item(question="bad one"))
    assert run_command(options)["hypothesis"] == "ok"


def test_subprocess_receives_model_settings_in_its_environment(tmp_path):
    argv = script(tmp_path, "sys.stdin.read()\nprint(json.dumps({'hypothesis': os.environ['LONGMEMEVAL_TARGET_MODEL']}))\n")
    assert gd.generate_hypothesis(make_raw_item(), "openai", "gpt-4o-mini", target="command",
                                  options={"command": argv})["hypothesis"] == "gpt-4o-mini"


def test_command_option_is_required():
    with pytest.raises(gd.TargetError, match="needs option command"):
        run_command({})


# --------------------------------------------------------------------------- python adapter


def run_python(options):
    return gd.generate_hypothesis(make_raw_item(), "anthropic", "claude-x", target="python", options=options)


def test_python_adapter_runs_the_example_memory_system():
    out = run_python({"path": str(EXAMPLES / "echo_memory.py")})
    assert "Luna" in out["hypothesis"] and out["retrieved_session_ids"][0] == f"answer_{GOLD}_1"
    assert out["debug"]["turns_searched"] == 5


def test_python_adapter_passes_plain_dicts_and_other_options(tmp_path):
    user = tmp_path / "mine.py"
    user.write_text("def generate(item, ctx):\n"
                    "    assert isinstance(item['sessions'], list) and isinstance(item['sessions'][0], dict)\n"
                    "    return {'hypothesis': ctx['model'] + ' ' + str(ctx['options']), 'tokensIn': 3}\n")
    out = run_python({"path": str(user), "k": 2})
    assert out["hypothesis"] == "claude-x {'k': 2}" and out["tokensIn"] == 3


def test_python_adapter_user_exception_is_a_target_error(tmp_path):
    user = tmp_path / "broken.py"
    user.write_text("def generate(item, ctx):\n    return 1 / 0\n")
    with pytest.raises(gd.TargetError, match="ZeroDivisionError"):
        run_python({"path": str(user)})


def test_python_adapter_reply_without_hypothesis_is_a_target_error(tmp_path):
    user = tmp_path / "silent.py"
    user.write_text("def generate(item, ctx):\n    return {'debug': {}}\n")
    with pytest.raises(gd.TargetError, match="hypothesis"):
        run_python({"path": str(user)})


def test_concurrent_items_share_one_jsonl_process_and_each_gets_its_own_reply(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    argv = script(tmp_path, "for line in sys.stdin:\n"
                            "    print(json.dumps({'hypothesis': json.loads(line)['question']}), flush=True)\n")
    options = {"command": argv, "mode": "jsonl", "timeout_s": 10}
    questions = [f"question number {i}?" for i in range(8)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        outs = list(pool.map(lambda q: run_command(options, make_raw_item(question=q)), questions))
    assert [o["hypothesis"] for o in outs] == questions
    assert {o["debug"]["command_adapter"]["process_starts"] for o in outs} == {1}
