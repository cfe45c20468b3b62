"""The tests' own layout: each test file in the folder of the stage it tests, so a reader finds it there.

tests/<stage>/ for each stage of scripts/lme/, plus the folders for what is not a stage of the library; the shared
helpers (factories.py, fake_llm_server.py, ...) sit in tests/ itself (tests/conftest.py puts every folder on
sys.path). pytest imports a test file by its bare name, so two files of one name in two folders would clash."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
STAGES = {p.name for p in (TESTS.parent / "scripts" / "lme").iterdir() if (p / "__init__.py").is_file()}
NOT_STAGES = {
    "plugins": "the memory systems under test (plugins/)",
    "claude_code": "the plugin as the real Claude Code CLI loads and runs it",
    "docs": "the documented blocks, run as written",
    "fakes": "the fake servers the other tests run against",
    "structure": "the import structure and this layout",
    "upgrade": "projects older versions made (tests/fixtures/upgrade/), carried on by today's",
}
NOT_TESTS = {"benchmarks", "artifacts", "fixtures", "__pycache__"}


def all_test_files() -> list[Path]:
    return [p for p in TESTS.rglob("test_*.py") if "benchmarks" not in p.relative_to(TESTS).parts]


def test_no_test_file_is_left_in_the_flat_folder():
    assert sorted(p.name for p in TESTS.glob("test_*.py")) == [], "move it to the folder of the stage it tests"


def test_every_folder_of_tests_is_a_stage_or_says_what_it_holds():
    folders = {p.name for p in TESTS.iterdir() if p.is_dir() and not p.name.startswith(".")} - NOT_TESTS
    assert folders - STAGES - set(NOT_STAGES) == set()
    assert all(any((TESTS / name).glob("test_*.py")) for name in folders), "no empty folder"


def test_test_file_names_are_unique_across_folders():
    twice = [name for name, n in Counter(p.name for p in all_test_files()).items() if n > 1]
    assert twice == []
