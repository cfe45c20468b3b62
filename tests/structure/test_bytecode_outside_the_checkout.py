"""No test run leaves ``__pycache__`` in the folders the plugin install copies (scripts/, plugins/): the suite keeps
bytecode under PYTHONPYCACHEPREFIX (tests/conftest.py), also for commands started with a hand-built environment
(tests/command_env.py), and the run fails when a new ``__pycache__`` appears there (conftest's sessionfinish)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from command_env import bytecode_flags, bytecode_folders, clean_env

REPO = Path(__file__).resolve().parents[2]


def test_a_command_started_with_a_clean_environment_keeps_its_bytecode_outside_the_checkout():
    env = clean_env(PATH="/usr/bin:/bin", HOME="/nonexistent")
    assert set(env) == {"PATH", "HOME", "PYTHONPYCACHEPREFIX"}
    done = subprocess.run([sys.executable, "-c", "import sys; print(sys.pycache_prefix)"], env=env,
                          capture_output=True, text=True, check=True)
    prefix = Path(done.stdout.strip())
    assert prefix == Path(os.environ["PYTHONPYCACHEPREFIX"]) and REPO not in prefix.parents


def test_a_python_that_ignores_the_environment_keeps_its_bytecode_outside_the_checkout_too():
    show = "import sys; print(sys.pycache_prefix)"
    done = subprocess.run([sys.executable, *bytecode_flags(), "-S", "-E", "-c", show], capture_output=True, text=True,
                          check=True)
    assert Path(done.stdout.strip()) == Path(os.environ["PYTHONPYCACHEPREFIX"])


def test_the_runs_check_finds_a_pycache_at_any_depth_of_the_shipped_folders(tmp_path):
    scripts, plugins = tmp_path / "scripts", tmp_path / "plugins"
    (scripts / "lme" / "core").mkdir(parents=True)
    (plugins / "memory_ref").mkdir(parents=True)
    assert bytecode_folders((scripts, plugins)) == set()
    planted = {scripts / "lme" / "core" / "__pycache__", plugins / "__pycache__"}
    for folder in planted:
        folder.mkdir()
    assert bytecode_folders((scripts, plugins)) == planted
