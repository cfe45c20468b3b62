"""What setup may write into a project for Claude Code (opt-in): permission rules.

Facts of Claude Code 2.1.332 this rests on (observed with the real CLI, see docs/claude-code.md):

- A plugin command's or skill's ``allowed-tools`` apply while it runs. Outside it (a later turn of a resumed
  session, or a chat message that makes the model call the Skill tool) every Bash line and the Skill call itself
  need approval in the default permission mode. Rules in settings lift that; they must name the plugin's
  expanded path (a rule with a literal ``${CLAUDE_PLUGIN_ROOT}`` never matches).
- A ``Bash(<prefix>:*)`` rule matches any arguments, so the rules written are the loop's only, and the scripts
  refuse in a loop session what the loop never needs (``lme.core.unattended``). ``Edit(/folder/**)`` (a path
  relative to the project) is the one file rule Edit and Write both follow; ``Write(...)`` rules are not read.
- The project's ``.claude/settings.local.json`` is read even before the workspace is trusted; its
  ``.claude/settings.json`` is ignored until then. So the rules go to ``settings.local.json`` (personal, not
  meant to be committed).
- The loop's Edit rules are the skill's (``memory_system/``, the proposal, the trigger set) plus the project's fix
  paths (``loop.fix_paths``, else the folder of ``loop.target``; and the user's own system the config's ``target``
  names, which ``loop_target.py use PATH`` makes the fix paths), read from its config when setup writes the rules,
  and added by ``loop_target.py`` when it changes them (``refresh_edit_rules``). Never the whole project nor the
  loop's state, the venv, ``.git`` or ``.claude``. Claude Code 2.1.332 reads a changed ``settings.local.json`` about
  a second later (observed: an Edit right after the change was still asked for; one after a 1 s command ran).
- The plugin's commands and its loop skill answer to their plain names (``command_names``): nothing to write for
  that. ``--short-commands``, which once wrote project commands for them, is kept only to say so
  (``SHORT_COMMANDS_NOTICE``); wrappers it wrote earlier still work and can be deleted.

Standard library only (``setup_project.py`` runs before the venv).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterable

from lme.core import command_names  # stdlib only
from lme.core.errors import UserError  # stdlib only
from lme.core.project_folder import write_json  # stdlib only
from lme.core.setup_steps import Report  # stdlib only
from lme.core.facts import BUILTIN_TARGETS, STATE_DIR, VENV_DIR  # stdlib only
from lme.core.unattended import standing_rules_in  # stdlib only
from lme.loop import rules as loop_rules  # stdlib only: the hooks read it on a bare python
from lme.loop import target  # stdlib only
from lme.targets.identity import is_reference  # stdlib only

PLUGIN_ROOT = Path(__file__).resolve().parents[3]
SETTINGS_FILE = Path(".claude") / "settings.local.json"
COMMANDS_DIR = Path(".claude") / "commands"
WRAPPER_MARK = "<!-- written by longmemeval-benchmarker setup (--short-commands); safe to delete -->"
"""The mark of the project commands an earlier ``--short-commands`` wrote."""
SHORT_COMMANDS_NOTICE = ("--short-commands is no longer needed: " + ", ".join(command_names.ALL.values()) +
                         " work by these names right after the plugin is installed (nothing written)")


def frontmatter(path: Path) -> dict[str, str]:
    """The ``key: value`` lines of a Markdown file's frontmatter (one-line values, as our files use)."""
    text = path.read_text(encoding="utf-8")
    match = re.match(r"\A---\r?\n(.*?)\r?\n---\r?\n", text, re.S)
    fields: dict[str, str] = {}
    for line in (match.group(1).splitlines() if match else ()):
        key, sep, value = line.partition(":")
        if sep and key.strip() and not key.startswith(" "):
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
                value = value[1:-1]
            fields[key.strip()] = value
    return fields


def split_entries(allowed: str) -> list[str]:
    """``allowed-tools`` as Claude Code splits it: at commas and spaces outside parentheses."""
    entries, current, inside = [], "", False
    for ch in allowed:
        if ch == "(":
            inside = True
        elif ch == ")":
            inside = False
        if ch in ", " and not inside:
            if current.strip():
                entries.append(current.strip())
            current = ""
        else:
            current += ch
    if current.strip():
        entries.append(current.strip())
    return entries


ARMS_THE_STOP_HOOK = "/scripts/loop_session.py"
"""A skill whose ``allowed-tools`` run this script is the loop's (it arms the Stop hook): its rules are the ones
``--allow-unattended`` writes. Chosen by what the skill does, so its name can change."""
RULE_KINDS = ("Bash(", "Edit(")


def loop_skills(plugin_root: Path = PLUGIN_ROOT) -> list[Path]:
    """The skills that run the iteration loop (see ``ARMS_THE_STOP_HOOK``)."""
    return [skill for skill in sorted((plugin_root / "skills").glob("*/SKILL.md"))
            if ARMS_THE_STOP_HOOK in frontmatter(skill).get("allowed-tools", "")]


def permission_rules(plugin_root: Path = PLUGIN_ROOT, project: Path | None = None) -> list[str]:
    """The loop's rules and nothing more: the loop skill's Bash rules (the plugin's path written in) and its Edit
    rules (the memory system's folder, the proposal, the trigger set), the Edit rules of ``project``'s fix paths
    (``fix_path_rules``), and a Skill rule for the skill. Not the other commands' and skills' rules: a standing
    rule for ``run_benchmark.py`` or ``setup_project.py``, or for a skill that allows them, would let a session run
    them with any argument, unasked."""
    rules: list[str] = []
    for skill in loop_skills(plugin_root):
        meta = frontmatter(skill)
        for entry in split_entries(meta.get("allowed-tools", "")):
            if entry.startswith(RULE_KINDS):
                rules.append(entry.replace("${CLAUDE_PLUGIN_ROOT}", str(plugin_root)))
        rules += [] if project is None else fix_path_rules(project)
        rules.append(f"Skill({command_names.PLUGIN}:{meta.get('name', skill.parent.name)})")
    return list(dict.fromkeys(rules))


NEVER_EDITABLE = (STATE_DIR, VENV_DIR, ".git", ".claude")
"""Folders no standing Edit rule covers, whatever the fix paths say: the loop's state and the config (the user's),
the venv, git's own files, Claude Code's settings."""


def fix_path_rules(project: Path) -> list[str]:
    """``Edit(...)`` rules for the project's fix paths, from its config: ``loop.fix_paths`` (else the folder of
    ``loop.target``), and the file or folder ``loop_target.py use`` makes the fix paths of the user's own system the
    config's ``target`` names (so the rule is there before a session runs ``use``). A folder as ``Edit(/folder/**)``,
    a file as ``Edit(/file)``. None for the whole project or a path in ``NEVER_EDITABLE`` (the loop then asks before
    such an edit), none when the config names no fix path or cannot be read (the loop's own commands say what is
    wrong with it)."""
    try:
        paths = loop_rules.fix_paths(project)
    except (UserError, OSError):
        paths = []
    own = _own_system(project)
    paths += [own] if own is not None else []
    return list(dict.fromkeys(f"Edit(/{path}**)" if path.endswith("/") else f"Edit(/{path})" for path in paths
                              if path and path.split("/")[0] not in NEVER_EDITABLE))


def _own_system(project: Path) -> str | None:
    """The fix path ``loop_target.py use`` would set for the config's ``target`` when it names the user's own
    system in the project (None: a built-in target, memory-ref's copy, or no such file or folder)."""
    try:
        named = loop_rules.read_project_config(project).get("target")
        if not isinstance(named, str) or named in BUILTIN_TARGETS or is_reference(named, Path(project)):
            return None
        relative, folder = target.own_system_path(Path(project).resolve(), named)
    except (UserError, OSError):
        return None
    return f"{relative}/" if folder else relative


def refresh_edit_rules(project: Path, write_json: Any) -> list[str]:
    """After the loop's target changed: when the project holds the rules ``--allow-unattended`` wrote, add the Edit
    rules of its fix paths now (returns those added). A project without them is left alone: no rule is written
    that the user did not ask for."""
    path = Path(project) / SETTINGS_FILE
    try:
        current = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not standing_rules_in(current):
        return []
    merged, added = merge_rules(current, fix_path_rules(Path(project)))
    if added:
        write_json(path, merged)
    return added


def merge_rules(settings: dict[str, Any], rules: Iterable[str]) -> tuple[dict[str, Any], list[str]]:
    """``settings`` with ``rules`` added to ``permissions.allow`` (existing entries kept); returns (new, added)."""
    permissions = settings.get("permissions") if isinstance(settings.get("permissions"), dict) else {}
    allow = [r for r in permissions.get("allow") or () if isinstance(r, str)]
    added = [r for r in rules if r not in allow]
    return {**settings, "permissions": {**permissions, "allow": allow + added}}, added


def write_permissions(project: Path, write_json: Any, plugin_root: Path = PLUGIN_ROOT) -> list[str]:
    """Add the rules to ``<project>/.claude/settings.local.json``; returns the rules added (none: all present)."""
    path = Path(project) / SETTINGS_FILE
    try:
        current = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        current = {}
    if not isinstance(current, dict):
        raise ValueError(f"{path} is not a JSON object")
    merged, added = merge_rules(current, permission_rules(plugin_root, Path(project)))
    if added:
        write_json(path, merged)
    return added


def earlier_wrappers(project: Path) -> list[str]:
    """The project commands an earlier ``--short-commands`` wrote (our mark inside), which are no longer needed."""
    folder = Path(project) / COMMANDS_DIR
    found = []
    for name in command_names.ALL.values():
        path = folder / f"{name[1:]}.md"
        try:
            if path.is_file() and WRAPPER_MARK in path.read_text(encoding="utf-8", errors="replace"):
                found.append((COMMANDS_DIR / path.name).as_posix())
        except OSError:
            continue
    return found


def check_settings_file(project: Path) -> None:
    """``.claude/settings.local.json``, when present, must be a JSON object (checked before anything is written)."""
    path = project / SETTINGS_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return
    except (OSError, ValueError) as err:
        raise UserError(f"{path} is not valid JSON ({err})", fix="fix or delete it, then re-run") from None
    if not isinstance(data, dict):
        raise UserError(f"{path} is not a JSON object", fix="fix or delete it, then re-run")


def write_opt_ins(project: Path, report: Report, *, allow: bool, short: bool) -> None:
    """What ``--allow-unattended`` and ``--short-commands`` ask of setup, each reported on its own line."""
    if allow:
        added = write_permissions(project, write_json)
        where = SETTINGS_FILE.as_posix()
        report.add("permissions", f"added {len(added)} rules to {where}" if added
                   else f"all rules already in {where}; nothing to do")
        for rule in permission_rules():
            report.add("permissions", f"  {rule}")
    if short:
        report.add("commands", SHORT_COMMANDS_NOTICE)
        for path in earlier_wrappers(project):
            report.add("commands", f"{path}: written by an earlier --short-commands, no longer needed (delete it)")
