"""Slash commands printed by scripts come from one module, in the form Claude Code expands."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from lme.core import command_names
from run_project import REPO

SCRIPTS = REPO / "scripts"
SLASH = re.compile(r"(?<![\w.:/-])/longmemeval-[\w:-]+")
"""A slash command as a message prints it (not a URL path such as ``xiaowu0162/longmemeval-cleaned``)."""


def test_the_names_are_the_fully_qualified_plugin_commands():
    assert command_names.SETUP == "/longmemeval-benchmarker:longmemeval-setup"
    assert command_names.RUN == "/longmemeval-benchmarker:longmemeval-run"
    assert command_names.REPORT == "/longmemeval-benchmarker:longmemeval-report"
    assert command_names.ITERATE == "/longmemeval-benchmarker:longmemeval-iterate"
    assert command_names.slash(command_names.RUN, "--run-id x") == "/longmemeval-benchmarker:longmemeval-run --run-id x"
    assert command_names.slash(command_names.REPORT) == command_names.REPORT
    with pytest.raises(ValueError):
        command_names.slash("/longmemeval-run")


def test_python_scripts_never_spell_a_slash_command_themselves():
    offenders = []
    for path in sorted(SCRIPTS.glob("*.py")):
        if path.name == "command_names.py":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if SLASH.search(line):
                offenders.append(f"{path.name}:{number}: {line.strip()}")
    assert offenders == [], "use command_names instead:\n" + "\n".join(offenders)


def test_every_slash_command_a_shell_script_prints_is_a_command_names_value():
    allowed = set(command_names.ALL.values())
    found = {}
    for path in sorted(SCRIPTS.glob("*.sh")):
        for name in SLASH.findall(path.read_text(encoding="utf-8")):
            found.setdefault(name, []).append(path.name)
    assert found, "the shell scripts name no slash command: this test lost its subject"
    assert set(found) <= allowed, {k: v for k, v in found.items() if k not in allowed}
    venv_run = (SCRIPTS / "venv_run.sh").read_text(encoding="utf-8")
    assert f"run {command_names.SETUP} first" in venv_run


def test_the_module_is_standard_library_only():
    done = subprocess.run([sys.executable, "-S", "-c", "from lme.core import command_names; print(command_names.RUN)"],
                          cwd=SCRIPTS, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == command_names.RUN


def test_script_messages_print_the_qualified_names():
    from lme.cli import setup_project

    assert setup_project.next_command({"judgeProvider": "offline", "datasetPath": "x/longmemeval_sample.json"}) \
        .startswith(f"{command_names.RUN} --max 3")
    assert setup_project.next_command({"judgeProvider": "openai"}).startswith(f"{command_names.RUN} --dry-run")
