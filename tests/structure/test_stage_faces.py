"""Each stage's ``scripts/lme/<stage>/__init__.py``: a docstring (the stage's job), and nothing else except in the
public target API's two packages, ``lme.targets`` and ``lme.target_kit``, whose plain imports name exactly the
public names (``lme.targets.api.PUBLIC``) plus what the run itself imports through them (``RUN_NAMES``). The store's
one face is ``run_store``: it re-exports only what its callers use. Importing any other stage's package loads no
module of ours (the Stop hook and the bare-python commands import only what they use)."""

from __future__ import annotations

import ast
import functools
import importlib
import subprocess
import sys
from pathlib import Path

from lme.targets import api
from test_import_structure import PACKAGE, PLUGINS, REPO, SCRIPTS, STAGE_ORDER, WHERE, face_of

STAGES = [s for s in STAGE_ORDER if (SCRIPTS / PACKAGE / s / "__init__.py").is_file()]
NAMED = {f"{PACKAGE}.targets", f"{PACKAGE}.target_kit"}
"""The packages that name objects: the public target API's (``api.PUBLIC``)."""

RUN_NAMES = {
    f"{PACKAGE}.targets": {"target_path", "parse_option", "did_you_mean", "hypothesis_from_response",
                           "imports_the_toolkit"},
    f"{PACKAGE}.target_kit": set(),
}
"""Names beyond the public API that the built-in targets (``plugins/*.py``) and the generation command import
through the face."""

STORE_FACE = SCRIPTS / PACKAGE / "store" / "run_store.py"


def _init(stage: str) -> Path:
    return SCRIPTS / PACKAGE / stage / "__init__.py"


@functools.cache
def _absolute_from_imports() -> tuple[tuple[Path, str, tuple[str, ...]], ...]:
    """(file, module, names) of each ``from <module> import names`` in scripts/, plugins/ and tests/: each file
    parsed once for every package asked about (a parse of them all per package took most of this file's time)."""
    return tuple((path, node.module, tuple(a.name for a in node.names))
                 for root in (SCRIPTS, PLUGINS, REPO / "tests") for path in root.rglob("*.py")
                 for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                 if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module)


def imported_through(package: str) -> set[str]:
    """The names ``from <package> import Name`` takes from ``package`` in scripts/, plugins/ and tests/ (not a
    submodule of it)."""
    folder = SCRIPTS / Path(*package.split("."))
    submodules = {p.stem for p in folder.glob("*.py")}
    return {name for path, module, names in _absolute_from_imports()
            if module == package and path.parent != folder  # not the package's own modules
            for name in names if name not in submodules}


def test_every_stage_has_a_face_with_a_docstring_and_only_the_target_api_names_objects():
    assert STAGES == list(STAGE_ORDER)
    for stage in STAGES:
        body = ast.parse(_init(stage).read_text(encoding="utf-8")).body
        doc = ast.get_docstring(ast.Module(body=body, type_ignores=[]))
        assert doc and len(doc.splitlines()) >= 3, f"lme/{stage}/__init__.py: say the stage's job"
        if f"{PACKAGE}.{stage}" not in NAMED:
            assert len(body) == 1, f"lme/{stage}/__init__.py: a docstring only (import a module by its path)"
    lme_init = ast.parse((SCRIPTS / PACKAGE / "__init__.py").read_text(encoding="utf-8")).body
    assert len(lme_init) == 1, "lme/__init__.py: a docstring only"


def test_the_target_api_faces_export_exactly_the_public_names_and_what_the_run_imports_through_them():
    for package in NAMED:
        face = importlib.import_module(package)
        expected = set(api.PUBLIC[package]) | RUN_NAMES[package]
        assert set(face.__all__) == expected and len(face.__all__) == len(expected), package
        table = face_of(_init(package.split(".")[1]).read_text(encoding="utf-8"))
        assert set(table) == expected, f"{package}: import exactly __all__ ({sorted(set(table) ^ expected)})"
        for name in face.__all__:
            assert getattr(face, name) is getattr(importlib.import_module(f"{PACKAGE}.{table[name]}"), name), name


def test_every_name_beyond_the_public_api_is_imported_through_its_face():
    for package, names in RUN_NAMES.items():
        unused = names - imported_through(package)
        assert not unused, f"{package} exports {sorted(unused)} that nothing imports through it: drop them"


def test_no_other_stage_package_is_imported_for_a_name():
    named = {f"{PACKAGE}.{stage}": imported_through(f"{PACKAGE}.{stage}") for stage in STAGES}
    wrong = {package: sorted(names) for package, names in named.items() if names and package not in NAMED}
    assert not wrong, f"import these from the module that defines them: {wrong}"


def test_the_stores_one_face_re_exports_only_what_its_callers_use():
    tree = ast.parse(STORE_FACE.read_text(encoding="utf-8"))
    re_exported = {a.asname or a.name for node in tree.body if isinstance(node, ast.ImportFrom)
                   and (node.module or "").startswith(f"{PACKAGE}.") for a in node.names}
    own = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    used = set()
    for root in (SCRIPTS, PLUGINS, REPO / "tests"):
        for path in root.rglob("*.py"):
            if path == STORE_FACE:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "run_store":
                    used.add(node.attr)
                elif isinstance(node, ast.ImportFrom) and node.module == f"{PACKAGE}.store.run_store":
                    used |= {a.name for a in node.names}
                elif (isinstance(node, ast.Call) and len(node.args) >= 2 and isinstance(node.args[0], ast.Name)
                      and node.args[0].id == "run_store" and isinstance(node.args[1], ast.Constant)):
                    used.add(node.args[1].value)  # monkeypatch.setattr(run_store, "name", ...)
    unused = sorted(re_exported - used - own)
    assert not unused, f"lme/store/run_store.py re-exports names nobody imports through it: {unused}"


def test_importing_a_stage_package_loads_no_module_of_ours():
    plain = [s for s in STAGES if f"{PACKAGE}.{s}" not in NAMED]
    code = (
        "import sys\n"
        f"sys.path.insert(0, {str(SCRIPTS)!r})\n"
        "before = set(sys.modules)\n"
        f"for stage in {plain!r}:\n"
        f"    __import__('{PACKAGE}.' + stage)\n"
        "print(sorted(set(sys.modules) - before))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=SCRIPTS)
    loaded = set(ast.literal_eval(out.stdout))
    packages = {PACKAGE} | {f"{PACKAGE}.{s}" for s in plain}
    assert loaded <= packages, f"importing a stage package loaded: {sorted(loaded - packages)}"
    from lme.run import driver

    assert driver.__name__ == f"{PACKAGE}.run.driver"


def test_the_structure_checker_reads_the_names_the_faces_import():
    live = {f"{package.split('.')[1]}.{name}": module for package in NAMED
            for name, module in face_of(_init(package.split(".")[1]).read_text(encoding="utf-8")).items()}
    assert WHERE.faces == live
    assert set(WHERE.faces.values()) <= set(WHERE.modules)
