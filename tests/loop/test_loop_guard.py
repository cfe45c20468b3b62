"""The loop's hard rules: guards for --loop runs and the git wrappers (real git, bare remote)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lme.loop import branch as loop_git
from lme.cli import loop_git as loop_git_cli
from lme.cli import loop_guard
from lme.loop import rules as loop_rules
from lme.core.errors import UserError, run_main
from loop_testing import LOOP_BRANCH, git, make_loop_project

REPO_PLUGINS = Path(__file__).resolve().parents[2] / "plugins"

GOOD = loop_rules.LoopRunRequest(
    n_total=500,
    max_items=500,
    judge_provider="openai",
    judge_model="gpt-4o",
    symbolic={"symbolic_resolver": True, "symbolic_temporal": True, "symbolic_bypass": True},
    target="memory-ref",
)


@pytest.fixture
def project(tmp_path):
    return make_loop_project(tmp_path)


def test_full_run_with_official_judge_and_symbolic_on_passes(project):
    assert loop_rules.check_loop_run(GOOD, project) == []


def test_pinned_judge_snapshot_passes_and_max_none_means_all(project):
    settings = GOOD._replace(judge_model="gpt-4o-2024-08-06", max_items=None)
    assert loop_rules.check_loop_run(settings, project) == []


def test_partial_n_is_refused(project):
    problems = loop_rules.check_loop_run(GOOD._replace(max_items=133), project)
    assert len(problems) == 1 and "133" in problems[0] and "500" in problems[0]


def test_499_item_copy_with_max_500_is_full(project):
    assert loop_rules.check_loop_run(GOOD._replace(n_total=499, max_items=500), project) == []
    assert loop_rules.check_loop_run(GOOD._replace(n_total=499, max_items=498), project)


@pytest.mark.parametrize(
    "provider,model", [("openai", "gpt-4o-mini"), ("anthropic", "claude-sonnet-4-5"), ("offline", "offline-containment-v1"), ("openai", "gpt-4.1")]
)
def test_non_gpt4o_judge_is_refused(project, provider, model):
    problems = loop_rules.check_loop_run(GOOD._replace(judge_provider=provider, judge_model=model), project)
    assert len(problems) == 1 and "judge" in problems[0]


@pytest.mark.parametrize("flag", ["symbolic_resolver", "symbolic_temporal", "symbolic_bypass"])
def test_any_symbolic_flag_off_is_refused(project, flag):
    problems = loop_rules.check_loop_run(GOOD._replace(symbolic={**GOOD.symbolic, flag: False}), project)
    assert problems == [f"--{flag.replace('_', '-')} is off: the loop keeps all three symbolic layers on"]


def test_missing_symbolic_flag_counts_as_off_and_dash_names_are_understood(project):
    problems = loop_rules.check_loop_run(GOOD._replace(symbolic={"symbolic-resolver": True, "--symbolic-temporal": True}), project)
    assert len(problems) == 1 and "bypass" in problems[0]


def test_off_loop_branch_is_refused(project):
    git(["switch", "-q", "main"], project)
    problems = loop_rules.check_loop_run(GOOD, project)
    assert problems and "main" in problems[0] and LOOP_BRANCH in problems[0]


def test_configured_loop_branch_and_target_are_used(tmp_path):
    project = make_loop_project(tmp_path, branch="my-loop", loop={"branch": "my-loop", "target": "memory-ref"})
    assert loop_rules.check_loop_run(GOOD, project) == []
    problems = loop_rules.check_loop_run(GOOD._replace(target="full-context"), project)
    assert problems == ["target is full-context, the loop configuration says memory-ref"]


def test_every_broken_rule_is_reported_at_once(project):
    git(["switch", "-q", "main"], project)
    bad = GOOD._replace(max_items=10, judge_model="gpt-4o-mini", symbolic={})
    assert len(loop_rules.check_loop_run(bad, project)) == 1 + 1 + 3 + 1


def test_target_correct_is_95_percent_rounded_up():
    assert loop_rules.target_correct(500) == 475
    assert loop_rules.target_correct(499) == 475  # 474.05 rounds up
    assert loop_rules.target_correct(20) == 19


def test_loop_config_merges_target_options_over_defaults(tmp_path):
    project = make_loop_project(tmp_path, loop={"targetOptions": {"symbolic_bypass": False, "top_k": 5}, "n_parallel": 4})
    cfg = loop_rules.loop_config(project)
    assert cfg["targetOptions"] == {"symbolic_resolver": True, "symbolic_temporal": True, "symbolic_bypass": False, "top_k": 5}
    assert cfg["n_parallel"] == 4 and cfg["branch"] == LOOP_BRANCH


def test_check_command_fails_when_config_turns_a_flag_off(tmp_path, capsys):
    project = make_loop_project(tmp_path, loop={"targetOptions": {"symbolic_temporal": False}})
    assert loop_guard.main(["check", "--project", str(project)]) == 1
    assert "FAIL --symbolic-temporal is off" in capsys.readouterr().out


# --------------------------------------------------------------------------- loop_git


def test_commit_on_loop_branch_commits_only_named_paths(project):
    (project / "fix.py").write_text("x = 1\n")
    (project / "other.py").write_text("y = 2\n")
    sha = loop_git.commit("fix: x", ["fix.py"], project=project)
    assert sha == git(["rev-parse", "HEAD"], project).stdout.strip()
    assert git(["show", "--name-only", "--format=", "HEAD"], project).stdout.split() == ["fix.py"]
    assert "?? other.py" in git(["status", "--porcelain"], project).stdout


def test_commit_with_nothing_changed_returns_none(project):
    assert loop_git.commit("nothing", ["README.md"], project=project) is None


def test_commit_off_the_loop_branch_is_refused(project):
    git(["switch", "-q", "main"], project)
    (project / "fix.py").write_text("x = 1\n")
    before = git(["rev-parse", "HEAD"], project).stdout
    with pytest.raises(UserError, match="not on the loop branch"):
        loop_git.commit("fix: x", ["fix.py"], project=project)
    assert git(["rev-parse", "HEAD"], project).stdout == before


def test_push_sends_the_loop_branch_to_the_bare_remote(project, tmp_path):
    (project / "fix.py").write_text("x = 1\n")
    sha = loop_git.commit("fix: x", ["fix.py"], project=project)
    assert loop_git.push(project=project) == f"origin/{LOOP_BRANCH}"
    remote_head = git(["rev-parse", LOOP_BRANCH], tmp_path / "remote.git").stdout.strip()
    assert remote_head == sha


def test_push_off_the_loop_branch_is_refused(project):
    git(["switch", "-q", "main"], project)
    with pytest.raises(UserError, match="not on the loop branch"):
        loop_git.push(project=project)


@pytest.mark.parametrize(
    "args",
    [
        ["push", "-f", "origin", LOOP_BRANCH],
        ["push", "--force", "origin", LOOP_BRANCH],
        ["push", "--force-with-lease", "origin"],
        ["push", "-uf", "origin", LOOP_BRANCH],
        ["push", "origin", f"+HEAD:{LOOP_BRANCH}"],
        ["checkout", "main"],
        ["switch", "main"],
        ["reset", "--hard", "HEAD~1"],
    ],
)
def test_force_push_and_branch_switches_are_refused_before_git_runs(project, args):
    with pytest.raises(UserError, match="refused"):
        loop_git.run_git(args, project)
    assert git(["branch", "--show-current"], project).stdout.strip() == LOOP_BRANCH


def test_push_cli_has_no_force_option(project):
    with pytest.raises(SystemExit) as exc:
        loop_git_cli.main(["--project", str(project), "push", "--force"])
    assert exc.value.code == 2


def test_rejected_push_stops_with_the_rebase_fix(project, tmp_path):
    # someone else pushed to the loop branch: our non-forced push is rejected, and says so
    other = tmp_path / "other"
    git(["clone", "-q", "-b", LOOP_BRANCH, str(tmp_path / "remote.git"), str(other)], tmp_path)
    (other / "theirs.txt").write_text("theirs\n")
    git(["add", "theirs.txt"], other)
    git(["commit", "-q", "-m", "theirs"], other)
    git(["push", "-q", "origin", LOOP_BRANCH], other)
    (project / "ours.txt").write_text("ours\n")
    loop_git.commit("ours", ["ours.txt"], project=project)
    with pytest.raises(loop_git.PushFailed, match="git pull --rebase") as exc:
        loop_git.push(project=project)
    assert "HALT" in str(exc.value)
    # the remote still has their commit: nothing was forced
    log = git(["log", "--format=%s", LOOP_BRANCH], tmp_path / "remote.git").stdout.split()
    assert log[0] == "theirs"


def test_push_failure_via_cli_exits_non_zero_with_one_line(project, capsys):
    git(["remote", "set-url", "origin", str(project / "no-such-remote.git")], project)
    assert run_main(loop_git_cli.main, ["--project", str(project), "push"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "push of" in err[0]


def test_revert_undoes_a_fix_commit(project):
    (project / "fix.py").write_text("x = 1\n")
    sha = loop_git.commit("fix: x", ["fix.py"], project=project)
    loop_git.revert(sha, project=project)
    assert not (project / "fix.py").exists()
    assert git(["log", "-1", "--format=%s"], project).stdout.startswith("Revert")


def test_commit_state_includes_the_loop_files(project, capsys):
    (project / "history_max_effort.md").write_text("# h\n")
    (project / ".max_effort_round").write_text("1\n")
    assert loop_git_cli.main(["--project", str(project), "commit", "-m", "round v1", "--state"]) == 0
    files = git(["show", "--name-only", "--format=", "HEAD"], project).stdout.split()
    assert sorted(files) == [".max_effort_round", "history_max_effort.md"]


def test_a_project_copy_of_memory_ref_is_one_target_however_its_path_is_spelled(tmp_path):
    import shutil

    project = make_loop_project(tmp_path, loop={"target": "memory_system"})
    shutil.copytree(REPO_PLUGINS / "memory_ref", project / "memory_system")
    for spelling in ("memory_system", "./memory_system/", str(project / "memory_system"),
                     str(project / "memory_system" / "__init__.py")):
        assert loop_rules.check_loop_run(GOOD._replace(target=spelling), project) == [], spelling
    problems = loop_rules.check_loop_run(GOOD._replace(target="memory-ref"), project)
    assert problems == ["target is memory-ref, the loop configuration says memory_system"]
    assert not loop_rules.same_target("memory_system", "other_system", project)


def test_the_generation_driver_loads_a_project_copy_of_memory_ref_by_its_folder(tmp_path, monkeypatch):
    import shutil

    from lme.targets import generation_driver

    shutil.copytree(REPO_PLUGINS / "memory_ref", tmp_path / "memory_system")
    monkeypatch.chdir(tmp_path)
    assert generation_driver.target_path("memory_system") == str((tmp_path / "memory_system" / "__init__.py"))
    module = generation_driver.load_target("memory_system")
    assert callable(module.generate) and generation_driver.target_name("memory_system") == "memory_system"
    assert generation_driver.describe_target("memory_system", {})["symbolic_bypass"] is True


def test_target_command_prints_the_count_that_ends_the_loop(capsys):
    assert run_main(loop_guard.main, ["target", "--n-total", "500"]) == 0
    assert capsys.readouterr().out.startswith("475 of 500 strict correct")
    assert run_main(loop_guard.main, ["target", "--n-total", "0"]) == 2


def test_parallel_confirm_below_the_target_says_so_and_changes_nothing(tmp_path):
    import subprocess

    from loop_testing import item_ids, write_run

    project = make_loop_project(tmp_path)
    types = item_ids(10)
    write_run(project, "longmemeval-iter", types, {q: i < 5 for i, q in enumerate(types)})
    script = REPO_PLUGINS.parent / "scripts" / "parallel_longmemeval.sh"
    done = subprocess.run(["bash", str(script), "8", "133", "10", "--confirm"], cwd=project, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "below the target: no confirmation yet; go on with step 4"
    assert not (project / ".longmemeval-benchmarks" / "confirmation.json").exists()
    extra = subprocess.run(["bash", str(script), "8", "133", "10", "--confirm", "--no-cache"], cwd=project,
                           capture_output=True, text=True, timeout=60)
    assert extra.returncode == 2 and "--confirm takes no other argument" in extra.stderr


def test_a_loop_run_is_refused_when_its_command_did_not_hand_it_the_loops_rules():
    """The run stage never imports the loop (the rules live in lme/loop/rules.py): the command hands the check
    over, and a ``--loop`` run without it fails closed."""
    from types import SimpleNamespace

    from lme.core.errors import UserError
    from lme.run import state as run_state

    with pytest.raises(UserError, match="the loop's rules were not handed to this run"):
        run_state.loop_guard_check(SimpleNamespace(), 500, None)
    seen = []
    run_state.loop_guard_check("settings", 500, lambda s, n: seen.append((s, n)) or [])
    assert seen == [("settings", 500)]  # the dataset's size, whatever the run's item set


def test_a_runs_settings_become_the_request_the_rules_read(project):
    """``check_settings`` (the check a ``--loop`` run is handed) reads a run's settings through one request: a
    symbolic flag the target options do not name is on, one they turn off is refused."""
    from types import SimpleNamespace

    settings = SimpleNamespace(project=str(project), max_evals=500, judge_provider="openai",
                               judge_model="gpt-4o-2024-08-06", target_options={"symbolic_bypass": False, "top_k": 5},
                               target="memory-ref", successor_judge=None, successor_only=False)
    assert loop_rules.LoopRunRequest.of_settings(settings, 499) == loop_rules.LoopRunRequest(
        n_total=499, max_items=500, judge_provider="openai", judge_model="gpt-4o-2024-08-06",
        symbolic={"symbolic_resolver": True, "symbolic_temporal": True, "symbolic_bypass": False},
        target="memory-ref")
    assert loop_rules.check_settings(settings, 499) == [
        "--symbolic-bypass is off: the loop keeps all three symbolic layers on"]
