"""The user's checkout of upstream LongMemEval, where the official judge's prompt is read: cloned at the pinned
commit (a killed clone leaves only a temporary folder the next start sweeps), and an existing one verified, never
modified. Standard library only (setup runs before the venv)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import urllib.parse
from pathlib import Path

from lme.core import fileio
from lme.core.errors import UserError
from lme.core.facts import JUDGE_PROMPT_FUNCTION, JUDGE_TEMPLATE_RELPATH, UPSTREAM_COMMIT, UPSTREAM_URL
from lme.core.setup_steps import Report, Runner, output_tail


def check_git_url(url: str) -> None:
    """http(s)/ssh/git/file URLs, scp-like ``user@host:path``, or a local repository path."""
    parsed = urllib.parse.urlparse(url)
    if parsed.scheme in ("http", "https", "ssh", "git", "file") and (parsed.netloc or parsed.scheme == "file"):
        return
    if re.match(r"^[\w.-]+@[\w.-]+:", url) or Path(url).expanduser().exists():
        return
    raise UserError(f"--upstream-url {url!r} is not a git URL or an existing local repository",
                    fix=f"use the default {UPSTREAM_URL} or a path to a clone")


def verify_upstream(root: Path) -> None:
    judge = root / JUDGE_TEMPLATE_RELPATH
    if not judge.is_file():
        raise UserError(f"{root} is not a LongMemEval checkout: {JUDGE_TEMPLATE_RELPATH} is missing",
                        fix=f"clone it with --clone-upstream, or git clone {UPSTREAM_URL} {root}")
    if f"def {JUDGE_PROMPT_FUNCTION}(" not in judge.read_text(encoding="utf-8", errors="replace"):
        raise UserError(f"{judge} does not define {JUDGE_PROMPT_FUNCTION}",
                        fix=f"check out the pinned commit: git -C {root} checkout {UPSTREAM_COMMIT}")


def _git(runner: Runner, *args: str) -> "subprocess.CompletedProcess[str]":
    return runner(["git", *args], capture_output=True, text=True)


def clone_upstream(root: Path, report: Report, *, url: str = UPSTREAM_URL, commit: str = UPSTREAM_COMMIT,
                   offline: bool = False, runner: Runner = subprocess.run) -> None:
    manual = f"git clone {url} {root} && git -C {root} checkout {commit}"
    if root.exists() and any(root.iterdir()):
        verify_upstream(root)
        head = _git(runner, "-C", str(root), "rev-parse", "HEAD")
        at = head.stdout.strip() if head.returncode == 0 else None
        if at and at != commit:
            report.add("upstream", f"{root} is at {at[:7]}, not the pinned {commit[:7]}; left as is "
                                   f"(git -C {root} checkout {commit} to pin it)")
        else:
            report.add("upstream", f"{root} already present and verified; nothing to do")
        return
    have_one = "or, with a checkout you already have, pass --longmemeval-root PATH instead of --clone-upstream"
    if offline:
        raise UserError("--offline: not cloning the upstream LongMemEval repository", fix=f"run: {manual}; {have_one}")
    if shutil.which("git") is None and runner is subprocess.run:
        raise UserError("git is not installed, so the upstream checkout cannot be cloned",
                        fix=f"install git, then run: {manual}; {have_one}")
    fileio.make_dirs(root.parent)
    staging = fileio.make_temp_dir(root)  # a killed clone leaves it for fileio.clean_leftovers
    try:
        print(f"cloning {url} into {root} ...", file=sys.stderr)
        done = _git(runner, "clone", "--quiet", "--no-checkout", url, str(staging))
        if done.returncode != 0:
            raise UserError(f"git clone {url} failed: {output_tail(done.stderr)}",
                            fix=f"when online, run: {manual}; {have_one}")
        done = _git(runner, "-C", str(staging), "-c", "advice.detachedHead=false", "checkout", "--quiet", commit)
        if done.returncode != 0:
            raise UserError(f"the pinned commit {commit} is not in {url}: {output_tail(done.stderr)}",
                            fix=f"run: {manual}")
        verify_upstream(staging)
        if root.exists():
            root.rmdir()
        os.replace(staging, root)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    report.add("upstream", f"cloned {url} at {commit[:7]} into {root}")
