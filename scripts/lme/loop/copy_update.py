"""``loop_target.py update-copy``: merge today's memory-ref into the user's copy (``memory_system/``), keeping the
user's changes, by git's own three-way merge.

The base is the copy as first made: the loop branch's commit ``loop target: <dest>, a copy of memory-ref`` (what
``use-copy`` commits, and what the loop's skill had users commit by hand before it), or the side commit of the last
``update-copy``. A side commit on top of that base replaces ``<dest>/`` with today's memory-ref (and its record);
``git merge`` of it into the loop branch then takes the user's changes (base -> HEAD) and memory-ref's (base ->
side) together, leaving conflict markers where both touched the same lines. No base in the history: today's
memory-ref goes on a branch of its own for the user to diff, nothing is merged."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from lme.core.errors import UserError
from lme.loop import branch
from lme.loop import rules
from lme.loop import target
from lme.run import provenance
from lme.targets import api
from lme.targets.identity import is_reference

EXIT_CONFLICT = 3
"""update-copy left the merge in progress with conflicts: the user resolves them (``git add`` + ``git commit``)
or backs out (``git merge --abort``)."""
EXIT_SIDE_BRANCH = 4
"""No base found: today's memory-ref is on a branch to diff; nothing was merged."""
SIDE_MESSAGE = "memory-ref {version} for {dest}/ (target API {api}): update-copy's side of the merge"
MERGE_MESSAGE = "loop target: {dest}/ updated to memory-ref {version} (target API {api}), your changes kept"
SIDE_BRANCH = "memory-ref-{version}"


@dataclass(frozen=True)
class Outcome:
    """What update-copy did: one line for the user and the exit status (0, EXIT_CONFLICT or EXIT_SIDE_BRANCH)."""

    line: str
    status: int = 0


def update_copy(project: Path, dest: str = target.DEFAULT_DEST) -> Outcome:
    """Merge today's memory-ref into the copy ``dest``; refuses (UserError, nothing changed) without a config,
    off the loop branch, with a merge in progress or uncommitted changes, or when ``dest`` is no committed copy."""
    project = Path(project).resolve()
    dest = target.dest_name(dest)
    rules.read_project_config(project, required=True)
    branch.assert_on_loop_branch(project=project)
    _refuse_unready(project, dest)
    version, base = provenance.plugin_version(), _base_commit(project, dest)
    names = {"version": version, "dest": dest, "api": api.version_text(api.TARGET_API)}
    tree = _tree_with_today(project, dest, base or "HEAD")
    if base is None:
        side = _commit_tree(project, tree, "HEAD", SIDE_MESSAGE.format(**names))
        side_branch = SIDE_BRANCH.format(version=version)
        branch.run_git(["update-ref", f"refs/heads/{side_branch}", side], project)
        return Outcome(f"no commit of the loop branch holds {dest}/ as first copied ('{target.COMMIT_MESSAGE.format(dest=dest)}'), "
                       f"so nothing was merged: today's memory-ref is on the branch {side_branch}; see what differs with "
                       f"git diff HEAD {side_branch} -- {dest}/ and take what you want by hand", EXIT_SIDE_BRANCH)
    if tree == _rev(project, f"{base}^{{tree}}"):
        return Outcome(f"{dest}/ is up to date: it was copied from this memory-ref ({version}, target API "
                       f"{names['api']}); nothing to merge")
    side = _commit_tree(project, tree, base, SIDE_MESSAGE.format(**names))
    merged = branch.run_git(["merge", "--no-ff", "--no-edit", "-m", MERGE_MESSAGE.format(**names), side],
                            project, check=False)
    if merged.returncode == 0:
        return Outcome(f"merged memory-ref {version} (target API {names['api']}) into {dest}/, your changes kept: "
                       f"commit {_rev(project, 'HEAD')[:12]}")
    conflicted = branch.run_git(["diff", "--name-only", "--diff-filter=U"], project).stdout.split()
    if not conflicted:  # the merge failed for another reason: git's words, nothing left in progress
        branch.run_git(["merge", "--abort"], project, check=False)
        raise UserError(f"git merge of today's memory-ref into {dest}/ failed: {' '.join(merged.stderr.split())}")
    return Outcome(f"merge of memory-ref {version} into {dest}/ stopped on conflicts in {', '.join(conflicted)}: "
                   "fix the marked lines, then git add them and git commit; or back out with git merge --abort",
                   EXIT_CONFLICT)


def _refuse_unready(project: Path, dest: str) -> None:
    if _rev(project, "MERGE_HEAD", check=False):
        raise UserError("a git merge is in progress in the project",
                        fix="finish it (git add, git commit) or back out with git merge --abort, then run update-copy again")
    folder = project / dest
    tracked = branch.run_git(["ls-files", "--", f"{dest}/__init__.py"], project).stdout.strip()
    if not tracked or not is_reference(str(folder), project):
        raise UserError(f"{dest}/ is no committed copy of memory-ref",
                        fix="make one with loop_target.py use-copy, or pass --dest with your copy's folder")
    dirty = [line for line in branch.run_git(["status", "--porcelain", "--", dest], project).stdout.splitlines()
             if "__pycache__/" not in line]
    if dirty or branch.run_git(["diff", "--cached", "--quiet"], project, check=False).returncode:
        raise UserError(f"{dest}/ has uncommitted changes (or changes are staged)",
                        fix="commit them (loop_git.py commit) or set them aside, then run update-copy again")


def _base_commit(project: Path, dest: str) -> str | None:
    """The newest commit of HEAD's history that holds ``dest`` as memory-ref made it: use-copy's commit or an
    update-copy side commit (found by their messages, which name ``dest``)."""
    first = target.COMMIT_MESSAGE.format(dest=dest)
    side_start, side_end = SIDE_MESSAGE.split("{version}")[0], f" for {dest}/ (target API "
    log = branch.run_git(["log", "--format=%H%x09%s", "HEAD"], project).stdout.splitlines()
    for line in log:
        sha, _, subject = line.partition("\t")
        if subject == first or (subject.startswith(side_start) and side_end in subject
                                and subject.endswith("update-copy's side of the merge")):
            return sha
    return None


def _tree_with_today(project: Path, dest: str, base: str) -> str:
    """The tree of ``base`` with ``dest/`` replaced by today's memory-ref and its record, written to git's object
    store through a temporary index (the project's index and work tree are not touched)."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {"GIT_INDEX_FILE": os.path.join(tmp, "index")}
        branch.run_git(["read-tree", base], project, env=env)
        branch.run_git(["rm", "-r", "-f", "--cached", "--quiet", "--ignore-unmatch", "--", dest], project, env=env)
        record = Path(tmp) / api.RECORD_FILE
        record.write_text(target.copy_record(dest), encoding="utf-8")
        files = [(p, p.relative_to(target.SOURCE).as_posix()) for p in sorted(target.SOURCE.rglob("*"))
                 if p.is_file() and "__pycache__" not in p.parts]
        for path, name in [*files, (record, api.RECORD_FILE)]:
            blob = branch.run_git(["hash-object", "-w", "--", str(path)], project).stdout.strip()
            mode = "100755" if os.access(path, os.X_OK) else "100644"
            branch.run_git(["update-index", "--add", "--cacheinfo", f"{mode},{blob},{dest}/{name}"], project,
                           env=env)
        return branch.run_git(["write-tree"], project, env=env).stdout.strip()


def _commit_tree(project: Path, tree: str, parent: str, message: str) -> str:
    return branch.run_git(["commit-tree", tree, "-p", _rev(project, parent), "-m", message], project).stdout.strip()


def _rev(project: Path, name: str, *, check: bool = True) -> str:
    proc = branch.run_git(["rev-parse", "--verify", "--quiet", name], project, check=check)
    return proc.stdout.strip() if proc.returncode == 0 else ""
