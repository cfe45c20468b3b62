"""Each stage's face (``scripts/lme/<stage>/__init__.py``): ``__all__`` names what the stage offers, each name is
loaded from its module on first use only, and importing a face imports none of the stage's modules (start-up)."""

from __future__ import annotations

import ast
import importlib
import inspect
import subprocess
import sys

import pytest

from test_import_structure import PACKAGE, SCRIPTS, STAGE_ORDER, WHERE

STAGES = [s for s in STAGE_ORDER if (SCRIPTS / PACKAGE / s / "__init__.py").is_file()]


def _face(stage: str):
    return importlib.import_module(f"{PACKAGE}.{stage}")


def test_every_stage_has_a_face_with_a_docstring_and_a_table():
    assert STAGES == list(STAGE_ORDER)
    for stage in STAGES:
        face = _face(stage)
        assert face.__doc__ and len(face.__doc__.splitlines()) >= 3, f"lme/{stage}/__init__.py: say the stage's job"
        assert tuple(face.__all__) == tuple(face._EXPORTS), f"lme.{stage}: __all__ is the table's names"


@pytest.mark.parametrize("stage", STAGES)
def test_every_face_name_is_the_object_its_module_holds(stage):
    face = _face(stage)
    submodules = {p.stem for p in (SCRIPTS / PACKAGE / stage).glob("*.py")}
    for name, path in face._EXPORTS.items():
        assert path.startswith(f"{PACKAGE}.{stage}.") and path.split(".")[-1] in submodules, (name, path)
        assert name not in submodules, f"lme.{stage}.{name}: a face name must not hide a module of the stage"
        value = getattr(face, name)
        assert value is getattr(importlib.import_module(path), name), (stage, name)
        if stage != "targets" and (inspect.isclass(value) or inspect.isfunction(value)):  # the target API re-exports
            assert value.__module__ == path, f"lme.{stage}.{name}: name the module that defines it, not {path}"
        assert name in dir(face)


def test_an_unknown_name_is_an_attribute_error_and_modules_still_import_by_name():
    face = _face("run")
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        face.no_such_name  # noqa: B018
    assert not hasattr(face, "__wrapped__")
    from lme.run import driver, execute

    assert execute is driver.execute and driver.__name__ == "lme.run.driver"


def test_importing_every_face_loads_no_module_of_ours_and_nothing_else():
    code = (
        "import sys\n"
        f"sys.path.insert(0, {str(SCRIPTS)!r})\n"
        "before = set(sys.modules)\n"
        f"for stage in {STAGES!r}:\n"
        f"    __import__('{PACKAGE}.' + stage)\n"
        "print(sorted(set(sys.modules) - before))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=SCRIPTS)
    loaded = set(ast.literal_eval(out.stdout))
    faces = {PACKAGE} | {f"{PACKAGE}.{s}" for s in STAGES}
    assert loaded - {"__future__"} <= faces, f"importing a face loaded: {sorted(loaded - faces)}"


def test_the_structure_checker_reads_the_same_tables_the_faces_use():
    live = {f"{stage}.{name}": path.split(".", 1)[1] for stage in STAGES
            for name, path in _face(stage)._EXPORTS.items()}
    assert WHERE.faces == live
    assert set(WHERE.faces.values()) <= set(WHERE.modules)
