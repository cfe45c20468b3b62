"""A user's own memory system, written here from plugins/README.md alone, run by the python and command adapters:
worker processes with a real timeout, one item at a time per worker, crashes isolated, causes on the first line."""

from __future__ import annotations

import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from lme.targets import generation_driver as gd
from lme.targets import processes
from test_targets_common import make_raw_item


@pytest.fixture(autouse=True)
def _stop_workers():
    yield
    processes.stop_pools()


def memsys(tmp_path: Path, body: str, name: str = "memsys.py") -> Path:
    """A memory system as the README describes one: ``generate(item: dict, ctx: dict) -> dict``."""
    path = tmp_path / name
    path.write_text("import json, os, sys, time\n" + body)
    return path


def answer(path: Path, question: str = "What is my cat's name?", **options):
    return gd.generate_hypothesis(make_raw_item(question=question), "openai", "gpt-4o-mini", target="python",
                                  options={"path": str(path), **options})


def test_an_item_that_hangs_is_a_timeout_and_the_next_item_gets_a_fresh_worker(tmp_path):
    path = memsys(tmp_path, "def generate(item, ctx):\n"
                            "    if 'hang' in item['question']:\n        time.sleep(600)\n"
                            "    return {'hypothesis': str(os.getpid())}\n")
    first = answer(path, timeout_s=2)["hypothesis"]
    t0 = time.monotonic()
    with pytest.raises(gd.TargetError) as err:
        answer(path, "please hang", timeout_s=2)
    assert time.monotonic() - t0 < 10
    assert err.value.kind == "timeout" and "generate gave no answer within 2s" in str(err.value)
    after = answer(path, timeout_s=2)
    assert after["hypothesis"] != first  # the hung worker was killed; a new one answered
    assert after["debug"]["python_adapter"]["process_starts"] == 2


def test_the_file_is_imported_once_per_worker_and_a_worker_serves_one_item_at_a_time(tmp_path):
    log = tmp_path / "log.jsonl"
    path = memsys(tmp_path, f"LOG = {str(log)!r}\n"
                            "def note(event):\n"
                            "    with open(LOG, 'a') as fh:\n"
                            "        fh.write(json.dumps({'pid': os.getpid(), 'event': event, 't': time.time()}) + '\\n')\n"
                            "note('import')\n"
                            "def generate(item, ctx):\n"
                            "    note('start'); time.sleep(0.3); note('end')\n"
                            "    return {'hypothesis': 'ok'}\n")
    with ThreadPoolExecutor(max_workers=3) as pool:
        outs = list(pool.map(lambda i: answer(path, f"question {i}?"), range(9)))
    assert {o["hypothesis"] for o in outs} == {"ok"}
    events = [json.loads(line) for line in log.read_text().splitlines()]
    pids = {e["pid"] for e in events}
    assert 1 < len(pids) <= 3  # up to the callers in flight (the run's concurrency), each its own process
    for pid in pids:
        mine = [e["event"] for e in events if e["pid"] == pid]
        assert mine.count("import") == 1
        assert mine[1:] == ["start", "end"] * (len(mine[1:]) // 2)  # never two items at once in one worker


def test_a_crash_is_one_items_error_with_the_stderr_tail_and_a_fresh_worker_takes_the_next(tmp_path):
    path = memsys(tmp_path, "def generate(item, ctx):\n"
                            "    if 'crash' in item['question']:\n"
                            "        print('native library gave up', file=sys.stderr, flush=True)\n"
                            "        os._exit(11)\n"
                            "    return {'hypothesis': str(os.getpid())}\n")
    first = answer(path)["hypothesis"]
    with pytest.raises(gd.TargetError) as err:
        answer(path, "crash please")
    assert "status 11" in str(err.value) and "native library gave up" in str(err.value).splitlines()[0]
    assert answer(path)["hypothesis"] != first


def test_what_the_system_prints_on_stdout_does_not_break_its_reply(tmp_path):
    path = memsys(tmp_path, "print('loading my index...')\n"
                            "def generate(item, ctx):\n"
                            "    print('thinking about', item['question'])\n"
                            "    os.system('echo a child process prints too')\n"
                            "    return {'hypothesis': 'Luna'}\n")
    assert answer(path)["hypothesis"] == "Luna"


def test_an_exception_gives_its_cause_on_the_first_line_and_the_end_of_its_traceback(tmp_path):
    path = memsys(tmp_path, "def helper(depth):\n"
                            "    if depth == 0:\n        raise ValueError('boom ' + 'x' * 5000)\n"
                            "    return helper(depth - 1)\n"
                            "def generate(item, ctx):\n    return helper(40)\n")
    with pytest.raises(gd.TargetError) as err:
        answer(path)
    message = str(err.value)
    first, rest = message.split("\n", 1)
    assert first.startswith("python target memsys.py: ValueError: boom xxx") and len(first) < 400
    assert "Traceback" in rest or rest.startswith("…")
    assert "raise ValueError('boom ' + 'x' * 5000)" in rest  # the failing line, kept at the traceback's end
    assert len(message) <= 2000  # what a result row keeps, whole


def test_a_file_that_fails_to_import_says_so_with_its_traceback(tmp_path):
    path = memsys(tmp_path, "import no_such_package_here\ndef generate(item, ctx):\n    return {}\n")
    with pytest.raises(gd.TargetError) as err:
        answer(path)
    first = str(err.value).splitlines()[0]
    assert first == ("python target memsys.py: cannot import it: ModuleNotFoundError: No module named "
                     "'no_such_package_here'")
    assert "line 2" in str(err.value) or "import no_such_package_here" in str(err.value)


def test_the_files_folder_is_importable_and_the_toolkits_modules_do_not_shadow_the_users(tmp_path):
    (tmp_path / "targets.py").write_text("WHO = 'the user\\'s own targets module'\n")
    path = memsys(tmp_path, "import targets\n"
                            "def generate(item, ctx):\n    return {'hypothesis': targets.WHO}\n")
    assert answer(path)["hypothesis"] == "the user's own targets module"


def test_each_worker_process_gets_the_environment_one_function_builds(tmp_path, monkeypatch):
    built = []

    def environment(ctx, token=None):
        built.append(token)
        return {**processes.os.environ, "LONGMEMEVAL_TARGET_MODEL": ctx.model, "MY_WORKER": str(len(built))}

    monkeypatch.setattr(processes, "environment", environment)
    path = memsys(tmp_path, "def generate(item, ctx):\n"
                            "    time.sleep(0.3)\n"
                            "    return {'hypothesis': os.environ['MY_WORKER'] + ' ' + os.environ['LONGMEMEVAL_TARGET_MODEL']}\n")
    with ThreadPoolExecutor(max_workers=2) as pool:
        outs = [o["hypothesis"] for o in pool.map(lambda i: answer(path, f"q{i}?"), range(2))]
    assert sorted(outs) == ["1 gpt-4o-mini", "2 gpt-4o-mini"] and built == [None, None]  # outside a run: no token


def test_an_edited_file_is_imported_again(tmp_path, monkeypatch):
    """Also where Python writes bytecode (most machines; the tests' own environment does not): an edit of the same
    size within the same second must not run the old code from a cached ``.pyc``."""
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    path = memsys(tmp_path, "def generate(item, ctx):\n    return {'hypothesis': 'v1'}\n")
    assert answer(path)["hypothesis"] == "v1"
    time.sleep(0.01)
    memsys(tmp_path, "def generate(item, ctx):\n    return {'hypothesis': 'v2'}\n")
    assert answer(path)["hypothesis"] == "v2"


# --------------------------------------------------------------------------- the command adapter's replies


def command(tmp_path: Path, body: str) -> list[str]:
    path = tmp_path / "memsys_cmd.py"
    path.write_text("import json, sys\nitem = json.loads(sys.stdin.read())\n" + body)
    return [sys.executable, str(path)]


def run_command(argv):
    return gd.generate_hypothesis(make_raw_item(), "offline", "none", target="command", options={"command": argv})


def test_a_log_line_after_the_json_reply_is_tolerated(tmp_path):
    argv = command(tmp_path, "print('loading index')\nprint(json.dumps({'hypothesis': 'Luna'}))\n"
                             "print('done in 0.2 s')\n")
    assert run_command(argv)["hypothesis"] == "Luna"


def test_a_structured_log_line_after_the_reply_does_not_replace_it(tmp_path):
    argv = command(tmp_path, "print(json.dumps({'hypothesis': 'Luna'}))\nprint(json.dumps({'level': 'info'}))\n")
    assert run_command(argv)["hypothesis"] == "Luna"


def test_a_broken_json_reply_is_quoted_with_why_it_does_not_parse(tmp_path):
    argv = command(tmp_path, "print('loading index')\nprint('{\"hypothesis\": \"Luna\",}')\nprint('bye')\n")
    with pytest.raises(gd.TargetError) as err:
        run_command(argv)
    first = str(err.value).splitlines()[0]
    assert "invalid JSON" in first and '{"hypothesis": "Luna",}' in first and "loading index" not in first


def test_a_failing_command_names_the_last_line_of_its_stderr_on_the_first_line(tmp_path):
    argv = command(tmp_path, "raise ValueError('the index file is corrupt')\n")
    with pytest.raises(gd.TargetError) as err:
        run_command(argv)
    first = str(err.value).splitlines()[0]
    assert "exited with status 1" in first and first.endswith("ValueError: the index file is corrupt")


def test_a_command_that_hangs_is_a_timeout(tmp_path):
    argv = command(tmp_path, "import time\ntime.sleep(600)\n")
    with pytest.raises(gd.TargetError) as err:
        gd.generate_hypothesis(make_raw_item(), "offline", "none", target="command",
                               options={"command": argv, "timeout_s": 1})
    assert err.value.kind == "timeout"


def test_option_workers_caps_the_processes_and_items_wait_for_a_free_one(tmp_path):
    path = memsys(tmp_path, "def generate(item, ctx):\n"
                            "    time.sleep(0.2)\n    return {'hypothesis': str(os.getpid()), 'debug': ctx['options']}\n")
    with ThreadPoolExecutor(max_workers=4) as pool:
        outs = list(pool.map(lambda i: answer(path, f"q{i}?", workers=1, timeout_s=1, mine=i), range(4)))
    assert len({o["hypothesis"] for o in outs}) == 1  # one process served all four, one at a time
    assert [o["debug"] for o in outs][0]["mine"] == 0 and "workers" not in outs[0]["debug"]
    with pytest.raises(ValueError, match="workers must be a whole number"):
        gd.describe_target("python", {"path": str(path), "workers": 0})
