"""Every command line of every bash block in commands/*.md and skills/*/SKILL.md is allowed by its own ``allowed-tools``.

Claude Code 2.1.332 asks permission for any Bash command no allow rule matches, so a block the rules miss
interrupts the user at every step. A command's rules apply while it runs; a skill's rules apply once the Skill
tool loaded it (observed with the real CLI: tests/claude_code/test_claude_code.py proves both). A command that hands over to
a skill (``Skill(plugin:name)`` in its rules) must also cover that skill's blocks and the references it follows
with its own rules: the model may read the skill's file instead of loading it. The rules are matched here the way
2.1.332 matches them:

- ``allowed-tools`` is split into entries at commas and spaces outside parentheses. Its parser (function ``Qf``
  in the bundled JS): ``case",":if(o)r+=s;else{if(r.trim())t.push(r.trim());r=""}break;case" ":if(o)r+=s;else
  if(r.trim())t.push(r.trim()),r="";break`` (``o`` is "inside parentheses").
- ``${CLAUDE_PLUGIN_ROOT}`` is substituted in the entries (and in the command's body) before that.
- A rule ending in ``:*`` is a PREFIX rule: ``function cXt(e){return e.match(/^(.+):\\*$/)?.[1]??null}`` and
  ``function Syt(e){let n=cXt(e);if(n!==null)return{type:"prefix",prefix:n};...``. It matches a command that
  equals the prefix or starts with the prefix and a space: ``case"prefix":{if(E(W,N.prefix))return!0;return
  x(W,N.prefix+" ")}`` (``E`` is equality, ``x`` is startsWith). A ``*`` inside the prefix is literal (the
  validator's warning: "mixes * with the trailing :* prefix syntax, so it is matched as a literal prefix (the *
  is not expanded)").
- Any other rule without ``*`` matches the command exactly.
- A compound command is checked part by part: each part split at newlines, ``&&``, ``||``, ``;`` and ``|`` must
  be allowed on its own.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lme.core import command_names
from lme.cli.claude_settings import split_entries
from lme.core.command_names import PLUGIN
from command_env import clean_env
from markdown_harness import REPO, extract_blocks
from test_plugin_manifest import frontmatter

COMMANDS = sorted((REPO / "commands").glob("*.md"))
SKILLS = sorted((REPO / "skills").glob("*/SKILL.md"))
SAMPLE_ROOT = "/home/some user/.claude/plugins/cache/longmemeval-benchmarker"
"""Where Claude Code might have installed the plugin: a path with a space, as on many machines."""

#: References a skill tells the agent to follow step by step: their blocks run under the skill's rules too.
FOLLOWED_DOCS = {
    command_names.LOOP_SKILL: ("references/iteration-rules.md", "references/termination.md"),
}
#: Example arguments per command (``$ARGUMENTS`` is substituted textually before the agent runs a block).
ARGUMENTS = ("", "--max 3 --run-id demo")


def bash_rules(allowed: str, plugin_root: str) -> list[str]:
    """The contents of the ``Bash(...)`` entries, ``${CLAUDE_PLUGIN_ROOT}`` substituted."""
    text = allowed.replace("${CLAUDE_PLUGIN_ROOT}", plugin_root)
    return [entry[len("Bash("):-1] for entry in split_entries(text) if entry.startswith("Bash(") and entry.endswith(")")]


def skills_handed_over(allowed: str) -> list[str]:
    """The skill names of ``Skill(plugin:name)`` entries."""
    return [m[1] for m in (re.fullmatch(rf"Skill\({PLUGIN}:([a-z0-9-]+)\)", e) for e in split_entries(allowed)) if m]


def rule_matches(rule: str, command: str) -> bool:
    """2.1.332's matcher for one rule and one simple command (see the module docstring)."""
    command = command.strip()
    prefix = re.match(r"^(.+):\*$", rule, re.S)
    if prefix is not None:
        head = prefix[1]
        return command == head or command.startswith(head + " ")
    if "*" in rule:
        raise AssertionError(f"wildcard rule {rule!r}: this test does not model wildcards; use a prefix rule")
    return command == rule


def command_lines(block: str) -> list[str]:
    """The simple commands of a block: split at newlines, ``&&``, ``||``, ``;`` and ``|``; blanks and comments out."""
    parts = re.split(r"\n|&&|\|\||;|\|", block)
    return [p.strip() for p in parts if p.strip() and not p.strip().startswith("#")]


def _blocks(path: Path, plugin_root: str, arguments: str) -> list[str]:
    return [b.code.replace("${CLAUDE_PLUGIN_ROOT}", plugin_root).replace("$ARGUMENTS", arguments)
            for b in extract_blocks(path)]


def _unmatched(rules: list[str], docs: list[Path], arguments: str) -> list[str]:
    lines = [(doc, line) for doc in docs for block in _blocks(doc, SAMPLE_ROOT, arguments)
             for line in command_lines(block)]
    return [f"{doc.relative_to(REPO)}: {line}" for doc, line in lines
            if not any(rule_matches(rule, line) for rule in rules)]


def _skill_docs(name: str) -> list[Path]:
    return [REPO / "skills" / name / "SKILL.md", *(REPO / doc for doc in FOLLOWED_DOCS.get(name, ()))]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda p: p.stem)
@pytest.mark.parametrize("arguments", ARGUMENTS, ids=("no-args", "args"))
def test_every_command_line_is_allowed_by_the_commands_own_rules(command, arguments):
    allowed = str(frontmatter(command).get("allowed-tools", ""))
    rules = bash_rules(allowed, SAMPLE_ROOT)
    assert rules, f"{command.name}: no Bash(...) rule in allowed-tools"
    docs = [command, *(doc for name in skills_handed_over(allowed) for doc in _skill_docs(name))]
    assert any(extract_blocks(doc) for doc in docs), f"{command.name}: no bash block, nor a skill it hands over to"
    unmatched = _unmatched(rules, docs, arguments)
    assert not unmatched, f"{command.name}: commands no allowed-tools rule matches:\n" + "\n".join(unmatched)


@pytest.mark.parametrize("skill", SKILLS, ids=lambda p: p.parent.name)
def test_every_skill_line_is_allowed_by_the_skills_own_rules(skill):
    rules = bash_rules(str(frontmatter(skill).get("allowed-tools", "")), SAMPLE_ROOT)
    assert rules, f"{skill.parent.name}: no Bash(...) rule in allowed-tools"
    unmatched = _unmatched(rules, _skill_docs(skill.parent.name), "")
    assert not unmatched, f"{skill.parent.name}: commands no allowed-tools rule matches:\n" + "\n".join(unmatched)


def test_a_command_hands_over_only_to_skills_that_exist():
    handed = {name for c in COMMANDS for name in skills_handed_over(str(frontmatter(c).get("allowed-tools", "")))}
    assert all((REPO / "skills" / name / "SKILL.md").is_file() for name in handed)
    # the loop is a skill that /longmemeval-iterate runs by itself: no command loads it (its rules are its own)
    assert command_names.LOOP_SKILL not in handed


def test_no_rule_names_a_step_claude_code_always_refuses():
    """``cp`` with flags is refused by 2.1.332's path check whatever the rules say; such steps live in scripts."""
    for doc in [*COMMANDS, *SKILLS]:
        allowed = str(frontmatter(doc).get("allowed-tools", ""))
        assert not [r for r in bash_rules(allowed, SAMPLE_ROOT) if re.match(r"(cp|mv|rm)\s+-", r)], doc
        for block in _blocks(doc, SAMPLE_ROOT, ""):
            assert not [line for line in command_lines(block) if re.match(r"(cp|nohup|setsid|sleep)\b", line)], doc


def test_the_matcher_reads_rules_as_claude_code_does():
    root = SAMPLE_ROOT
    rule = f'bash "{root}/scripts/venv_run.sh" run_benchmark.py'
    assert rule_matches(rule + ":*", f'bash "{root}/scripts/venv_run.sh" run_benchmark.py --max 3')
    assert rule_matches(rule + ":*", f'bash "{root}/scripts/venv_run.sh" run_benchmark.py')
    assert not rule_matches(rule + ":*", f'bash "{root}/scripts/venv_run.sh" run_benchmark.pyx')
    assert not rule_matches(rule + ":*", f'bash "{root}/scripts/venv_run.sh" scorecard.py')
    # the old rules: a * inside a prefix rule is literal, so they matched nothing
    assert not rule_matches("*/scripts/*.py:*", f'python "{root}/scripts/run_benchmark.py" --max 3')
    assert rule_matches("git status", "git status") and not rule_matches("git status", "git status -s")
    assert skills_handed_over("Skill(longmemeval-benchmarker:longmemeval-iterate), Read") == ["longmemeval-iterate"]
    assert split_entries('Bash(bash "/a b/x.sh" y.py:*), Read Edit,Write') == [
        'Bash(bash "/a b/x.sh" y.py:*)', "Read", "Edit", "Write"]
    assert bash_rules('Bash(python3 "${CLAUDE_PLUGIN_ROOT}/s.py":*), Read', "/p q") == ['python3 "/p q/s.py":*']
    assert command_lines("a && b; c | d\n# note\n\ne || f\n") == ["a", "b", "c", "d", "e", "f"]


def test_a_block_with_shell_logic_is_caught(tmp_path):
    doc = tmp_path / "commands" / "demo.md"
    doc.parent.mkdir()
    doc.write_text('---\ndescription: d\nallowed-tools: Bash(bash "${CLAUDE_PLUGIN_ROOT}/scripts/venv_run.sh" x.py:*)\n'
                   '---\n\n```bash\nif [ -x .longmemeval-venv/bin/python ]; then PY=1; fi\n'
                   'bash "${CLAUDE_PLUGIN_ROOT}/scripts/venv_run.sh" x.py --y\n```\n')
    rules = bash_rules(frontmatter(doc)["allowed-tools"], SAMPLE_ROOT)
    lines = [line for block in _blocks(doc, SAMPLE_ROOT, "") for line in command_lines(block)]
    verdicts = [any(rule_matches(r, line) for r in rules) for line in lines]
    assert verdicts == [False, False, False, True]  # "if [ -x ... ]", "then PY=1", "fi", the script call


# --------------------------------------------------------------------------- venv_run.sh, the runner the rules name


def _venv_project(tmp_path: Path, layout: str | None = "bin/python") -> Path:
    import stat
    import sys

    project = tmp_path / "project"
    project.mkdir()
    if layout is not None:
        python = project / ".longmemeval-venv" / layout
        python.parent.mkdir(parents=True)
        python.write_text(f'#!/bin/sh\necho "venv python {layout}" >&2\nexec "{sys.executable}" "$@"\n')
        python.chmod(python.stat().st_mode | stat.S_IXUSR)
    return project


def _venv_run(runner: Path, project: Path, *args: str):
    import subprocess

    return subprocess.run(["bash", str(runner), *args], cwd=project, capture_output=True, text=True, timeout=60,
                          env=clean_env(PATH="/usr/bin:/bin", HOME=str(project)))


@pytest.mark.parametrize("layout", ["bin/python", "Scripts/python.exe"])
def test_venv_run_runs_a_sibling_script_with_the_projects_venv_python(tmp_path, layout):
    import shutil

    plugin = tmp_path / "plugin root with space"
    shutil.copytree(REPO / "scripts", plugin / "scripts", ignore=shutil.ignore_patterns("__pycache__"))
    project = _venv_project(tmp_path, layout)
    done = _venv_run(plugin / "scripts" / "venv_run.sh", project, "loop_guard.py", "target", "--n-total", "20")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("19 of 20 strict correct") and f"venv python {layout}" in done.stderr


def test_venv_run_without_the_venv_says_to_run_setup_and_exits_2(tmp_path):
    project = _venv_project(tmp_path, None)
    done = _venv_run(REPO / "scripts" / "venv_run.sh", project, "run_benchmark.py", "--max", "3")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (f"error: .longmemeval-venv not found in {project}: run setup first: "
                           f"{command_names.step(command_names.SETUP, env={})}\n")


@pytest.mark.parametrize("name,needle", [("../evil.py", "not a script name"), ("no_such.py", "no script no_such.py"),
                                         ("README", "neither a .py nor a .sh")])
def test_venv_run_runs_only_its_own_scripts(tmp_path, name, needle):
    done = _venv_run(REPO / "scripts" / "venv_run.sh", _venv_project(tmp_path), name)
    assert done.returncode == 2 and needle in done.stderr


def test_venv_run_runs_a_shell_script_with_bash_and_passes_the_exit_status(tmp_path):
    project = _venv_project(tmp_path)
    done = _venv_run(REPO / "scripts" / "venv_run.sh", project, "parallel_longmemeval.sh", "--help")
    assert done.returncode == 0 and "Usage: bash scripts/parallel_longmemeval.sh" in done.stdout
    bad = _venv_run(REPO / "scripts" / "venv_run.sh", project, "parallel_longmemeval.sh", "8", "x", "500")
    assert bad.returncode == 2 and "'x' is not a whole number" in bad.stderr
