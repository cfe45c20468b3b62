"""What setup writes for Claude Code on request (permission rules; --short-commands now writes nothing), and
loop_target.py.

tests/claude_code/test_claude_code.py proves with the real CLI that these rules and wrappers work; here: their content, that
they merge with the user's own files, never clobber them, and that bad input stops setup before anything is
written.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lme.cli import claude_settings
from lme.core import command_names
from lme.loop import target as loop_target
from lme.cli import loop_target as loop_target_cli
from lme.cli import setup_project
from lme.core.errors import run_main
from loop_testing import git, make_loop_project
from test_command_permissions import bash_rules
from test_plugin_manifest import frontmatter

REPO = Path(__file__).resolve().parents[2]


def setup(project: Path, *flags: str) -> int:
    return run_main(setup_project.main, ["--project", str(project), "--skip-venv", *flags])


def settings_of(project: Path) -> dict:
    return json.loads((project / ".claude" / "settings.local.json").read_text(encoding="utf-8"))


def test_the_rules_are_the_loop_skills_own_and_nothing_more():
    rules = claude_settings.permission_rules()
    assert len(rules) == len(set(rules)) and not [r for r in rules if "${CLAUDE_PLUGIN_ROOT}" in r]
    [loop] = claude_settings.loop_skills()  # the one skill that arms the Stop hook
    allowed = str(frontmatter(loop).get("allowed-tools", ""))
    assert rules == [*(f"Bash({rule})" for rule in bash_rules(allowed, str(REPO))),
                     "Edit(/memory_system/**)", "Edit(/.longmemeval-benchmarks/proposal.md)",
                     "Edit(/.longmemeval-benchmarks/trigger_set.txt)",
                     f"Skill(longmemeval-benchmarker:{frontmatter(loop)['name']})"]
    assert f'Bash(bash "{REPO}/scripts/venv_run.sh" rounds.py:*)' in rules
    # No standing rule runs what the loop does not: a run or a setup with any argument, or another skill's rules.
    for script in ("run_benchmark.py", "setup_project.py", "preflight.py", "compare_runs.py", "interop.py"):
        assert not [r for r in rules if script in r], script
    assert [r for r in rules if r.startswith("Skill(")] == [f"Skill(longmemeval-benchmarker:{frontmatter(loop)['name']})"]


def test_the_loop_may_edit_only_the_memory_system_and_its_own_proposal_and_trigger_set():
    for doc in claude_settings.loop_skills():
        entries = claude_settings.split_entries(str(frontmatter(doc).get("allowed-tools", "")))
        assert not {"Edit", "Write", "MultiEdit", "NotebookEdit"} & set(entries), doc  # never unscoped
        assert [e for e in entries if e.startswith(("Edit", "Write"))] == [
            f"Edit(/{loop_target.DEFAULT_DEST}/**)", "Edit(/.longmemeval-benchmarks/proposal.md)",
            "Edit(/.longmemeval-benchmarks/trigger_set.txt)"], doc


def test_allow_unattended_merges_into_the_users_settings_once(tmp_path, capsys):
    local = tmp_path / ".claude" / "settings.local.json"
    local.parent.mkdir()
    local.write_text(json.dumps({"model": "x", "permissions": {"allow": ["Bash(make test)"], "deny": ["Read(.env)"]}}))
    assert setup(tmp_path, "--allow-unattended") == 0
    out = capsys.readouterr().out
    rules = claude_settings.permission_rules()
    assert f"added {len(rules)} rules to .claude/settings.local.json" in out and rules[0] in out
    data = settings_of(tmp_path)
    assert data["model"] == "x" and data["permissions"]["deny"] == ["Read(.env)"]
    assert data["permissions"]["allow"] == ["Bash(make test)", *rules]
    assert setup(tmp_path, "--allow-unattended") == 0
    assert "all rules already in .claude/settings.local.json; nothing to do" in capsys.readouterr().out
    assert settings_of(tmp_path)["permissions"]["allow"] == ["Bash(make test)", *rules]


@pytest.mark.parametrize("text", ["{broken", "[1, 2]"])
def test_a_broken_settings_file_stops_setup_before_anything_is_written(tmp_path, capsys, text):
    local = tmp_path / ".claude" / "settings.local.json"
    local.parent.mkdir()
    local.write_text(text)
    assert setup(tmp_path, "--sample", "--allow-unattended") == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "settings.local.json" in err and err.count("\n") == 1
    assert sorted(p.name for p in tmp_path.rglob("*")) == [".claude", "settings.local.json"]


def test_short_commands_writes_nothing_and_says_the_plain_names_work_without_it(tmp_path, capsys):
    assert setup(tmp_path, "--short-commands") == 0
    out = capsys.readouterr().out
    [line] = [line for line in out.splitlines() if line.startswith("commands")]
    assert "--short-commands is no longer needed" in line and all(n in line for n in command_names.ALL.values())
    assert not (tmp_path / ".claude").exists()


def test_short_commands_names_the_wrappers_an_earlier_setup_wrote_and_leaves_every_file_alone(tmp_path, capsys):
    folder = tmp_path / ".claude" / "commands"
    folder.mkdir(parents=True)
    ours = folder / "longmemeval-run.md"
    ours.write_text(f"---\nallowed-tools: Skill(longmemeval-benchmarker:longmemeval-run)\n---\n\n{claude_settings.WRAPPER_MARK}\n")
    own = folder / "longmemeval-report.md"
    own.write_text("my own report command\n")
    before = {p: p.read_bytes() for p in folder.iterdir()}
    assert setup(tmp_path, "--short-commands") == 0
    out = capsys.readouterr().out
    assert ".claude/commands/longmemeval-run.md: written by an earlier --short-commands, no longer needed" in out
    assert "longmemeval-report.md" not in out
    assert {p: p.read_bytes() for p in folder.iterdir()} == before


def test_the_files_setup_writes_for_claude_code_are_never_part_of_a_fix(tmp_path):
    from lme.loop import branch as loop_git

    project = make_loop_project(tmp_path)
    assert setup(project, "--allow-unattended") == 0
    assert [p for p in loop_git.changed_paths(project) if p.startswith(".claude")] == []


# --------------------------------------------------------------------------- loop_target.py


def test_use_copy_copies_configures_and_commits_once(tmp_path, capsys):
    project = make_loop_project(tmp_path)
    assert setup(project, "--sample") == 0
    assert run_main(loop_target_cli.main, ["--project", str(project), "use-copy"]) == 0
    out = capsys.readouterr().out
    assert "copied memory-ref" in out and "config: target and loop.target set to memory_system" in out
    copy = project / "memory_system"
    assert (copy / "__init__.py").read_bytes() == (REPO / "plugins" / "memory_ref" / "__init__.py").read_bytes()
    assert not list(copy.rglob("__pycache__"))
    cfg = json.loads((project / ".longmemeval-benchmarks" / "config.json").read_text())
    assert cfg["target"] == "memory_system" and cfg["loop"]["target"] == "memory_system"
    log = git(["log", "--format=%s", "--name-only", "-1"], project).stdout
    assert log.startswith("loop target: memory_system, a copy of memory-ref")
    assert all(line.startswith("memory_system/") for line in log.split("\n\n", 1)[1].split())
    (copy / "reader.py").write_text("# the user's code now\n")
    git(["commit", "-qam", "my change"], project)
    assert run_main(loop_target_cli.main, ["--project", str(project), "use-copy"]) == 0
    again = capsys.readouterr().out
    assert "exists: kept" in again and "already" in again and "is committed already" in again
    assert (copy / "reader.py").read_text() == "# the user's code now\n"


@pytest.mark.parametrize("dest", ["/abs/path", "../outside", "."])
def test_use_copy_refuses_a_folder_outside_the_project(tmp_path, capsys, dest):
    project = make_loop_project(tmp_path)
    assert setup(project, "--sample") == 0
    assert run_main(loop_target_cli.main, ["--project", str(project), "use-copy", "--dest", dest]) == 2
    assert "is not a folder inside the project" in capsys.readouterr().err


def test_use_copy_off_the_loop_branch_or_without_setup_changes_nothing(tmp_path, capsys):
    project = make_loop_project(tmp_path, branch="main")
    assert run_main(loop_target_cli.main, ["--project", str(project), "use-copy"]) == 2
    assert f"run {command_names.SETUP} first" in capsys.readouterr().err
    assert setup(project, "--sample") == 0
    assert run_main(loop_target_cli.main, ["--project", str(project), "use-copy"]) == 2
    assert "not on the loop branch" in capsys.readouterr().err and not (project / "memory_system").exists()
