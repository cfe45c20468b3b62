"""Which files a run fingerprints as its target's code, by target (the rule in ``lme/run/code_version.py`` and
references/SPEC.md, "Code provenance"), and the stat watch that sees one change."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from lme.run import code_version
from lme.run.settings import RunSettings

REPO = Path(__file__).resolve().parents[2]
MEMSYS = 'def generate(item, ctx):\n    return {"hypothesis": "not enough information"}\n'


def settings(project: Path, target: str, **options) -> RunSettings:
    return RunSettings(
        project=str(project), dataset_path=str(project / "d.json"), variant="_s", runs_dir=str(project / "runs"),
        longmemeval_root=None, target=target, target_provider="offline", target_model="extractive",
        target_options=options, judge_provider="offline", judge_model="offline-containment-v1", max_evals=5,
        concurrency=1, cache_enabled=False, cache_read=False, cache_dir=str(project / "cache"), error_threshold=0,
        timeout_s=5, max_attempts=1)


def git(project: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(project), *args], check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t"})


def test_a_python_target_is_the_users_file_and_an_edit_changes_its_id(tmp_path):
    (tmp_path / "memsys.py").write_text(MEMSYS)
    version, watch = code_version.fingerprint(settings(tmp_path, "python", path=str(tmp_path / "memsys.py")))
    assert list(version.files) == ["memsys.py"] and version.sources == ("python file memsys.py",)
    assert version.id and len(version.id) == 16 and watch.changed() is None
    (tmp_path / "memsys.py").write_text(MEMSYS + "# tuned\n")
    assert watch.changed() == "memsys.py changed"
    again, _ = code_version.fingerprint(settings(tmp_path, "python", path=str(tmp_path / "memsys.py")))
    assert again.id != version.id and version.changes_to(again).describe() == "changed memsys.py"
    (tmp_path / "memsys.py").unlink()
    assert watch.changed() == "memsys.py was removed"


def test_a_file_outside_the_project_is_named_by_its_path(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "memsys.py").write_text(MEMSYS)
    project = tmp_path / "p"
    project.mkdir()
    version, _ = code_version.fingerprint(settings(project, "python", path=str(tmp_path / "elsewhere" / "memsys.py")))
    assert list(version.files) == [str((tmp_path / "elsewhere" / "memsys.py").resolve())] and version.git is None


def test_a_command_target_is_the_project_files_its_command_names_and_its_cwd_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # where a run starts the command (the adapter's default cwd)
    tool = tmp_path / "tool"
    tool.mkdir()
    (tool / "cmd.py").write_text(MEMSYS)
    (tool / "helpers.py").write_text("X = 1\n")
    (tool / "__pycache__").mkdir()
    (tool / "__pycache__" / "helpers.cpython-311.pyc").write_bytes(b"\0")
    (tmp_path / "run.py").write_text(MEMSYS)
    plain, _ = code_version.fingerprint(settings(tmp_path, "command", command=f"{sys.executable} run.py --fast"))
    assert list(plain.files) == ["run.py"]  # the interpreter lives outside the project: not the user's code
    with_cwd, _ = code_version.fingerprint(settings(tmp_path, "command", command=[sys.executable, "cmd.py"], cwd=str(tool)))
    assert sorted(with_cwd.files) == ["tool/cmd.py", "tool/helpers.py"]  # never __pycache__
    assert with_cwd.sources == ("command file tool/cmd.py", "command cwd tool/")
    nothing, watch = code_version.fingerprint(settings(tmp_path, "command", command="memsys-binary --serve"))
    assert nothing.id is None and "not fingerprinted" in nothing.note and watch.changed() is None


def test_a_project_copy_in_git_lists_tracked_and_untracked_files_and_names_the_uncommitted(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("no git")
    project = tmp_path / "p"
    shutil.copytree(REPO / "plugins" / "memory_ref", project / "memory_system",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (project / ".gitignore").write_text("*.log\n")
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "copy")
    (project / "memory_system" / "notes.log").write_text("ignored\n")
    (project / "memory_system" / "__pycache__").mkdir()
    (project / "memory_system" / "__pycache__" / "reader.cpython-311.pyc").write_bytes(b"\0")
    clean, _ = code_version.fingerprint(settings(project, str(project / "memory_system")))
    assert clean.sources == ("target folder memory_system/ (git)",)
    assert "memory_system/reader.py" in clean.files and not any("notes.log" in p or "pycache" in p for p in clean.files)
    assert clean.git["commit"] and clean.git["uncommitted"] == []
    with open(project / "memory_system" / "reader.py", "a") as fh:
        fh.write("# a fix\n")
    (project / "memory_system" / "extra.py").write_text("Y = 2\n")
    edited, _ = code_version.fingerprint(settings(project, str(project / "memory_system")))
    assert edited.git["uncommitted"] == ["memory_system/extra.py", "memory_system/reader.py"]
    assert clean.changes_to(edited).describe() == "changed memory_system/reader.py; added memory_system/extra.py"


def test_declared_folders_count_for_the_users_targets_but_not_the_plugins_own(tmp_path):
    (tmp_path / "memsys.py").write_text(MEMSYS)
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "store.py").write_text("Z = 3\n")
    user, _ = code_version.fingerprint(settings(tmp_path, "python", path=str(tmp_path / "memsys.py")), ["lib/", ""])
    assert sorted(user.files) == ["lib/store.py", "memsys.py"]  # "" (the whole project) is never hashed whole
    builtin, _ = code_version.fingerprint(settings(tmp_path, "full-context"), ["lib/"])
    assert list(builtin.files) == ["plugins/full_context.py"] and builtin.sources == (
        "built-in target full-context (plugins/full_context.py)",)
    memory_ref, _ = code_version.fingerprint(settings(tmp_path, "memory-ref"))
    assert "plugins/memory_ref/reader.py" in memory_ref.files and len(memory_ref.files) > 5


def test_a_folder_past_the_cap_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(code_version, "MAX_FILES", 3)
    (tmp_path / "sys").mkdir()
    for i in range(5):
        (tmp_path / "sys" / f"m{i}.py").write_text(f"N = {i}\n")
    version, _ = code_version.fingerprint(replace(settings(tmp_path, str(tmp_path / "sys" / "m0.py"))), ["sys/"])
    assert version.capped and len(version.files) == 3 and "holds 5 files" in version.note
