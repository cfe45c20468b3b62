"""Which code a run runs: the files that make the target's answers, hashed once when an invocation starts
(``fingerprint`` -> a ``CodeVersion`` for run-meta, whose ``id`` every row carries), then watched before each item
starts (``CodeWatch``: a stat of each file, no hashing, no git), so an edit during a run stops it instead of mixing
two versions in one run without a trace. Which files each target has, and the record: ``references/SPEC.md``,
"Code provenance". A project's git config runs nothing here (fsmonitor off); ``*.pyc`` never counts (Python
writes them while a run imports the code).
"""

from __future__ import annotations

import os
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from lme.core import fileio
from lme.core.facts import BUILTIN_TARGETS
from lme.core.run_records import CodeVersion
from lme.run.settings import RunSettings
from lme.targets.targets import target_path

PLUGIN_ROOT = Path(__file__).resolve().parents[3]
USER_CODE_TARGETS = ("python", "command")
"""Built-in names whose code is the user's (named by an option), not the plugin's."""
MAX_FILES = 2000
"""At most this many files per folder are fingerprinted (a folder past it is ``capped``)."""
ID_HEX = 16
_SKIP_DIRS = frozenset({"__pycache__", "node_modules"})
_SKIP_SUFFIXES = (".pyc", ".pyo")
_GIT = ("git", "-c", "core.fsmonitor=false")


def _kept(relative: str) -> bool:
    parts = relative.split("/")
    return not (_SKIP_DIRS & set(parts[:-1]) or relative.endswith(_SKIP_SUFFIXES) or parts[-1] == ".DS_Store")


@dataclass
class _Picked:
    """The files gathered so far: resolved path -> the path the record shows, and what was fingerprinted."""

    project: Path
    files: dict[Path, str] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)
    git_paths: list[str] = field(default_factory=list)
    """Project-relative files and folders in the project's git work tree (for its ``git`` block)."""
    capped: bool = False
    notes: list[str] = field(default_factory=list)
    folders: set[Path] = field(default_factory=set)
    in_git: bool | None = None

    def shown(self, path: Path) -> str:
        if self.inside(path):
            return path.relative_to(self.project).as_posix()
        if PLUGIN_ROOT in path.parents:
            return path.relative_to(PLUGIN_ROOT).as_posix()
        return str(path)

    def inside(self, path: Path) -> bool:
        return self.project in path.parents

    def git(self) -> bool:
        """The project is in a git work tree (asked once)."""
        if self.in_git is None:
            self.in_git = _run_git(self.project, "rev-parse", "--show-toplevel") is not None
        return self.in_git

    def add_file(self, path: Path, what: str | None) -> None:
        """``what``: the phrase naming it in ``sources`` (None: named there already, with its folder)."""
        path = path.resolve()
        if path in self.files or not path.is_file():
            return
        self.files[path] = self.shown(path)
        if what is not None:
            self.sources.append(f"{what} {self.shown(path)}")
        if self.inside(path) and self.git():
            self.git_paths.append(self.shown(path))

    def add_folder(self, folder: Path, what: str) -> None:
        folder = folder.resolve()
        if not folder.is_dir() or folder == self.project or folder in self.folders:
            return
        self.folders.add(folder)
        listed, via_git = _folder_files(folder, self.project if self.inside(folder) and self.git() else None)
        if len(listed) > MAX_FILES:
            self.capped = True
            self.notes.append(f"{self.shown(folder)}/ holds {len(listed)} files: the first {MAX_FILES} are "
                              "fingerprinted")
            listed = listed[:MAX_FILES]
        for path in listed:
            self.files.setdefault(path, self.shown(path))
        self.sources.append(f"{what} {self.shown(folder)}/" + (" (git)" if via_git else ""))
        if via_git:
            self.git_paths.append(self.shown(folder) + "/")


def _run_git(project: Path, *args: str) -> str | None:
    try:
        out = subprocess.run([*_GIT, "-C", str(project), *args], capture_output=True, text=True, timeout=30,
                             check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def _folder_files(folder: Path, git_project: Path | None) -> tuple[list[Path], bool]:
    """The folder's files, sorted, and whether git listed them (``git_project``: the project, in a git work tree;
    see the module docstring)."""
    if git_project is not None:
        relative = folder.relative_to(git_project).as_posix()
        listed = _run_git(git_project, "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", relative)
        if listed is not None:
            names = sorted({n for n in listed.split("\0") if n and _kept(n)})
            return [p for p in (git_project / n for n in names) if p.is_file() and not p.is_symlink()], True
    found: list[Path] = []
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS)
        for name in sorted(names):
            path = Path(root) / name
            if _kept(path.relative_to(folder).as_posix()) and path.is_file() and not path.is_symlink():
                found.append(path)
    return found, False


def _command_words(options: Mapping[str, Any]) -> list[str]:
    raw = options.get("command")
    if isinstance(raw, str):
        try:
            return shlex.split(raw)
        except ValueError:
            return []
    return [w for w in raw if isinstance(w, str)] if isinstance(raw, (list, tuple)) else []


def _pick_command(picked: _Picked, options: Mapping[str, Any]) -> None:
    cwd = Path(str(options.get("cwd"))).expanduser() if options.get("cwd") else Path.cwd()
    cwd = cwd if cwd.is_absolute() else Path.cwd() / cwd
    for word in _command_words(options):
        candidate = Path(word).expanduser()
        candidate = (candidate if candidate.is_absolute() else cwd / candidate).resolve()
        if picked.inside(candidate) and candidate.is_file():
            picked.add_file(candidate, "command file")
    if options.get("cwd") and picked.inside(cwd.resolve()):
        picked.add_folder(cwd, "command cwd")


def _pick_target(picked: _Picked, settings: RunSettings, declared: Sequence[str]) -> None:
    target, options = settings.target, settings.target_options
    if target in BUILTIN_TARGETS and target not in USER_CODE_TARGETS:
        path = Path(target_path(target))
        package = path.name == "__init__.py"
        for file in sorted(path.parent.rglob("*.py")) if package else [path]:
            picked.add_file(file, None)
        picked.sources.append(f"built-in target {target} ({picked.shown(path.parent) + '/' if package else picked.shown(path)})")
        return
    if target == "python":
        if options.get("path"):
            picked.add_file(Path(str(options["path"])).expanduser(), "python file")
    elif target == "command":
        _pick_command(picked, options)
    else:
        path = Path(target_path(target))
        if path.name == "__init__.py":
            picked.add_folder(path.parent, "target folder")
        else:
            picked.add_file(path, "target file")
    for relative in declared:
        path = picked.project / relative
        if path.is_dir():
            picked.add_folder(path, "declared folder")
        elif path.is_file():
            picked.add_file(path, "declared file")


def _git_block(picked: _Picked) -> dict[str, Any] | None:
    """HEAD and the fingerprinted project files that differ from it or are untracked (None outside git)."""
    if not picked.git_paths:
        return None
    project = picked.project
    head = _run_git(project, "rev-parse", "--verify", "-q", "HEAD")
    commit = head.strip() or None if head else None
    untracked = _run_git(project, "ls-files", "-z", "--others", "--exclude-standard", "--", *picked.git_paths) or ""
    changed = _run_git(project, "diff", "--name-only", "--relative", "-z", "HEAD", "--", *picked.git_paths) \
        if commit else None
    names = {n for n in (untracked + (changed or "")).split("\0") if n}
    in_project = sorted(shown for path, shown in picked.files.items() if picked.inside(path))
    return {"commit": commit, "uncommitted": in_project if commit is None else [n for n in in_project if n in names]}


class CodeWatch:
    """Each fingerprinted file's (inode, size, mtime) when it was hashed; ``changed`` says which one differs now."""

    def __init__(self, stamps: Mapping[Path, tuple[int, int, int]], shown: Mapping[Path, str]) -> None:
        self._stamps = dict(stamps)
        self._shown = dict(shown)

    def changed(self) -> str | None:
        """``memsys.py changed`` (or ``was removed``) for the first file that is not as it was hashed; None when
        none is. Stat only: called before each item starts."""
        for path, stamp in self._stamps.items():
            try:
                st = os.stat(path)
            except OSError:
                return f"{self._shown[path]} was removed"
            if (st.st_ino, st.st_size, st.st_mtime_ns) != stamp:
                return f"{self._shown[path]} changed"
        return None


def fingerprint(settings: RunSettings, declared: Sequence[str] = ()) -> tuple[CodeVersion, CodeWatch]:
    """The code the run's target runs now (see the module docstring) and the watch that sees it change.
    ``declared``: project-relative folders or files the user declared as their memory system's code."""
    picked = _Picked(Path(settings.project).resolve())
    _pick_target(picked, settings, declared)
    stamps: dict[Path, tuple[int, int, int]] = {}
    hashes: dict[str, str] = {}
    for path, shown in sorted(picked.files.items(), key=lambda kv: kv[1]):
        try:
            st = os.stat(path)  # before the bytes are read: an edit while hashing is seen by the first check
            hashes[shown] = fileio.sha256_file(path, follow_symlinks=True)
        except OSError:
            continue
        stamps[path] = (st.st_ino, st.st_size, st.st_mtime_ns)
    digest = CodeVersion.digest(hashes)
    note = "; ".join(picked.notes) or None
    if not hashes:
        note = _nothing_found(settings)
    version = CodeVersion(id=digest[:ID_HEX] if digest else None, files=hashes,
                          sources=tuple(picked.sources), git=_git_block(picked), capped=picked.capped, note=note)
    return version, CodeWatch(stamps, {p: s for p, s in picked.files.items() if p in stamps})


def _nothing_found(settings: RunSettings) -> str:
    if settings.target == "command":
        return ("the command names no file inside the project and has no cwd folder there: its code is not "
                "fingerprinted; name your script in the command, or declare your code's folders in loop.fix_paths")
    return "no file of the target's code could be read"
