"""Slash commands printed by scripts come from one module: the plain names the plugin's files declare, and the
shell command first when a script runs outside Claude Code."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from lme.core import command_names
from command_env import clean_env
from run_project import REPO

SCRIPTS = REPO / "scripts"
SLASH = re.compile(r"(?<![\w.:/-])/longmemeval-[\w:-]+")
"""A slash command as a message prints it (not a URL path such as ``xiaowu0162/longmemeval-cleaned``)."""
IN_CLAUDE_CODE = {"CLAUDECODE": "1"}
"""What Claude Code 2.1.332 sets for every command its Bash tool runs (tests/claude_code/test_claude_code_names.py sees it)."""


def frontmatter_name(path) -> str | None:
    match = re.search(r"^name: (\S+)$", path.read_text(encoding="utf-8").split("\n---", 1)[0], re.M)
    return match[1] if match else None


def test_the_names_are_the_plain_names_and_the_full_form_is_the_fallback():
    assert command_names.SETUP == "/longmemeval-setup"
    assert command_names.RUN == "/longmemeval-run"
    assert command_names.REPORT == "/longmemeval-report"
    assert command_names.ITERATE == "/longmemeval-iterate"
    assert command_names.CANCEL == "/longmemeval-cancel"
    assert command_names.qualified(command_names.RUN) == "/longmemeval-benchmarker:longmemeval-run"
    assert command_names.slash(command_names.RUN, "--run-id x") == "/longmemeval-run --run-id x"
    assert command_names.slash(command_names.REPORT) == command_names.REPORT
    with pytest.raises(ValueError):
        command_names.slash("/longmemeval-benchmarker:longmemeval-run")


def test_every_name_is_declared_by_exactly_one_command_or_the_loop_skill_and_none_is_shared():
    commands = {frontmatter_name(p): p.stem for p in sorted((REPO / "commands").glob("*.md"))}
    skills = {frontmatter_name(p): p.parent.name for p in sorted((REPO / "skills").glob("*/SKILL.md"))}
    assert all(name == stem for name, stem in commands.items()), commands  # every command declares name: <file>
    assert sorted("/" + n for n in commands) == sorted(command_names.COMMANDS)
    assert command_names.LOOP_SKILL in skills and command_names.ITERATE not in command_names.COMMANDS
    assert not set(commands) & set(skills), "a command and a skill with one name are listed once"
    assert not (REPO / "commands" / f"{command_names.LOOP_SKILL}.md").exists()  # the skill is the command
    assert command_names.SKILL_TOOL_NAME == f"longmemeval-benchmarker:{command_names.LOOP_SKILL}"


def test_a_step_is_the_slash_command_in_claude_code_and_the_shell_command_first_in_a_shell():
    assert command_names.step(command_names.RUN, "--max 3", env=IN_CLAUDE_CODE) == "/longmemeval-run --max 3"
    shell = command_names.step(command_names.RUN, "--max 3", env={})
    assert shell == (f".longmemeval-venv/bin/python {SCRIPTS / 'run_benchmark.py'} --max 3   "
                     "(in Claude Code: /longmemeval-run --max 3)")
    assert command_names.step(command_names.SETUP, "--sample", env={}).startswith(
        f"python3 {SCRIPTS / 'setup_project.py'} --sample   (in Claude Code: /longmemeval-setup --sample)")
    assert command_names.shell(command_names.REPORT) == f".longmemeval-venv/bin/python {SCRIPTS / 'scorecard.py'} --latest"
    assert command_names.shell(command_names.CANCEL) == f"python3 {SCRIPTS / 'loop_session.py'} cancel"
    assert command_names.step(command_names.ITERATE, env={}) == "/longmemeval-iterate"  # the loop needs an agent


def test_a_plugin_path_with_a_space_is_quoted_in_the_shell_command(tmp_path):
    root = tmp_path / "my plugins" / "lme"
    assert command_names.shell(command_names.SETUP, "--sample", plugin_root=root) == \
        f"python3 '{root}/scripts/setup_project.py' --sample"


def test_python_scripts_never_spell_a_slash_command_themselves():
    offenders = []
    for path in sorted(SCRIPTS.rglob("*.py")):
        if path.name == "command_names.py":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if SLASH.search(line):
                offenders.append(f"{path.relative_to(SCRIPTS)}:{number}: {line.strip()}")
    assert offenders == [], "use command_names instead:\n" + "\n".join(offenders)


def test_every_slash_command_a_shell_script_prints_is_a_command_names_value():
    allowed = set(command_names.ALL.values())
    found = {}
    for path in sorted(SCRIPTS.glob("*.sh")):
        for name in SLASH.findall(path.read_text(encoding="utf-8")):
            found.setdefault(name, []).append(path.name)
    assert found, "the shell scripts name no slash command: this test lost its subject"
    assert set(found) <= allowed, {k: v for k, v in found.items() if k not in allowed}


@pytest.mark.parametrize("env, expected", [({}, "shell"), (IN_CLAUDE_CODE, "slash")])
def test_venv_run_names_setup_in_the_form_its_caller_can_use(tmp_path, env, expected):
    done = subprocess.run(["bash", str(SCRIPTS / "venv_run.sh"), "scorecard.py"], cwd=tmp_path, text=True,
                          capture_output=True, env=clean_env(PATH="/usr/local/bin:/usr/bin:/bin", **env))
    line = command_names.step(command_names.SETUP, env=env)
    assert done.returncode == 2 and done.stderr == f"error: .longmemeval-venv not found in {tmp_path}: run setup first: {line}\n"
    assert line.startswith("python3 " if expected == "shell" else "/longmemeval-setup")


def test_the_module_is_standard_library_only():
    done = subprocess.run([sys.executable, "-S", "-c", "from lme.core import command_names; print(command_names.RUN)"],
                          cwd=SCRIPTS, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == command_names.RUN


def test_the_command_prints_a_step_for_shell_scripts():
    done = subprocess.run([sys.executable, str(SCRIPTS / "command_names.py"), "--step", "RUN", "--max", "3"],
                          capture_output=True, text=True, env=clean_env(CLAUDECODE="1"))
    assert (done.returncode, done.stdout) == (0, "/longmemeval-run --max 3\n")
    bad = subprocess.run([sys.executable, str(SCRIPTS / "command_names.py"), "--step", "NOPE"], capture_output=True,
                         text=True)
    assert bad.returncode == 2 and bad.stdout == "" and bad.stderr.startswith("usage: command_names.py")


def test_setups_next_line_is_the_shell_command_in_a_shell_and_the_slash_command_in_claude_code(monkeypatch):
    from lme.cli import setup_project

    sample = {"judgeProvider": "offline", "datasetPath": "x/longmemeval_sample.json"}
    monkeypatch.setenv("CLAUDECODE", "1")
    assert setup_project.next_command(sample).startswith(f"{command_names.RUN} --max 3   (offline sample run")
    assert setup_project.next_command({"judgeProvider": "openai"}).startswith(f"{command_names.RUN} --dry-run")
    monkeypatch.delenv("CLAUDECODE")
    assert setup_project.next_command(sample).startswith(
        f".longmemeval-venv/bin/python {SCRIPTS / 'run_benchmark.py'} --max 3   (in Claude Code: {command_names.RUN} --max 3)")
