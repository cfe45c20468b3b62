"""The loop pointed at the user's own memory system (``loop_target.py use PATH``): a Python file and a command
written here from plugins/README.md alone, in a real git project. The target, its fix paths and its commit; the
refusals (outside the project, a link out, missing; in a loop session, a path the user did not name); memory-ref's
settings (writer, the three symbolic layers) never pushed onto it, by the config, the pre-flight, the hard rules,
``loop_stack.py set`` or the loop's own run; the unattended rules' Edit rule for its fix paths."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lme.cli import claude_settings
from lme.cli import loop_guard
from lme.cli import loop_stack as loop_stack_cli
from lme.cli import loop_target as loop_target_cli
from lme.cli import setup_project
from lme.core.errors import run_main
from lme.loop import rules as loop_rules
from loop_testing import git, make_loop_project

REPO = Path(__file__).resolve().parents[2]
CHECK_SETUP = REPO / "scripts" / "check_setup.sh"
KEYS = {"OPENAI_API_KEY": "sk-test-openai-DUMMY", "ANTHROPIC_API_KEY": "sk-ant-test-DUMMY"}

MEMSYS_PY = '''"""My memory system: the user turn sharing most words with the question."""


def generate(item, ctx):
    words = set(item["question"].lower().split())
    best, ranked = "", []
    for session in item["sessions"]:
        for turn in session["turns"]:
            if turn["role"] == "user" and len(words & set(turn["content"].lower().split())) > len(words & set(best.lower().split())):
                best = turn["content"]
        ranked.append(session["session_id"])
    return {"hypothesis": best or "There is not enough information to answer.",
            "retrieved_session_ids": ranked, "debug": {"options": ctx["options"]}}
'''
"""A system written from plugins/README.md ("As a Python file"): dicts in, a dict out; it reports the options it
was given, so a test sees what the loop passed it."""

MEMSYS_CMD = f'''#!{sys.executable}
"""My memory system as a command: the item JSON on stdin, one JSON object on stdout."""
import json, sys

item = json.load(sys.stdin)
print(json.dumps({{"hypothesis": "I do not know.", "retrieved_session_ids": [s["session_id"] for s in item["sessions"]]}}))
'''
"""The same contract as a program (plugins/README.md, "As a command")."""


def config_of(project: Path) -> dict:
    return json.loads((project / ".longmemeval-benchmarks" / "config.json").read_text())


def write_config(project: Path, **changes) -> None:
    path = project / ".longmemeval-benchmarks" / "config.json"
    path.parent.mkdir(exist_ok=True)
    current = json.loads(path.read_text()) if path.exists() else {}
    path.write_text(json.dumps({**current, **changes}, indent=2))


def use(project: Path, *args: str) -> int:
    return run_main(loop_target_cli.main, ["--project", str(project), *args])


@pytest.fixture
def project(tmp_path):
    project = make_loop_project(tmp_path)
    assert run_main(setup_project.main, ["--project", str(project), "--skip-venv", "--sample"]) == 0
    (project / "memsys.py").write_text(MEMSYS_PY)
    return project


def run_check(project: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(CHECK_SETUP), "--project", str(project)], capture_output=True, text=True,
                          env={**os.environ, **KEYS}, timeout=60)


# --------------------------------------------------------------------------- use PATH


def test_use_makes_the_users_file_the_runs_and_the_loops_target_and_commits_it_once(project, capsys):
    assert use(project, "use", "memsys.py") == 0
    out = capsys.readouterr().out
    assert "config: target and loop.target set to memsys.py, loop.fix_paths to ['memsys.py']" in out
    cfg = config_of(project)
    assert (cfg["target"], cfg["loop"]["target"], cfg["loop"]["fix_paths"]) == ("memsys.py", "memsys.py", ["memsys.py"])
    assert loop_rules.fix_paths(project) == ["memsys.py"]
    log = git(["log", "--format=%s", "--name-only", "-1"], project).stdout.split()
    assert " ".join(log[:-1]) == "loop target: memsys.py, your own memory system" and log[-1] == "memsys.py"
    head = git(["rev-parse", "HEAD"], project).stdout
    assert use(project, "use", "./memsys.py") == 0
    again = capsys.readouterr().out
    assert "already" in again and "memsys.py is committed already" in again
    assert git(["rev-parse", "HEAD"], project).stdout == head


def test_use_takes_a_command_file_or_a_package_folder_with_its_fix_paths(project):
    script = project / "bin" / "memsys"
    script.parent.mkdir()
    script.write_text(MEMSYS_CMD)
    script.chmod(0o755)
    assert use(project, "use", "bin/memsys") == 0
    assert config_of(project)["loop"]["fix_paths"] == ["bin/memsys"]
    package = project / "mysys"
    package.mkdir()
    (package / "__init__.py").write_text("def generate(item, ctx):\n    raise NotImplementedError\n")
    assert use(project, "use", "mysys") == 0
    cfg = config_of(project)
    assert (cfg["loop"]["target"], cfg["loop"]["fix_paths"]) == ("mysys", ["mysys/"])
    assert loop_rules.fix_paths(project) == ["mysys/"]


@pytest.mark.parametrize("given,said", [
    ("../outside.py", "is outside the project"),
    ("link.py", "is reached through the symbolic link"),
    ("linked/memsys.py", "is reached through the symbolic link"),
    ("nothere.py", "does not exist in the project"),
    ("pkg", "is a symbolic link out of the project"),
    ("notes.txt", "is neither a .py file nor an executable"),
    (".longmemeval-benchmarks/config.json", "is not a memory system's file or folder"),
])
def test_use_refuses_a_path_outside_a_link_out_or_a_missing_one_with_one_line(project, capsys, given, said):
    outside = project.parent / "outside"
    outside.mkdir()
    (outside / "memsys.py").write_text(MEMSYS_PY)
    (project.parent / "outside.py").write_text(MEMSYS_PY)
    (project / "link.py").symlink_to(outside / "memsys.py")
    (project / "linked").symlink_to(outside)
    (project / "pkg").mkdir()
    (project / "pkg" / "__init__.py").write_text(MEMSYS_PY)
    (project / "pkg" / "helper.py").symlink_to(outside / "memsys.py")
    (project / "notes.txt").write_text("not a system\n")
    before, head = config_of(project), git(["rev-parse", "HEAD"], project).stdout
    assert use(project, "use", given) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and said in err and err.count("\n") == 1, err
    assert config_of(project) == before and git(["rev-parse", "HEAD"], project).stdout == head


def test_in_a_loop_session_use_takes_only_the_system_the_user_named(project, capsys, monkeypatch):
    monkeypatch.setenv("CLAUDE_CODE_SESSION_ID", "a-session")
    monkeypatch.chdir(project)  # Claude Code runs the line in the project
    (project / "other.py").write_text(MEMSYS_PY)
    assert use(project, "use", "other.py") == 2
    assert "is not the target the config names" in capsys.readouterr().err
    assert config_of(project)["target"] != "other.py"
    write_config(project, target="memsys.py")  # the user's own choice, for runs
    assert use(project, "use", "memsys.py") == 0
    assert config_of(project)["loop"]["target"] == "memsys.py"


def test_use_copy_never_replaces_the_users_own_target(project, capsys):
    assert use(project, "use", "memsys.py") == 0
    assert use(project, "use-copy") == 2
    err = capsys.readouterr().err
    assert "the loop's target is memsys.py, your own memory system" in err and "use memsys.py" in err
    assert not (project / "memory_system").exists() and config_of(project)["loop"]["target"] == "memsys.py"


# --------------------------------------------------------------------------- memory-ref's settings stay its own


def test_use_takes_memory_refs_settings_out_and_the_loop_gives_the_system_no_symbolic_option(project, capsys):
    write_config(project, targetOptions={"symbolic_bypass": True, "mine": 1},
                 loop={"targetOptions": {"symbolic_resolver": True, "stack": {"writer": "openai:gpt-4o-mini"}}})
    assert use(project, "use", "memsys.py") == 0
    out = capsys.readouterr().out
    assert ("took out memory-ref's settings, which memsys.py never gets: targetOptions.symbolic_bypass, "
            "loop.targetOptions.symbolic_resolver, loop.targetOptions.stack") in out
    cfg = config_of(project)
    assert cfg["targetOptions"] == {"mine": 1} and cfg["loop"]["targetOptions"] == {}
    assert loop_rules.loop_config(project)["targetOptions"] == {}
    assert loop_guard.main(["config", "--project", str(project)]) == 0
    assert json.loads(capsys.readouterr().out)["targetOptions"] == {}


def test_memory_ref_and_its_copy_keep_their_three_symbolic_layers(project):
    assert loop_rules.loop_config(project)["targetOptions"] == dict.fromkeys(loop_rules.SYMBOLIC_FLAGS, True)
    assert use(project, "use-copy") == 0
    assert loop_rules.loop_config(project)["targetOptions"] == dict.fromkeys(loop_rules.SYMBOLIC_FLAGS, True)


def test_the_hard_rules_ask_the_symbolic_layers_of_memory_ref_only(project):
    request = loop_rules.LoopRunRequest(n_total=500, max_items=None, judge_provider="openai", judge_model="gpt-4o",
                                        symbolic={}, target="memsys.py")
    assert use(project, "use", "memsys.py") == 0
    assert loop_rules.check_loop_run(request, project) == []
    problems = loop_rules.check_loop_run(request._replace(target="memory-ref"), project)
    assert len([p for p in problems if "symbolic" in p]) == 3


def test_check_setup_checks_no_symbolic_flag_for_the_users_own_system(project):
    assert use(project, "use", "memsys.py") == 0
    write_config(project, loop={**config_of(project)["loop"], "targetOptions": {"symbolic_bypass": False}})
    proc = run_check(project)
    assert proc.returncode == 0, proc.stdout
    assert ("ok   symbolic layers: memory-ref's settings, not checked: the loop's target memsys.py gets no "
            "symbolic option") in proc.stdout
    assert "symbolic_bypass" not in proc.stdout


def test_loop_stack_set_gives_the_users_system_its_model_only_and_says_what_it_left_out(project, capsys):
    write_config(project, targetProvider="openai", targetModel="gpt-4o-mini")
    assert use(project, "use", "memsys.py") == 0
    capsys.readouterr()
    assert run_main(loop_stack_cli.main, ["--project", str(project), "set"]) == 0
    out = capsys.readouterr().out
    assert "set loop.target_model = openai:gpt-4o-mini" in out
    assert "left out: the writer model and the symbolic layers" in out
    loop = config_of(project)["loop"]
    assert loop["target_model"] == "openai:gpt-4o-mini" and "stack" not in (loop.get("targetOptions") or {})
    assert run_main(loop_stack_cli.main, ["--project", str(project), "set", "--writer", "openai:gpt-4o-mini"]) == 2
    assert "--writer is memory-ref's writer model" in capsys.readouterr().err
    assert run_main(loop_stack_cli.main, ["--project", str(project), "show"]) == 0
    assert "your own system: no writer" in capsys.readouterr().out


def test_the_loops_run_hands_the_users_system_no_symbolic_option_and_fingerprints_it(project, fake_llm):
    from run_project import register_answers
    from upstream_standin import make_upstream_tree

    register_answers(fake_llm)
    write_config(project, targetProvider="openai", targetModel="gpt-4o-mini", judgeProvider="openai",
                 judgeModel="gpt-4o", longmemeval_root=str(make_upstream_tree(project.parent / "upstream")),
                 requestTimeoutSeconds=5, maxAttempts=2)
    assert use(project, "use", "memsys.py") == 0
    proc = subprocess.run(["bash", str(REPO / "scripts" / "parallel_longmemeval.sh"), "2", "1", "500", "--yes",
                           "--progress", "quiet", "--no-scorecard"], cwd=project, capture_output=True, text=True,
                          env={**os.environ, "LONGMEMEVAL_TIKTOKEN": "0"}, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run = project / ".longmemeval-benchmarks" / "runs" / "longmemeval-iter"
    rows = [json.loads(line) for line in (run / "item-results.jsonl").read_text().splitlines()]
    assert rows and all(r["target"]["debug"]["options"] == {} for r in rows), rows[0]["target"]["debug"]
    meta = json.loads((run / "run-meta.json").read_text())
    assert not set(meta["target"]["options"]) & set(loop_rules.SYMBOLIC_FLAGS)
    code = meta["invocations"][-1]["code"]
    assert list(code["files"]) == ["memsys.py"] and {r["code"] for r in rows} == {code["id"]}


# --------------------------------------------------------------------------- the unattended rules' Edit rule


def test_allow_unattended_lets_the_loop_edit_the_users_fix_paths_from_the_config(project, capsys):
    assert use(project, "use", "memsys.py") == 0
    assert not (project / ".claude").exists()  # no rules asked for: none written
    assert run_main(setup_project.main, ["--project", str(project), "--skip-venv", "--allow-unattended"]) == 0
    allow = json.loads((project / ".claude" / "settings.local.json").read_text())["permissions"]["allow"]
    assert "Edit(/memsys.py)" in allow and "Edit(/memory_system/**)" in allow
    assert claude_settings.permission_rules(project=project) == [*claude_settings.permission_rules()[:-1],
                                                                "Edit(/memsys.py)",
                                                                claude_settings.permission_rules()[-1]]


def test_use_adds_the_edit_rule_when_the_project_holds_the_unattended_rules(project, capsys):
    assert run_main(setup_project.main, ["--project", str(project), "--skip-venv", "--allow-unattended"]) == 0
    capsys.readouterr()
    assert use(project, "use", "memsys.py") == 0
    assert "added Edit(/memsys.py) to .claude/settings.local.json" in capsys.readouterr().out
    allow = json.loads((project / ".claude" / "settings.local.json").read_text())["permissions"]["allow"]
    assert allow.count("Edit(/memsys.py)") == 1


def test_allow_unattended_covers_the_system_the_config_names_before_use_runs(project):
    write_config(project, target="memsys.py")  # the user's system, for runs; the loop's target not set yet
    assert claude_settings.fix_path_rules(project) == ["Edit(/memsys.py)"]
    assert "Edit(/memsys.py)" in claude_settings.permission_rules(project=project)
    write_config(project, target="../outside.py")
    assert claude_settings.fix_path_rules(project) == []


@pytest.mark.parametrize("fix_paths", [["."], [".longmemeval-benchmarks/"], [".claude/"]])
def test_no_standing_edit_rule_covers_the_whole_project_or_the_loops_state(project, fix_paths):
    write_config(project, loop={"target": "memsys.py", "fix_paths": fix_paths})
    assert claude_settings.fix_path_rules(project) == []
