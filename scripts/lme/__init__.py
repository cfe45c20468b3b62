"""The LongMemEval toolkit's library, one sub-package per stage of the way through the data.

Import nothing here: the commands in scripts/ (some run on a bare system python) import only what they use. Each
stage's ``__init__`` is its face: ``__all__`` names what the stage offers the stages after it, and ``lazy_face``
loads a name's module on its first use only, so importing a face imports none of the stage's modules."""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # not typing's: importing the faces loads nothing (tests/structure/test_stage_faces.py)
if TYPE_CHECKING:
    from typing import Any, Callable, Mapping


def lazy_face(package: str, table: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A stage's PEP 562 ``__getattr__`` and ``__dir__`` from ``table`` (name -> dotted path of the module that
    holds it). A name is looked up in its module on first use and kept on the package; any other name is an
    ``AttributeError``, so ``from lme.<stage> import <module>`` still finds the submodule."""

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        __import__(module)
        value = getattr(sys.modules[module], name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(table))

    return __getattr__, __dir__
