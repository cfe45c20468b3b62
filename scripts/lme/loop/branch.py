"""Git for the iteration loop: commit, push and revert, only on the loop branch, never forced.

The command (its parser, ``main()`` and help text) is ``lme/cli/loop_git.py``."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Mapping, Sequence

from lme.core.errors import UserError
from lme.core.facts import (
    CONFIG_FILE,
    CONFIRMATION_FILE,
    DECISIONS_FILE,
    HISTORY_FILE,
    HISTORY_RECORDS,
    JUDGE_DAY_FILE,
    NOISE_FLOOR_FILE,
    RETEST_FILE,
    PROPOSAL_FILE,
    ROUND_FILE,
    SNAPSHOTS_DIR,
    STATE_DIR,
    TRIGGER_SET_FILE,
    VENV_DIR,
)
from lme.loop.rules import assert_on_loop_branch, loop_config

FORBIDDEN_ARGS = ("-f", "--force", "--force-with-lease", "--force-if-includes", "--mirror", "--delete", "-d")
FORBIDDEN_COMMANDS = ("checkout", "switch", "reset", "rebase", "stash", "branch", "filter-branch")
"""Commands that move HEAD to another branch or rewrite history; the loop never runs them."""

STATE_PATHS = (HISTORY_FILE, ROUND_FILE, DECISIONS_FILE, CONFIRMATION_FILE, SNAPSHOTS_DIR, TRIGGER_SET_FILE,
               PROPOSAL_FILE, RETEST_FILE, NOISE_FLOOR_FILE, HISTORY_RECORDS, JUDGE_DAY_FILE)
CONFIG_PATH = f"{STATE_DIR}/{CONFIG_FILE}"
SNAPSHOT_COMMITTED = ("labels.jsonl", "snapshot.json")
"""What the loop commits of a snapshot: what the next round needs (ids, labels, hashes), never the rows' text;
the whole snapshot stays on disk for a revert."""
_SECRET = re.compile(r"(?i)(api[_-]?key|secret|token|password)\W*[\"']?\s*[:=]|\bsk-[A-Za-z0-9_-]{8,}")
NEVER_A_FIX = (f"{STATE_DIR}/", f"{VENV_DIR}/", f"{ROUND_FILE}.lock", ".claude/")
"""Prefixes ``--changed`` leaves out besides the state paths: runs, caches, config, the venv, and Claude Code's
project files (the permission rules and short command names setup may write there are not a fix)."""


class PushFailed(UserError):
    """The push was rejected or could not reach the remote: the loop halts here."""


def refuse_dangerous(args: Sequence[str]) -> None:
    """Raise UserError for force pushes, branch switches and history rewrites."""
    if not args:
        raise UserError("empty git command")
    command = args[0]
    if command in FORBIDDEN_COMMANDS:
        raise UserError(f"refused: 'git {command}' would leave or rewrite the loop branch", fix="the loop never does this")
    if command == "push":
        for arg in args[1:]:
            if arg in FORBIDDEN_ARGS or arg.startswith("--force") or (arg.startswith("-") and not arg.startswith("--") and "f" in arg[1:]):
                raise UserError(f"refused: force push ('{arg}')", fix="never force-push the loop branch; git pull --rebase, then push")
            if arg.startswith("+") or ":+" in arg:
                raise UserError(f"refused: forced refspec '{arg}'", fix="never force-push the loop branch")


def run_git(args: Sequence[str], project: Path, *, check: bool = True,
            env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run one guarded git command in ``project`` (``env``: variables added to the environment, e.g. a temporary
    ``GIT_INDEX_FILE``); a failure with ``check`` raises UserError with git's words."""
    refuse_dangerous(args)
    proc = subprocess.run(["git", *args], cwd=project, capture_output=True, text=True, check=False,
                          env={**os.environ, **env} if env else None)
    if check and proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().replace("\n", " | ")
        raise UserError(f"git {' '.join(args)} failed in {project}: {detail}")
    return proc


def state_paths(project: Path) -> list[str]:
    """The loop's own state files that exist now (what ``commit --state`` adds): the round files, each snapshot's
    labels and record (not its rows), and the project's config (refused if it holds anything like a key)."""
    project = Path(project)
    paths = [p for p in STATE_PATHS if p != SNAPSHOTS_DIR and (project / p).exists()]
    snapshots = project / SNAPSHOTS_DIR
    if snapshots.is_dir():
        paths += [f"{SNAPSHOTS_DIR}/{d.name}/{name}" for d in sorted(snapshots.iterdir())
                  if d.is_dir() and not d.name.startswith(".") for name in SNAPSHOT_COMMITTED if (d / name).exists()]
    config = project / CONFIG_PATH
    if config.is_file():
        text = config.read_text(encoding="utf-8", errors="replace")
        if _SECRET.search(text):
            raise UserError(f"{config} looks like it holds an API key: the loop commits it, so it must not",
                            fix="keep keys in the environment (OPENAI_API_KEY, ANTHROPIC_API_KEY), not in the config")
        paths.append(CONFIG_PATH)
    return paths


def changed_paths(project: Path) -> list[str]:
    """Files changed since HEAD (staged or not, deleted too) or new and not ignored, outside the loop's state.

    That is the agent's fix when the work tree holds nothing else; ``commit --changed`` commits exactly these.
    """
    tracked = run_git(["diff", "--relative", "--name-only", "-z", "HEAD", "--"], project).stdout.split("\0")
    new = run_git(["ls-files", "-z", "--others", "--exclude-standard"], project).stdout.split("\0")
    return [p for p in dict.fromkeys([*tracked, *new])
            if p and p not in STATE_PATHS and p != CONFIG_PATH and not p.startswith(NEVER_A_FIX)
            and not any(p.startswith(f"{state}/") for state in STATE_PATHS)]


def head_sha(project: Path) -> str:
    return run_git(["rev-parse", "HEAD"], project).stdout.strip()


def commit(message: str, paths: Sequence[str], *, project: Path | None = None) -> str | None:
    """Returns the new commit's sha, or None if nothing changed. Only the named paths are staged (other changes in
    the tree are left alone); ignored paths are added on purpose: the caller named them."""
    project = Path.cwd() if project is None else Path(project)
    assert_on_loop_branch(project=project)
    if not message.strip():
        raise UserError("commit message is empty", fix="say what the round or fix changed")
    if not paths:
        raise UserError("no paths to commit", fix="name the files, or use --state for the loop's state files")
    missing = [p for p in paths if not (project / p).exists() and not _tracked(project, p)]
    if missing:
        raise UserError(f"cannot commit, no such path: {', '.join(missing)}")
    run_git(["add", "--force", "--", *paths], project)
    staged = run_git(["diff", "--cached", "--quiet", "--", *paths], project, check=False)
    if staged.returncode == 0:
        return None
    run_git(["commit", "--quiet", "-m", message, "--", *paths], project)
    return head_sha(project)


def _tracked(project: Path, path: str) -> bool:
    return run_git(["ls-files", "--error-unmatch", "--", path], project, check=False).returncode == 0


def push(*, project: Path | None = None) -> str:
    """Push the loop branch to the configured remote (never forced). Failure raises PushFailed: halt the loop."""
    project = Path.cwd() if project is None else Path(project)
    cfg = loop_config(project)
    branch = assert_on_loop_branch(cfg["branch"], project=project)
    remote = cfg["remote"]
    proc = run_git(["push", "--porcelain", remote, f"HEAD:refs/heads/{branch}"], project, check=False)
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().replace("\n", " | ")
        raise PushFailed(
            f"push of {branch} to {remote} failed: {detail}",
            fix=f"HALT the loop; inspect the remote, run 'git pull --rebase {remote} {branch}', push again, then resume",
        )
    return f"{remote}/{branch}"


def revert(sha: str, *, project: Path | None = None) -> str:
    """``git revert --no-edit <sha>`` on the loop branch; returns the revert commit's sha. A revert of ``sha``
    already on the branch (a crash after it, before it was recorded) is returned, never made twice."""
    project = Path.cwd() if project is None else Path(project)
    assert_on_loop_branch(project=project)
    full = run_git(["rev-parse", "--verify", f"{sha}^{{commit}}"], project).stdout.strip()
    done = run_git(["log", "-1", "--format=%H", "--fixed-strings", f"--grep=This reverts commit {full}"], project,
                   check=False).stdout.strip()
    if done:
        return done
    proc = run_git(["revert", "--no-edit", sha], project, check=False)
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().replace("\n", " | ")
        raise UserError(
            f"git revert {sha} failed: {detail}",
            fix="resolve the conflict by hand (git status), finish with 'git revert --continue', then push",
        )
    return head_sha(project)
