"""The toolkit's import structure, read with ``ast`` from the files: no cycle, no arrow from a lower stage to a
higher one, no sibling import hidden in a function (outside a short list with reasons), no ``sys.path`` edit in
a plugin, and no plugin importing the driver that loads it.

``STAGE_ORDER`` is the way through the data, lowest first: a module may import its own stage and the stages before
it. Where a module belongs: while ``scripts/`` is flat, ``FLAT_STAGES`` says (a new module must be placed there; the
test names the ones that are not); after the package move (``/work/team/move_to_package.py`` reads this table), the
sub-package ``scripts/lme/<stage>/`` it lives in, and ``scripts/*.py`` are thin command files. The checker itself is
tested on a small synthetic tree, so a planted cycle or upward arrow is shown to fail.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Sequence

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "scripts"
PLUGINS = REPO / "plugins"

STAGE_ORDER = ("core", "data", "store", "models", "targets", "target_kit", "judge", "run", "score", "report", "loop",
               "devtools", "cli")
"""The stages (and, after the package move, the sub-packages of ``scripts/lme/``), lowest first. ``target_kit``: the
optional helpers a target may use (no run-time module imports them); ``devtools``: maintainers' tools on no run
path (the sample generator); ``cli``: every command's parser and ``main()``, the top (a command may import any
stage, nothing imports a command)."""

# --- FLAT_STAGES begin (emptied by the package move: scripts/lme/<stage>/ is the table now)
FLAT_STAGES: dict[str, tuple[str, ...]] = {}
# --- FLAT_STAGES end

PLUGIN_STAGE = "target_kit"
"""Plugins are targets: they may import what a target may (core, data, store, models, targets, and the optional
helpers of target_kit), nothing above."""

LAZY_IMPORTS_ALLOWED: Mapping[tuple[str, str], str] = {
    ("loop.stop_hook", "loop.state"): "the Stop hook runs on every stop: nothing more unless a loop is "
                                                "there, and a sibling that fails to import lets the session stop "
                                                "instead of failing it",
    ("loop.stop_hook", "loop.session"): "as above",
    ("loop.stop_hook", "core.command_names"): "as above",
    ("loop.stop_hook", "core.state_reader"): "as above",
    ("core.entry_guard", "core.command_names"): "only on the refusal path; the guard runs before any other import of "
                                                "ours",
    ("core.cli_parser", "core.unattended"): "only a parsed command line is checked against a loop session: --help "
                                            "and usage errors exit before it (start-up measured side by side)",
    ("loop.state", "score.scorecard_record"): "the Stop hook and rounds.py status import loop_state on every "
                                                   "stop: the scorecard's record classes (~60 ms) only when a step "
                                                   "is logged",
}
"""Function-level sibling imports kept on purpose, and why."""

LAZY_IN_COMMANDS = "cli."
"""A command (``lme/cli/<command>.py``) may import its library inside ``main()``, after parsing: ``--help`` and usage
errors then load none of it (start-up measured side by side, ``bench_startup.py``), ``rounds.py``'s and setup's
system-python subcommands never load what needs the venv, and a run loads its scoring only after its last call.
Nothing imports a command, so an import there cannot hide a cycle."""

PLUGIN_FORBIDDEN = {"generation_driver", "driver", "run_benchmark", "item_runner"}
"""A plugin imports the target API (``targets``, ``records``), never the driver that loads it."""


# --------------------------------------------------------------------------- the checker

PACKAGE = "lme"


@dataclass(frozen=True)
class Import:
    source: str
    target: str
    line: int
    in_function: bool


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _key(parts: Sequence[str], known: set[str]) -> str:
    """A module's key from its dotted name: ``<stage>.<module>`` in the package (two stages may hold modules of the
    same name, e.g. ``loop.confirm`` and its command ``cli.confirm``), the bare name in a flat tree."""
    if parts[0] == PACKAGE and len(parts) > 2:
        dotted = f"{parts[1]}.{parts[2]}"
        return dotted if dotted in known else parts[2]
    return parts[0]


def _named(node: ast.AST, known: set[str], faces: Mapping[str, str]) -> list[str]:
    """Our modules an import statement names: ``import m``, ``from m import x``, and after the package move
    ``from lme.<stage> import m``, ``from lme.<stage>.m import x``, ``import lme.<stage>.m``, and
    ``from lme.<stage> import Name`` where ``Name`` is in the stage's face (the module that holds it)."""
    if isinstance(node, ast.Import):
        return [_key(a.name.split("."), known) for a in node.names]
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        parts = node.module.split(".")
        if parts[0] != PACKAGE or len(parts) > 2:
            return [_key(parts, known)]
        found = [_key([*parts, a.name], known) for a in node.names]
        return [k if k in known else faces.get(f"{parts[-1]}.{a.name}", k)
                for a, k in zip(node.names, found) if k in known or f"{parts[-1]}.{a.name}" in faces]
    return []


def face_of(init_source: str) -> dict[str, str]:
    """The names a stage's face imports (``from lme.<stage>.<module> import Name`` in ``lme/<stage>/__init__.py``),
    read with ``ast``, as ``{name: "<stage>.<module>"}``."""
    return {a.asname or a.name: node.module.split(".", 1)[1] for node in ast.parse(init_source).body
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith(f"{PACKAGE}.")
            and len(node.module.split(".")) == 3 for a in node.names}


def imports_of(name: str, source: str, known: Iterable[str], faces: Mapping[str, str] | None = None) -> list[Import]:
    """The imports of module ``name`` that name a module of ours (absolute imports only); ``faces`` maps a face's
    ``<stage>.<Name>`` to the ``<stage>.<module>`` that holds it."""
    known = set(known)
    tree = ast.parse(source)
    parents = _parents(tree)
    found = []
    for node in ast.walk(tree):
        targets = _named(node, known, faces or {})
        if not targets:
            continue
        up, in_function = node, False
        while up in parents:
            up = parents[up]
            in_function = in_function or isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        found += [Import(name, t, node.lineno, in_function) for t in targets if t in known and t != name]
    return found


def find_cycle(edges: Mapping[str, Iterable[str]]) -> list[str] | None:
    """One import cycle as a path (first module repeated at the end), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for start in sorted(edges):
        if start not in state:
            found = visit(start)
            if found:
                return found
    return None


def upward_imports(imports: Iterable[Import], stage: Mapping[str, str], order: Sequence[str]) -> list[Import]:
    """Imports from a module to one of a later (higher) stage."""
    rank = {s: i for i, s in enumerate(order)}
    return [i for i in imports if i.source in stage and i.target in stage
            and rank[stage[i.target]] > rank[stage[i.source]]]


def edits_sys_path(source: str) -> list[int]:
    """Lines that touch ``sys.path``."""
    return [node.lineno for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Attribute) and node.attr == "path"
            and isinstance(node.value, ast.Name) and node.value.id == "sys"]


@dataclass(frozen=True)
class Layout:
    """Our modules (name -> file), the stage of each, the thin command files (after the package move), and the
    stage faces' names (``<stage>.<Name>`` -> the ``<stage>.<module>`` that holds it)."""

    modules: Mapping[str, Path]
    stage: Mapping[str, str]
    thin: Mapping[str, Path]
    faces: Mapping[str, str] = field(default_factory=dict)


def layout(scripts: Path, flat_stages: Mapping[str, Sequence[str]]) -> Layout:
    package = scripts / PACKAGE
    if package.is_dir():
        modules = {f"{p.parent.name}.{p.stem}": p for p in sorted(package.glob("*/*.py")) if p.stem != "__init__"}
        stage = {key: p.parent.name for key, p in modules.items()}
        faces = {f"{init.parent.name}.{name}": module for init in sorted(package.glob("*/__init__.py"))
                 for name, module in face_of(init.read_text(encoding="utf-8")).items()}
        return Layout(modules, stage, {p.stem: p for p in sorted(scripts.glob("*.py"))}, faces)
    modules = {p.stem: p for p in sorted(scripts.glob("*.py"))}
    stage = {m: s for s, members in flat_stages.items() for m in members if m in modules}
    return Layout(modules, stage, {})


def plugin_files(plugins: Path) -> list[Path]:
    return sorted(plugins.rglob("*.py"))


def all_imports(scripts: Path, plugins: Path, where: Layout | None = None) -> tuple[list[Import], list[Import]]:
    """(imports made by our modules, imports made by plugin files), our modules only."""
    where = where or layout(scripts, {})
    known, faces = where.modules, where.faces
    ours = [i for name, path in known.items()
            for i in imports_of(name, path.read_text(encoding="utf-8"), known, faces)]
    theirs = [i for path in plugin_files(plugins) for i in imports_of(
        f"plugin:{path.relative_to(plugins)}", path.read_text(encoding="utf-8"), known, faces)]
    return ours, theirs


def thin_file_problems(path: Path) -> list[str]:
    """A thin command file holds a docstring, imports from the package (and ``sys``), the entry guard's call, and the
    ``__main__`` call."""
    problems = []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            continue
        if isinstance(node, ast.Import) and all(a.name == "sys" for a in node.names):
            continue
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == PACKAGE:
            continue
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test):
            continue
        if isinstance(node, ast.Expr) and ast.unparse(node) == "entry_guard.start(__name__)":
            continue  # the venv check and early Ctrl-C come before the command's own imports
        problems.append(f"{path.name}:{node.lineno}: {ast.unparse(node).splitlines()[0][:80]}")
    return problems


def _edges(imports: Iterable[Import]) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for i in imports:
        edges.setdefault(i.source, set()).add(i.target)
    return edges


def _show(imports: Iterable[Import]) -> str:
    return "; ".join(f"{i.source}:{i.line} -> {i.target}" for i in imports)


# --------------------------------------------------------------------------- the toolkit's own tree

WHERE = layout(SCRIPTS, FLAT_STAGES)


@functools.cache
def tree_imports() -> tuple[list[Import], list[Import]]:
    """``all_imports`` of the toolkit's tree, read when a test here first needs it: at module level every test
    process paid ~1.3 s for it while collecting, whether it ran these tests or not."""
    return all_imports(SCRIPTS, PLUGINS, WHERE)


def test_every_module_has_one_stage_and_the_stages_are_in_order():
    placed = [m for members in FLAT_STAGES.values() for m in members]
    assert len(placed) == len(set(placed)), "a module is listed in two stages"
    assert list(FLAT_STAGES) in ([], list(STAGE_ORDER)), "FLAT_STAGES lists the stages of STAGE_ORDER, in order"
    missing = sorted(set(WHERE.modules) - set(WHERE.stage))
    assert not missing, f"place these modules in FLAT_STAGES (tests/structure/test_import_structure.py): {missing}"
    unknown = set(WHERE.stage.values()) - set(STAGE_ORDER)
    assert not unknown, f"sub-packages that are not stages: {unknown}"
    if not WHERE.thin:
        gone = sorted(set(placed) - set(WHERE.modules))
        assert not gone, f"FLAT_STAGES lists modules that are not in scripts/: {gone}"


def test_no_import_cycle_among_our_modules():
    ours, _ = tree_imports()
    assert find_cycle(_edges(ours)) is None, " -> ".join(find_cycle(_edges(ours)) or [])


def test_no_import_from_a_lower_stage_to_a_higher_one():
    ours, _ = tree_imports()
    wrong = upward_imports(ours, WHERE.stage, STAGE_ORDER)
    assert not wrong, "against the grain (" + " < ".join(STAGE_ORDER) + "): " + "; ".join(
        f"{i.source} ({WHERE.stage[i.source]}) -> {i.target} ({WHERE.stage[i.target]}) line {i.line}" for i in wrong)


def test_sibling_imports_sit_at_the_top_of_the_module_unless_allowed_with_a_reason():
    ours, _ = tree_imports()
    lazy = [i for i in ours if i.in_function and (i.source, i.target) not in LAZY_IMPORTS_ALLOWED
            and not i.source.startswith(LAZY_IN_COMMANDS)]
    assert not lazy, f"move to the top, or add to LAZY_IMPORTS_ALLOWED with the reason: {_show(lazy)}"
    used = {(i.source, i.target) for i in ours if i.in_function}
    assert set(LAZY_IMPORTS_ALLOWED) <= used, f"stale allowances: {sorted(set(LAZY_IMPORTS_ALLOWED) - used)}"


def test_plugins_import_the_target_api_not_the_driver_and_never_edit_sys_path():
    _, plugin_imports = tree_imports()
    driver = [i for i in plugin_imports if i.target.split(".")[-1] in PLUGIN_FORBIDDEN]
    assert not driver, f"plugins import the driver: {_show(driver)}"
    rank = {s: i for i, s in enumerate(STAGE_ORDER)}
    above = [i for i in plugin_imports if rank[WHERE.stage[i.target]] > rank[PLUGIN_STAGE]]
    assert not above, f"plugins import above the {PLUGIN_STAGE} stage: {_show(above)}"
    edits = {str(p.relative_to(REPO)): edits_sys_path(p.read_text(encoding="utf-8")) for p in plugin_files(PLUGINS)}
    assert not {k: v for k, v in edits.items() if v}, f"sys.path edits in plugins: {edits}"
    assert any(i.target == "targets.targets" for i in plugin_imports)  # the reader above really read the plugins


def test_after_the_package_move_scripts_holds_only_thin_command_files():
    problems = [p for path in WHERE.thin.values() for p in thin_file_problems(path)]
    assert not problems, f"scripts/*.py must stay thin (the code lives in scripts/{PACKAGE}/): {problems}"
    for name, path in WHERE.thin.items():
        text = path.read_text(encoding="utf-8")
        if "import main" in text:
            assert f"{PACKAGE}.cli.{name} import main" in text, f"scripts/{name}.py must call {PACKAGE}.cli.{name}.main"
            continue
        own = [key for key in WHERE.modules if key.split(".")[-1] == name]
        assert own, f"scripts/{name}.py has no module {name} in scripts/{PACKAGE}/"
        assert any(f"{PACKAGE}.{key} import" in text for key in own), f"scripts/{name}.py must re-export its own module"


def top_level_functions(source: str) -> set[str]:
    return {n.name for n in ast.parse(source).body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def test_commands_live_in_lme_cli_no_library_module_defines_a_main():
    stray = sorted(key for key, path in WHERE.modules.items()
                   if WHERE.stage[key] != "cli" and "main" in top_level_functions(path.read_text(encoding="utf-8")))
    assert not stray, f"move the command (its parser and main()) to scripts/{PACKAGE}/cli/<command>.py: {stray}"
    commands = {name for name, path in WHERE.thin.items() if "import main" in path.read_text(encoding="utf-8")}
    assert commands and {f"cli.{name}" for name in commands} <= set(WHERE.modules)


def repeats_its_folder(key: str) -> bool:
    """``loop.loop_state``, ``targets.target_kit``: a module name that starts with its stage's name (or its singular)."""
    stage, _, module = key.partition(".")
    return bool(module) and any(module.startswith(prefix + "_") for prefix in {stage, stage.rstrip("s")})


def test_no_module_name_repeats_its_folder():
    assert repeats_its_folder("loop.loop_state") and repeats_its_folder("targets.target_io")
    assert not repeats_its_folder("loop.state") and not repeats_its_folder("cli.loop_state")
    stutter = sorted(key for key in WHERE.modules if repeats_its_folder(key))
    assert not stutter, f"name the module for its job inside its folder (lme/loop/state.py, not loop_state.py): {stutter}"


# --------------------------------------------------------------------------- the checker, on a planted tree


def _tree(root: Path, files: Mapping[str, str]) -> tuple[Path, Path]:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (root / "plugins").mkdir(exist_ok=True)
    return root / "scripts", root / "plugins"


def test_the_checker_finds_a_planted_cycle_an_upward_arrow_a_lazy_import_and_a_sys_path_edit(tmp_path):
    scripts, plugins = _tree(tmp_path, {
        "scripts/low.py": "import os\nfrom high import thing\n",
        "scripts/mid.py": "import low\n\ndef f():\n    import high\n    return high\n",
        "scripts/high.py": "import mid\nthing = 1\n",
        "plugins/p.py": "import sys\nsys.path.insert(0, '..')\nfrom lme.targets import generation_driver\n",
        "scripts/generation_driver.py": "",
    })
    ours, theirs = all_imports(scripts, plugins)
    cycle = find_cycle(_edges(ours))
    assert cycle is not None and cycle[0] == cycle[-1] and len(cycle) >= 3 and set(cycle) <= {"low", "mid", "high"}
    stage = {"low": "a", "mid": "b", "high": "c", "generation_driver": "c"}
    assert {(i.source, i.target) for i in upward_imports(ours, stage, "abc")} == {("low", "high"), ("mid", "high")}
    assert [(i.source, i.target, i.line) for i in ours if i.in_function] == [("mid", "high", 4)]
    assert edits_sys_path((plugins / "p.py").read_text()) == [2]
    assert [(i.target, i.line) for i in theirs] == [("generation_driver", 3)]


def test_the_checker_reads_the_package_layout_its_stages_and_thin_files(tmp_path):
    scripts, plugins = _tree(tmp_path, {
        f"scripts/{PACKAGE}/__init__.py": "",
        f"scripts/{PACKAGE}/core/low.py": "x = 1\n",
        f"scripts/{PACKAGE}/loop/high.py": f"from {PACKAGE}.core import low\nfrom {PACKAGE}.core.low import x\n",
        f"scripts/{PACKAGE}/core/bad.py": f"import {PACKAGE}.loop.high\n",
        f"scripts/{PACKAGE}/loop/__init__.py": f'from {PACKAGE}.loop.high import Thing\n',
        f"scripts/{PACKAGE}/core/worse.py": f"from {PACKAGE}.loop import Thing, unknown\n",
        "scripts/high.py": f'"""The command."""\nimport sys\nfrom {PACKAGE}.loop.high import main\n'
                           'if __name__ == "__main__":\n    sys.exit(main())\n',
        "scripts/fat.py": "import json\nVALUE = 1\n",
    })
    where = layout(scripts, {})
    assert where.stage == {"core.low": "core", "loop.high": "loop", "core.bad": "core", "core.worse": "core"}
    assert where.faces == {"loop.Thing": "loop.high"}
    assert set(where.thin) == {"high", "fat"}
    ours, _ = all_imports(scripts, plugins, where)
    assert sorted((i.source, i.target) for i in ours) == [("core.bad", "loop.high"), ("core.worse", "loop.high"),
                                                          ("loop.high", "core.low"), ("loop.high", "core.low")]
    assert [(i.source, i.target) for i in upward_imports(ours, where.stage, STAGE_ORDER)] == [
        ("core.bad", "loop.high"), ("core.worse", "loop.high")]
    assert thin_file_problems(scripts / "high.py") == []
    assert [p.split(":")[0] for p in thin_file_problems(scripts / "fat.py")] == ["fat.py", "fat.py"]


def test_the_checker_passes_a_clean_tree(tmp_path):
    scripts, plugins = _tree(tmp_path, {"scripts/low.py": "x = 1\n", "scripts/high.py": "import low\n"})
    ours, _ = all_imports(scripts, plugins)
    assert find_cycle(_edges(ours)) is None
    assert upward_imports(ours, {"low": "a", "high": "b"}, "ab") == []
    assert [(i.source, i.target, i.in_function) for i in ours] == [("high", "low", False)]
