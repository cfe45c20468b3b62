"""The plugin as Claude Code loads it: the official validator, plus the frontmatter rules it does not check."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / ".claude-plugin" / "plugin.json"
MARKETPLACE = REPO / ".claude-plugin" / "marketplace.json"
COMMANDS = ("longmemeval-setup", "longmemeval-run", "longmemeval-report", "longmemeval-cancel")
SKILLS = ("setup", "run-benchmark", "report", "longmemeval-iterate")
SKILL_NAME = re.compile(r"^[a-z0-9-]{1,64}$")


def frontmatter(path: Path) -> dict:
    """The YAML between the opening ``---`` line and the next ``---`` line; fails the test when absent."""
    text = path.read_text(encoding="utf-8")
    match = re.match(r"\A---\r?\n(.*?)\r?\n---\r?\n", text, re.S)
    assert match, f"{path}: no YAML frontmatter (--- ... --- at the top)"
    data = yaml.safe_load(match.group(1))
    assert isinstance(data, dict), f"{path}: frontmatter is not a mapping"
    return data


@pytest.mark.claude_code
def test_claude_plugin_validate_strict_passes():
    from claude_code_harness import claude_binary, cli_required

    claude = claude_binary()
    if claude is None:
        if cli_required():
            pytest.fail("claude CLI not installed under CI: bash tests/run_tests.sh installs it")
        pytest.skip("claude CLI not installed (bash tests/run_tests.sh installs it)")
    done = subprocess.run([claude, "plugin", "validate", "--strict", "."], cwd=REPO, capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr


def test_plugin_manifest_names_version_license_and_author():
    manifest = json.loads(PLUGIN.read_text(encoding="utf-8"))
    assert manifest["name"] == "longmemeval-benchmarker"
    assert re.fullmatch(r"\d+\.\d+\.\d+", manifest["version"])
    assert manifest["license"] == "MIT" and manifest["author"]["name"] and manifest["description"]
    assert "Copyright (c) 2026 longmemeval-benchmarker contributors" in (REPO / "LICENSE").read_text()


def test_marketplace_lists_this_plugin_from_the_repo_root():
    manifest = json.loads(PLUGIN.read_text(encoding="utf-8"))
    market = json.loads(MARKETPLACE.read_text(encoding="utf-8"))
    assert market["name"] == "longmemeval-benchmarker" and market["owner"]["name"]
    [entry] = market["plugins"]
    assert entry["name"] == manifest["name"] and entry["source"] == "./"
    assert entry.get("version", manifest["version"]) == manifest["version"]


@pytest.mark.parametrize("name", COMMANDS)
def test_each_command_exists(name):
    assert (REPO / "commands" / f"{name}.md").is_file(), f"commands/{name}.md is missing"


@pytest.mark.parametrize("name", SKILLS)
def test_each_skill_exists(name):
    assert (REPO / "skills" / name / "SKILL.md").is_file(), f"skills/{name}/SKILL.md is missing"


@pytest.mark.parametrize("path", sorted((REPO / "skills").glob("*/SKILL.md")),
                         ids=lambda p: p.parent.name)
def test_skill_frontmatter_has_a_valid_name_and_description(path):
    meta = frontmatter(path)
    name = meta.get("name")
    assert name == path.parent.name, f"{path}: name {name!r} must equal its folder {path.parent.name!r}"
    assert SKILL_NAME.match(name), f"{path}: name must match {SKILL_NAME.pattern}"
    description = meta.get("description")
    assert isinstance(description, str) and description.strip(), f"{path}: description missing"
    assert len(description) <= 1024, f"{path}: description is {len(description)} chars (max 1024)"


@pytest.mark.parametrize("path", sorted((REPO / "commands").glob("*.md")), ids=lambda p: p.stem)
def test_command_frontmatter_has_a_description(path):
    meta = frontmatter(path)
    assert isinstance(meta.get("description"), str) and meta["description"].strip(), f"{path}: no description"


def test_the_stop_hook_is_the_loop_scripts_and_only_a_stop_hook():
    hooks = json.loads((REPO / "hooks" / "hooks.json").read_text(encoding="utf-8"))
    assert set(hooks["hooks"]) == {"Stop"} and hooks["description"]
    [[hook]] = [group["hooks"] for group in hooks["hooks"]["Stop"]]
    assert hook["type"] == "command" and 0 < hook["timeout"] <= 60
    # the plugin path quoted (it may hold spaces); python3, not the venv: the hook runs in every project
    assert hook["command"] == 'python3 "${CLAUDE_PLUGIN_ROOT}/scripts/loop_stop_hook.py"'
    assert (REPO / "scripts" / "loop_stop_hook.py").is_file()


@pytest.mark.parametrize("path", [*sorted((REPO / "commands").glob("*.md")), *sorted((REPO / "skills").glob("*/SKILL.md"))],
                         ids=lambda p: p.parent.name if p.name == "SKILL.md" else p.stem)
def test_every_command_and_skill_declares_the_tools_it_needs(path):
    """Skills too: 2.1.332 honours a plugin skill's allowed-tools once the Skill tool loaded it."""
    assert str(frontmatter(path).get("allowed-tools", "")).strip(), f"{path}: no allowed-tools"


def test_frontmatter_reader_rejects_files_without_it_or_with_bad_yaml(tmp_path):
    missing = tmp_path / "missing.md"
    missing.write_text("# no frontmatter\n")
    broken = tmp_path / "broken.md"
    broken.write_text("---\ndescription: [unclosed\n---\nbody\n")
    with pytest.raises(AssertionError, match="no YAML frontmatter"):
        frontmatter(missing)
    with pytest.raises(yaml.YAMLError):
        frontmatter(broken)
