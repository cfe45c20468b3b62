"""Every entry script's start: a bad argument is one line (cli_parser), Ctrl-C during the imports is exit 130
without a traceback (entry_guard), a module imported by a test leaves SIGINT alone.

The table of bad inputs (tests/cli/test_bad_inputs.py) runs the common scripts the way users do; here every script
with a parser gets an unknown flag once, so a new entry script cannot bring argparse's usage block back.
"""

from __future__ import annotations

import concurrent.futures as cf
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
CODE = sorted(SCRIPTS.rglob("*.py"))
"""Every module: the flat scripts/, or scripts/ and scripts/lme/<stage>/ after the package move."""
PARSERS = sorted(p.name for p in CODE if any(f"cli_parser.{maker}(" in p.read_text()
                                            for maker in ("ArgumentParser", "loop_command_parser", "documented_parser")))
GUARDED = sorted(p.name for p in SCRIPTS.glob("*.py") if "entry_guard.start(__name__)" in p.read_text())
BARE_PYTHON_SCRIPTS = ("setup_project.py", "loop_stop_hook.py", "loop_guard.py", "rounds.py", "loop_session.py")
"""Run with the system python (setup makes the venv; Claude Code runs the hooks): never guarded."""


def _env() -> dict[str, str]:
    """The test process's environment: bytecode is read and written under the suite's PYTHONPYCACHEPREFIX
    (tests/conftest.py), outside the checkout. With PYTHONDONTWRITEBYTECODE each of the ~40 commands here compiled
    from source whatever that cache lacked (all of the toolkit, on a fresh machine)."""
    return dict(os.environ)


def test_every_argparse_parser_of_an_entry_script_is_the_one_line_parser():
    plain = [p.name for p in CODE if "argparse.ArgumentParser(" in p.read_text()]
    assert plain == [] and len(PARSERS) >= 25


def test_every_script_that_needs_the_venv_is_guarded_and_the_bare_python_ones_are_not():
    needs_venv = {"run_benchmark.py", "scorecard.py", "run_status.py", "preflight.py", "compare_runs.py",
                  "judge_shim.py", "cluster_failures.py", "loop_target.py", "drop_qids.py", "interop.py",
                  "report_html.py", "judge_agreement.py", "fingerprints.py", "selftest_scoring.py", "charts.py"}
    assert needs_venv <= set(GUARDED)
    assert not set(BARE_PYTHON_SCRIPTS) & set(GUARDED)


def _unknown_flag(script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPTS / script), "--no-such-flag-x"], capture_output=True, text=True,
                          timeout=60, env=_env(), stdin=subprocess.DEVNULL)


def test_an_unknown_flag_is_one_error_line_with_a_hint_in_every_entry_script():
    with cf.ThreadPoolExecutor(max_workers=4) as pool:
        done = dict(zip(PARSERS, pool.map(_unknown_flag, PARSERS)))
    for script, proc in done.items():
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        assert proc.returncode == 2 and len(lines) == 1, (script, proc.stderr)
        assert lines[0].startswith("error: ") and lines[0].endswith("--help)"), script
        assert "usage:" not in proc.stderr + proc.stdout, script


def test_a_bare_run_id_suggests_run_id():
    proc = subprocess.run([sys.executable, str(SCRIPTS / "run_benchmark.py"), "r1"], capture_output=True, text=True,
                          timeout=60, env=_env())
    assert proc.returncode == 2 and proc.stderr.strip().endswith("(to name a run, pass --run-id r1)")


CTRL_C_DURING_IMPORTS = """
import os, signal, sys, time
sys.path.insert(0, {scripts!r})
from lme.core import entry_guard
entry_guard.start("__main__")
os.kill(os.getpid(), signal.SIGINT)  # as if Ctrl-C landed while the script imports its modules
time.sleep(5)
print("not reached")
"""


def _sigint_as_in_a_terminal() -> None:
    """A job started in the background by a shell without job control inherits SIGINT ignored (and Python then
    leaves it ignored); a user's terminal gives the default, which is what the guard is for."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_during_the_imports_is_exit_130_and_one_line():
    proc = subprocess.run([sys.executable, "-c", CTRL_C_DURING_IMPORTS.format(scripts=str(SCRIPTS))],
                          capture_output=True, text=True, timeout=30, env=_env(),
                          preexec_fn=_sigint_as_in_a_terminal)
    assert proc.returncode == 130 and proc.stderr.strip() == "interrupted" and proc.stdout == ""


def test_run_main_takes_ctrl_c_back_and_a_test_import_leaves_sigint_alone():
    from lme.core import entry_guard
    from lme.core import errors

    assert signal.getsignal(signal.SIGINT) is not entry_guard._interrupted  # imported here: not __main__

    def main(argv):
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, entry_guard._interrupted)
    try:
        assert errors.run_main(main) == 130
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.parametrize("script", BARE_PYTHON_SCRIPTS)
def test_the_bare_python_scripts_do_not_import_the_guard(script):
    assert "entry_guard" not in (SCRIPTS / script).read_text()


def test_exit_now_runs_exit_handlers_flushes_output_and_keeps_the_status(tmp_path):
    """The heavy commands end with errors.exit_now (no interpreter teardown): what they print and what their exit
    handlers do (the command target stops its workers there) must still happen."""
    marker = tmp_path / "handler-ran"
    code = ("import atexit, sys\nfrom lme.core.errors import exit_now\n"
            f"atexit.register(lambda: open({str(marker)!r}, 'w').write('yes'))\n"
            "sys.stdout.write('no newline at the end')\nsys.stderr.write('err too')\nexit_now(3)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=SCRIPTS, capture_output=True, text=True,
                          env=_env(), timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (3, "no newline at the end", "err too")
    assert marker.read_text() == "yes"


def test_a_run_ended_by_exit_now_leaves_no_sqlite_sidecar_files(tmp_path):
    """The call cache's connections close before the process ends (a connection left open keeps calls.sqlite3-wal
    and -shm beside the database; a later run in a read-only cache folder then wrote through them)."""
    sys.path.insert(0, str(SCRIPTS.parent / "tests"))
    from run_project import make_project

    project = make_project(tmp_path / "p")
    done = subprocess.run([sys.executable, str(SCRIPTS / "run_benchmark.py"), "--project", str(project), "--offline",
                           "--max", "2", "--progress", "quiet"], capture_output=True, text=True, env=_env(), timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    cache = project / ".longmemeval-benchmarks" / "cache"
    assert (cache / "calls.sqlite3").is_file()
    assert sorted(p.name for p in cache.glob("calls.sqlite3-*")) == []


# --------------------------------------------------------------------------- what a start imports (not timed)

HEAVY_OPTIONAL = ("openai", "anthropic", "matplotlib", "tiktoken")
"""Imports of 0.1-0.6 s each (the SDKs, the charts, the tokenizer): only where a command uses them
(tests/benchmarks/bench_startup.py and bench_tax.py measure the time)."""


def _imported(args: list[str], **kwargs) -> set[str]:
    """The modules a ``python -X importtime ARGS`` process imported (top-level package names)."""
    done = subprocess.run([sys.executable, "-X", "importtime", *args], capture_output=True, text=True, timeout=300,
                          **kwargs)
    assert done.returncode == 0, done.stderr[-2000:]
    return {line.rsplit("|", 1)[1].strip().split(".")[0] for line in done.stderr.splitlines()
            if line.startswith("import time:") and "|" in line}


@pytest.mark.parametrize("script", ["scorecard.py", "run_status.py", "run_benchmark.py", "judge_shim.py"])
def test_help_imports_no_model_sdk_chart_or_tokenizer(script):
    imported = _imported([str(SCRIPTS / script), "--help"], env=_env(), stdin=subprocess.DEVNULL)
    assert "lme" in imported and not imported & set(HEAVY_OPTIONAL), imported & set(HEAVY_OPTIONAL)


def test_a_run_imports_the_sdk_of_the_providers_it_uses_and_no_other(tmp_path, fake_llm):
    sys.path.insert(0, str(SCRIPTS.parent / "tests"))
    from run_project import make_project, register_answers

    register_answers(fake_llm)
    run = ["--max", "2", "--yes", "--progress", "quiet", "--no-scorecard"]
    openai_only = make_project(tmp_path / "openai")  # reader and judge on openai
    imported = _imported([str(SCRIPTS / "run_benchmark.py"), "--project", str(openai_only), *run], env=_env())
    assert "openai" in imported and "anthropic" not in imported and "matplotlib" not in imported
    offline = make_project(tmp_path / "offline")
    imported = _imported([str(SCRIPTS / "run_benchmark.py"), "--project", str(offline), "--offline", *run],
                         env=_env())
    assert not imported & {"openai", "anthropic", "matplotlib"}, imported & {"openai", "anthropic", "matplotlib"}
