"""The scorecard crosses into every renderer as a ``Scorecard``: each renderer's entry point annotates it so and
checks it at its boundary (metrics.json's dict is refused with a TypeError before anything is read or written), and
no function of the report stage takes a scorecard under another type. Read with ``ast`` from the files, then one
call of each entry point with a plain dict."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from lme.loop.state import RoundFigures
from lme.report import charts, scorecard_md
from lme.report import outputs as report_outputs, page as report_html, page_data as report_data, svg as report_svg
from lme.score.scorecard_record import Scorecard

LME = Path(__file__).resolve().parents[2] / "scripts" / "lme"

ENTRY_POINTS: dict[tuple[str, str], str] = {
    ("report/scorecard_md.py", "render_markdown"): "card",
    ("report/page.py", "build_report"): "card",
    ("report/page_data.py", "page_data"): "card",
    ("report/svg.py", "per_type_chart"): "card",
    ("report/charts.py", "per_type_figure"): "card",
    ("report/outputs.py", "write_outputs"): "card",
    ("loop/state.py", "RoundFigures.of_scorecard"): "card",
}
"""Where a scorecard enters a renderer (or the loop's figures), and the parameter it comes in by."""

SCORECARD_NAMES = {"card", "scorecard"}
"""A parameter by one of these names holds a scorecard."""


def _functions(path: Path) -> dict[str, ast.FunctionDef]:
    """Every function of ``path`` by qualified name (``Class.method`` for a method)."""
    out: dict[str, ast.FunctionDef] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out[prefix + child.name] = child  # type: ignore[assignment]
                visit(child, prefix + child.name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")

    visit(ast.parse(path.read_text(encoding="utf-8")), "")
    return out


def _annotation(func: ast.FunctionDef, name: str) -> str | None:
    args = func.args
    for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
        if arg.arg == name:
            return None if arg.annotation is None else ast.unparse(arg.annotation)
    raise AssertionError(f"{func.name} has no parameter {name!r}")


def _checks_first(func: ast.FunctionDef, name: str) -> bool:
    """The first statement that is not the docstring or an import is ``name = require(name)``."""
    for stmt in func.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)) or (
                isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):
            continue
        return ast.unparse(stmt) == f"{name} = require({name})"
    return False


def test_every_renderer_entry_point_takes_a_scorecard_and_checks_it_first():
    wrong = []
    for (rel, qualname), param in ENTRY_POINTS.items():
        func = _functions(LME / rel).get(qualname)
        assert func is not None, f"{rel}: no function {qualname} (the table must follow the code)"
        if _annotation(func, param) != "Scorecard":
            wrong.append(f"{rel}::{qualname}({param}: {_annotation(func, param)})")
        if not _checks_first(func, param):
            wrong.append(f"{rel}::{qualname} does not begin with {param} = require({param})")
    assert wrong == [], f"a renderer must take the Scorecard record and check it at its boundary: {wrong}"


def test_no_report_function_takes_a_scorecard_under_another_type():
    files = sorted((LME / "report").glob("*.py")) + [LME / "loop" / "state.py"]
    wrong = [f"{path.relative_to(LME)}::{qualname}({arg.arg}: {ast.unparse(arg.annotation) if arg.annotation else '?'})"
             for path in files for qualname, func in _functions(path).items()
             for arg in [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]
             if arg.arg in SCORECARD_NAMES and (arg.annotation is None or ast.unparse(arg.annotation) != "Scorecard")]
    assert wrong == [], f"annotate each scorecard parameter as Scorecard (read metrics.json with from_dict): {wrong}"


def test_a_renderer_handed_metrics_jsons_dict_raises_type_error_and_writes_nothing(tmp_path):
    as_dict = json.loads(json.dumps(Scorecard.from_dict({}).to_dict()))
    calls = {
        "render_markdown": lambda: scorecard_md.render_markdown(as_dict),
        "build_report": lambda: report_html.build_report(None, as_dict),
        "page_data": lambda: report_data.page_data(None, as_dict),
        "report_svg.per_type_chart": lambda: report_svg.per_type_chart(as_dict),
        "per_type_figure": lambda: charts.per_type_figure(as_dict),
        "charts.per_type_chart": lambda: charts.per_type_chart(as_dict, tmp_path / "out" / "chart.png"),
        "write_outputs": lambda: report_outputs.write_outputs(tmp_path / "out", as_dict, "# md\n"),
        "RoundFigures.of_scorecard": lambda: RoundFigures.of_scorecard(as_dict),
    }
    for name, call in calls.items():
        with pytest.raises(TypeError, match="expected a Scorecard, got dict"):
            call()
    assert not (tmp_path / "out").exists()
