"""Every name the plugin's Markdown gives the agent is real: each script, Python name, option and exit code it names
exists in the code, and the run's exit table lists each code ``lme/run/exit_codes.py`` defines, once, for its ending.

The docs checked are the ones the agent follows: ``commands/*.md``, ``skills/*/SKILL.md`` and the loop's references
(``references/iteration-rules.md``, ``references/termination.md``). What counts as a name:

- a script: a ``*.py`` / ``*.sh`` word in inline code or a bash block, a file of ``scripts/`` (a few upstream and
  example names are listed in ``NOT_OURS``; ``SCRIPT.py`` is a placeholder); a path, a file of the plugin;
- a Python name: inline code that is a dotted name (``lme.loop.rules.check_loop_run``, ``loop_git.run_git``) or a
  snake_case / camelCase identifier (``append_row``, ``fix_paths``, ``confirmCostUsd``): a module attribute, or a
  word of our sources (config keys and record fields are strings there);
- an option: ``--flag`` after a script name must be in that script's ``--help`` (and its subcommand's); any other
  ``--flag`` in the help of some script the docs name; a command's ``argument-hint`` in its scripts' help;
- an exit code: ``exit N`` / ``Exit N`` / ``exits N`` must be a code ``lme/run/exit_codes.py`` defines.
"""

from __future__ import annotations

import functools
import importlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lme.run import exit_codes

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "scripts"
DOCS = [*sorted((REPO / "commands").glob("*.md")), *sorted((REPO / "skills").glob("*/SKILL.md")),
        REPO / "references" / "iteration-rules.md", REPO / "references" / "termination.md"]
RUN_EXIT_TABLE = REPO / "skills" / "run-benchmark" / "SKILL.md"
NOT_OURS = {"memsys.py": "the user's own system in the examples", "evaluate_qa.py": "upstream's judge",
            "print_qa_metrics.py": "upstream's metrics", "__init__.py": "a package folder's file"}

_FENCE = re.compile(r"^[ \t]*```bash\n(.*?)^[ \t]*```", re.S | re.M)
_INLINE = re.compile(r"`([^`\n]+)`")
_SCRIPT = re.compile(r"(?:(?<=/scripts/)|(?<![\w/.-]))([A-Za-z_][\w-]*\.(?:py|sh))\b")
_PATH = re.compile(r"(?:\$\{CLAUDE_PLUGIN_ROOT\}/)?((?:[\w.-]+/)+[\w.-]+\.(?:py|sh))\b")
_OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_IDENTIFIER = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+|_?[a-z]+(?:[A-Z][a-z0-9]*)+")
_EXIT = re.compile(r"\b[Ee]xit(?:s| status| code)?\s+(\d+)\b")
_FILE_SUFFIXES = (".py", ".sh", ".json", ".jsonl", ".md", ".txt", ".html", ".svg", ".png", ".local")


def _body(doc: Path) -> str:
    text = doc.read_text(encoding="utf-8")
    return text.split("\n---\n", 1)[1] if text.startswith("---\n") else text


def _frontmatter(doc: Path) -> dict[str, str]:
    text = doc.read_text(encoding="utf-8")
    if not text.startswith("---\n"):
        return {}
    head = text[4:text.index("\n---\n")]
    return {k.strip(): v.strip().strip('"') for k, _, v in (line.partition(":") for line in head.splitlines()) if v}


def _pieces(doc: Path) -> list[str]:
    """The doc's inline code spans and the lines of its bash blocks (each a place a name is given in)."""
    body = _body(doc)
    lines = [line for block in _FENCE.findall(body) for line in block.splitlines() if line.strip()]
    return [*lines, *_INLINE.findall(_FENCE.sub("", body))]


@functools.lru_cache(maxsize=None)
def _sources() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for pattern in ("*.py", "*.sh")
                     for p in SCRIPTS.rglob(pattern) if "__pycache__" not in p.parts)


@functools.lru_cache(maxsize=None)
def _help(script: str, sub: str | None = None) -> str:
    """``script [sub] --help`` as a user gets it (a ``.sh`` through bash); '' when it has no such subcommand."""
    path = SCRIPTS / script
    command = ["bash", str(path)] if script.endswith(".sh") else [sys.executable, str(path)]
    done = subprocess.run([*command, *([sub] if sub else []), "--help"], capture_output=True, text=True, timeout=60,
                          cwd=REPO)
    return done.stdout if done.returncode == 0 else ""


PASSES_ON = {"parallel_longmemeval.sh": "run_benchmark.py", "venv_run.sh": None}
"""A script that hands its other arguments to another script (``None``: to the script named after it)."""


def _script_calls(piece: str) -> list[tuple[str, str | None, list[str]]]:
    """(script, subcommand, options) for each script named in ``piece``; options up to the next script name."""
    found = list(_SCRIPT.finditer(piece))
    calls = []
    for i, match in enumerate(found):
        rest = piece[match.end():found[i + 1].start() if i + 1 < len(found) else len(piece)]
        words = rest.split()
        sub = words[0] if words and re.fullmatch(r"[a-z][a-z-]*", words[0]) else None
        calls.append((match[1], sub, _OPTION.findall(rest)))
    return calls


@functools.lru_cache(maxsize=None)
def _own_source(script: str) -> str:
    """The script and its command module (``lme/cli/<name>.py``): where its own options are declared."""
    files = [SCRIPTS / script, SCRIPTS / "lme" / "cli" / script]
    return "\n".join(f.read_text(encoding="utf-8") for f in files if f.is_file())


def _accepted(script: str, sub: str | None, option: str) -> bool:
    """``option`` is an option of ``script`` (of its subcommand ``sub``, when it has subcommands): declared in its
    source, else in its ``--help`` (shared parsers' options: ``--project``, ``--json``)."""
    if sub is None and f'"{option}"' in _own_source(script):
        return True
    helps = [_help(script), _help(script, sub) if sub else ""]
    if PASSES_ON.get(script):
        helps.append(_help(PASSES_ON[script]))
    return any(re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", text) for text in helps)


@functools.lru_cache(maxsize=None)
def _all_help() -> str:
    """The help of every script the docs name, with the subcommands they name."""
    calls = {(s, sub) for doc in DOCS for piece in _pieces(doc) for s, sub, _ in _script_calls(piece)
             if (SCRIPTS / s).is_file()}
    return "\n".join(_help(s, sub) for s, sub in sorted(calls, key=str)) + _help("run_benchmark.py")


def _python_name_exists(name: str) -> bool:
    if name.endswith(_FILE_SUFFIXES) or "/" in name:
        return True  # a file name, not a Python name (scripts are checked on their own)
    parts = name.split(".")
    if parts[0] == "lme":
        for cut in range(len(parts), 1, -1):
            try:
                obj = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            for attr in parts[cut:]:
                if not hasattr(obj, attr):
                    return False
                obj = getattr(obj, attr)
            return True
        return False
    if _in_a_schema(parts):
        return True  # a record's field (``target.stages``) or a config key (``loop.fix_paths``)
    modules = [p for p in SCRIPTS.rglob(f"{parts[0]}.py") if "__pycache__" not in p.parts]
    if len(parts) == 2 and modules:
        return any(re.search(rf"^(def |class )?{re.escape(parts[1])}\b|\b{re.escape(parts[1])}\b.*import|"
                             rf"import.*\b{re.escape(parts[1])}\b", m.read_text(encoding="utf-8"), re.M)
                   for m in modules)
    return all(re.search(rf"\b{re.escape(part)}\b", _sources()) for part in parts)


@functools.lru_cache(maxsize=None)
def _schemas() -> list[dict]:
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted((REPO / "references" / "schemas").glob("*.json"))]


def _in_a_schema(parts: list[str]) -> bool:
    """``parts`` is a path of nested properties in one of ``references/schemas/*.json``."""
    for schema in _schemas():
        node = schema
        for part in parts:
            node = (node.get("properties") or {}).get(part) if isinstance(node, dict) else None
            if node is None:
                break
        else:
            return True
    return False


# --------------------------------------------------------------------------- the checks


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_script_the_markdown_names_is_a_plugin_script(doc):
    named = {m for piece in _pieces(doc) for m in _SCRIPT.findall(piece) if not m.split(".")[0].isupper()}
    missing = sorted(n for n in named if n not in NOT_OURS and not (SCRIPTS / n).is_file())
    paths = {m for piece in _pieces(doc) for m in _PATH.findall(piece)}
    missing += sorted(p for p in paths if Path(p).name not in NOT_OURS and not (REPO / p).is_file()
                      and not (SCRIPTS / p).is_file())
    assert not missing, f"{doc.relative_to(REPO)} names scripts that do not exist: {missing}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_python_name_in_backticks_exists_in_the_code(doc):
    spans = _INLINE.findall(_FENCE.sub("", _body(doc)))
    names = {s for s in spans if _DOTTED.fullmatch(s) or _IDENTIFIER.fullmatch(s)}
    missing = sorted(n for n in names if not _python_name_exists(n))
    assert not missing, f"{doc.relative_to(REPO)} names what the code does not define: {missing}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_option_the_markdown_gives_a_script_is_in_its_help(doc):
    wrong = []
    for piece in _pieces(doc):
        calls = [(s, sub, opts) for s, sub, opts in _script_calls(piece) if (SCRIPTS / s).is_file()]
        if venv := [c for c in calls if c[0] == "venv_run.sh"]:  # venv_run.sh X.py ...: the options are X's
            calls = [c for c in calls if c not in venv]
        for script, sub, options in calls:
            wrong += [f"{script} {sub or ''} {o}" for o in options if not _accepted(script, sub, o)]
        if not _SCRIPT.search(piece) and not piece.startswith("git "):  # git's options are git's
            wrong += [o for o in _OPTION.findall(piece) if f'"{o}"' not in _sources() and o not in _all_help()]
    assert not wrong, f"{doc.relative_to(REPO)}: options no script takes: {sorted(set(wrong))}"


@pytest.mark.parametrize("command", sorted((REPO / "commands").glob("*.md")), ids=lambda p: p.stem)
def test_a_commands_argument_hint_offers_only_options_its_scripts_take(command):
    scripts = {s for block in _FENCE.findall(_body(command)) if "$ARGUMENTS" in block
               for s, _, _ in _script_calls(block) if s != "venv_run.sh"}
    hint = _OPTION.findall(_frontmatter(command).get("argument-hint", ""))
    wrong = [o for o in hint if not any(_accepted(s, None, o) for s in scripts)]
    assert not wrong, f"{command.name}: argument-hint options {wrong} are not options of {sorted(scripts)}"


DEFINED = {value for name, value in vars(exit_codes).items() if name.startswith("EXIT_")}


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_exit_code_the_markdown_names_is_defined(doc):
    named = {int(code) for code in _EXIT.findall(_body(doc))}
    assert named <= DEFINED, (
        f"{doc.relative_to(REPO)} names exit codes lme/run/exit_codes.py does not define: {sorted(named - DEFINED)}")


def _exit_table() -> dict[int, str]:
    """The run-benchmark skill's exit table: code -> its row's text."""
    rows = re.findall(r"^\| (\d+) \| (.*)\|$", RUN_EXIT_TABLE.read_text(encoding="utf-8"), re.M)
    codes = [int(code) for code, _ in rows]
    assert len(codes) == len(set(codes)), f"a code listed twice: {codes}"
    return {int(code): text.lower() for code, text in rows}


def test_the_run_exit_table_lists_every_code_once_with_its_ending():
    """One exit code per ending, documented once: each constant of exit_codes.py is a row, and its row names it."""
    table = _exit_table()
    assert set(table) == DEFINED
    for name, value in vars(exit_codes).items():
        if name.startswith("EXIT_"):
            words = [w for w in name.lower().split("_")[1:] if len(w) > 3]
            assert any(w[:6] in table[value] for w in words), f"exit {value}: its row does not say {name}"


def test_the_checks_catch_a_name_that_does_not_exist():
    assert not _python_name_exists("append_item_result")
    assert not _python_name_exists("lme.loop.rules.no_such_check")
    assert _python_name_exists("lme.loop.rules.check_loop_run") and _python_name_exists("branch.run_git")
    assert not _python_name_exists("loop_git.run_git")  # the name iteration-rules.md gave, moved since
    assert _python_name_exists("target.stages") and not _python_name_exists("target.no_such_field")
    assert not _accepted("run_status.py", None, "--no-such-flag") and _accepted("run_status.py", None, "--wait")
    assert _accepted("rounds.py", "finish", "--reusable") and not _accepted("rounds.py", "begin", "--reusable")
    assert [int(c) for c in _EXIT.findall("Exit 7, then exit 4; it exits 130")] == [7, 4, 130]
