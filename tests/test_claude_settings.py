"""What setup writes for Claude Code on request (permission rules, short command names), and loop_target.py.

tests/test_claude_code.py proves with the real CLI that these rules and wrappers work; here: their content, that
they merge with the user's own files, never clobber them, and that bad input stops setup before anything is
written.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from lme.cli import claude_settings
from lme.core import command_names
from lme.loop import loop_target
from lme.cli import setup_project
from lme.core.errors import run_main
from loop_testing import git, make_loop_project
from test_command_permissions import bash_rules
from test_plugin_manifest import frontmatter

REPO = Path(__file__).resolve().parent.parent


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
    for doc in [*claude_settings.loop_skills(), REPO / "commands" / "longmemeval-iterate.md"]:
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


def test_short_commands_are_project_commands_that_load_the_plugins_own(tmp_path, capsys):
    assert setup(tmp_path, "--short-commands") == 0
    names = [n.split(":", 1)[1] for n in command_names.ALL.values()]
    assert f"wrote {', '.join('/' + n for n in names)}" in capsys.readouterr().out
    for name in names:
        path = tmp_path / ".claude" / "commands" / f"{name}.md"
        meta = frontmatter(path)
        assert meta["allowed-tools"] == f"Skill(longmemeval-benchmarker:{name})"
        plugin = frontmatter(REPO / "commands" / f"{name}.md")
        assert meta["description"].startswith(plugin["description"]) and meta.get("argument-hint") == plugin.get(
            "argument-hint")
        body = path.read_text()
        assert f"skill `longmemeval-benchmarker:{name}` and args `$ARGUMENTS`" in body
        assert str(REPO) not in body  # nothing to go stale when the plugin moves
    assert setup(tmp_path, "--short-commands") == 0
    assert "short command names present; nothing to do" in capsys.readouterr().out


def test_short_commands_keep_a_command_the_user_wrote(tmp_path, capsys):
    own = tmp_path / ".claude" / "commands" / "longmemeval-run.md"
    own.parent.mkdir(parents=True)
    own.write_text("my own run command\n")
    assert setup(tmp_path, "--short-commands") == 0
    assert "kept your" in capsys.readouterr().out and own.read_text() == "my own run command\n"
    ours = tmp_path / ".claude" / "commands" / "longmemeval-report.md"
    ours.write_text(ours.read_text().replace("Call the Skill tool", "Old text. Call the Skill tool"))
    assert setup(tmp_path, "--short-commands") == 0
    assert "Old text" not in ours.read_text()  # ours is refreshed


def test_wrapper_frontmatter_is_yaml_claude_code_reads():
    for name in claude_settings.SHORT_COMMANDS:
        text = claude_settings.wrapper_text(name)
        meta = yaml.safe_load(text.split("---")[1])
        assert set(meta) >= {"description", "allowed-tools"}


def test_the_files_setup_writes_for_claude_code_are_never_part_of_a_fix(tmp_path):
    from lme.loop import loop_git

    project = make_loop_project(tmp_path)
    assert setup(project, "--allow-unattended", "--short-commands") == 0
    assert [p for p in loop_git.changed_paths(project) if p.startswith(".claude")] == []


# --------------------------------------------------------------------------- loop_target.py


def test_use_copy_copies_configures_and_commits_once(tmp_path, capsys):
    project = make_loop_project(tmp_path)
    assert setup(project, "--sample") == 0
    assert run_main(loop_target.main, ["--project", str(project), "use-copy"]) == 0
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
    assert run_main(loop_target.main, ["--project", str(project), "use-copy"]) == 0
    again = capsys.readouterr().out
    assert "exists: kept" in again and "already" in again and "is committed already" in again
    assert (copy / "reader.py").read_text() == "# the user's code now\n"


@pytest.mark.parametrize("dest", ["/abs/path", "../outside", "."])
def test_use_copy_refuses_a_folder_outside_the_project(tmp_path, capsys, dest):
    project = make_loop_project(tmp_path)
    assert setup(project, "--sample") == 0
    assert run_main(loop_target.main, ["--project", str(project), "use-copy", "--dest", dest]) == 2
    assert "is not a folder inside the project" in capsys.readouterr().err


def test_use_copy_off_the_loop_branch_or_without_setup_changes_nothing(tmp_path, capsys):
    project = make_loop_project(tmp_path, branch="main")
    assert run_main(loop_target.main, ["--project", str(project), "use-copy"]) == 2
    assert f"run {command_names.SETUP} first" in capsys.readouterr().err
    assert setup(project, "--sample") == 0
    assert run_main(loop_target.main, ["--project", str(project), "use-copy"]) == 2
    assert "not on the loop branch" in capsys.readouterr().err and not (project / "memory_system").exists()
