"""The public target API: one declared, versioned list of names (``lme.targets.api``); the names of each major stay
importable as long as the major does; memory-ref imports nothing else of ``lme``; a user's own system written from
plugins/README.md with public names runs, and one that imports an internal module is refused at the run's start in
one line pointing to the public API (not to update-copy)."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

from lme.cli import run_benchmark
from lme.core.errors import run_main
from lme.targets import api, api_check
from run_project import REPO, make_project, run_dir

FROZEN = {
    1: {"lme.targets": {"ChatRequest", "Completion", "Hypothesis", "LLM", "PublicItem", "PublicSession",
                        "PublicTurn", "TargetContext", "TargetError", "UserError", "load_module", "TARGET_API"},
        "lme.target_kit": {"answer_with_reader", "complete_reader", "build_fitted_request", "reader_settings",
                           "render_history", "sort_by_date", "BM25Index", "tokenize", "query_weights",
                           "connect_cache_db", "cached_keys"}},
}
"""The public names of each major of the target API, frozen: a copy or a system written against major N imports
these. Removing or renaming one needs a new major (and a new entry here); a minor only adds names."""

PUBLIC_SYSTEM = '''
"""A memory system written from plugins/README.md ("The public target API") alone."""
from lme.target_kit import sort_by_date, tokenize
from lme.targets import Hypothesis, PublicItem, TargetContext


def generate(item: PublicItem, ctx: TargetContext) -> Hypothesis:
    asked = set(tokenize(item.question))
    turns = [t.content for s in sort_by_date(item.sessions) for t in s.turns if t.role == "user"]
    best = max(turns, key=lambda text: len(asked & set(tokenize(text))), default="")
    return Hypothesis(hypothesis=best or "I do not have enough information.")
'''
OFFLINE = {"targetProvider": "offline", "targetModel": "mine", "judgeProvider": "offline",
           "judgeModel": "offline-containment-v1"}


def test_the_public_names_of_todays_major_are_the_frozen_ones_or_more():
    major = api.TARGET_API[0]
    assert major in FROZEN, f"target API major {major} has no frozen list of names in this test: add it"
    for module, names in FROZEN[major].items():
        missing = names - set(api.PUBLIC.get(module, ()))
        assert not missing, f"{module} lost {sorted(missing)} within major {major}: bump the major"


def test_every_public_name_is_importable_from_its_face():
    for module, names in api.PUBLIC.items():
        face = importlib.import_module(module)
        for name in names:
            assert getattr(face, name) is not None, f"{module}.{name}"
    from lme.targets import TARGET_API

    assert TARGET_API == api.TARGET_API


def test_memory_ref_imports_only_public_names_of_lme():
    found = [i for i in api_check.imports(REPO / "plugins" / "memory_ref") if i.module.split(".")[0] == "lme"]
    assert found and [i.spelled for i in found if not api.is_public(i.module, i.name)] == []


def test_the_readme_and_the_spec_list_every_public_name():
    readme = (REPO / "plugins" / "README.md").read_text(encoding="utf-8")
    spec = (REPO / "references" / "SPEC.md").read_text(encoding="utf-8")
    for names in api.PUBLIC.values():
        for name in names:
            assert f"`{name}`" in readme, name
    assert f"TARGET_API = {api.TARGET_API}".replace(" ", "") in readme.replace(" ", "")
    assert api.RECORD_FILE in spec and "update-copy" in spec


def test_a_users_own_system_with_public_names_runs(tmp_path):
    project = make_project(tmp_path / "p", **OFFLINE)
    (project / "memsys.py").write_text(PUBLIC_SYSTEM)
    assert run_main(run_benchmark.main, ["--project", str(project), "--progress", "quiet", "--no-scorecard",
                                         "--target", "memsys.py", "--run-id", "own", "--max", "3"]) == 0
    rows = [json.loads(x) for x in (run_dir(project, "own") / "item-results.jsonl").read_text().splitlines()]
    assert len(rows) == 3 and all(r["status"] == "judged" for r in rows)


def test_a_users_own_system_importing_a_toolkit_module_that_is_gone_is_refused_in_one_line(tmp_path, capsys):
    project = make_project(tmp_path / "p", **OFFLINE)
    (project / "memsys.py").write_text("from lme.targets import bm25_index\n" + PUBLIC_SYSTEM)
    assert run_main(run_benchmark.main, ["--project", str(project), "--progress", "quiet", "--target",
                                         "memsys.py", "--run-id", "own"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "memsys.py imports lme.targets.bm25_index" in err
    assert "plugins/README.md" in err and "The public target API" in err and "update-copy" not in err
    assert not run_dir(project, "own").exists()


def test_a_users_own_system_importing_an_internal_module_that_exists_runs_with_a_warning(tmp_path, capsys):
    """Working code is not broken by the check: the import outside the public API is named once, the run goes on."""
    project = make_project(tmp_path / "p", **OFFLINE)
    (project / "memsys.py").write_text("from lme.models import sqlite_store\n" + PUBLIC_SYSTEM)
    assert run_main(run_benchmark.main, ["--project", str(project), "--progress", "quiet", "--no-scorecard",
                                         "--target", "memsys.py", "--run-id", "own", "--max", "2"]) == 0
    warned = [line for line in capsys.readouterr().err.splitlines() if "lme.models.sqlite_store" in line]
    assert len(warned) == 1 and warned[0].startswith("warning: memsys.py imports") and "plugins/README.md" in warned[0]
    rows = [json.loads(x) for x in (run_dir(project, "own") / "item-results.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all(r["status"] == "judged" for r in rows)
