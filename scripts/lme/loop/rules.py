"""The iteration loop's configuration and hard rules, as checks a script can run before it acts. Standard library only.

A ``--loop`` run is handed ``check_settings`` by its command (``run_benchmark.py``) and refuses to start on any
problem (the run stage sits below the loop and never imports it):

- the full question set every round (``--max`` below the dataset's ``n_total`` is a partial run);
- the official judge only (openai ``gpt-4o`` / ``gpt-4o-2024-08-06``), so rounds stay comparable;
- the three symbolic layers of the target on (``symbolic_resolver``, ``symbolic_temporal``, ``symbolic_bypass``);
- the work tree on the loop branch (config ``loop.branch``, default ``longmemeval-iter``);
- the configured target (``loop.target``): a built-in name, or a path in the project such as ``memory_system``
  (a copy of the plugin's ``plugins/memory_ref`` that the loop's fixes edit, committed on the loop branch).
  Paths are compared as files, so ``memory_system``, ``./memory_system/`` and its absolute path are one target.

The loop's settings live in the ``loop`` object of ``.longmemeval-benchmarks/config.json``; ``loop_config``
fills in the defaults below (``references/iteration-rules.md`` documents each key); ``loop_guard.py`` prints them.
What a target spelling names (``same_target``) is the targets stage's (``identity``).
"""

from __future__ import annotations

import copy
import math
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, NamedTuple

from lme.core import command_names
from lme.core import config_file
from lme.core.errors import UserError
from lme.core.facts import (
    BUILTIN_TARGETS,
    OFFICIAL_JUDGE_MODEL,
    OFFICIAL_JUDGE_PROVIDER,
    SYMBOLIC_FLAGS,
    resolve_judge_model,
)
from lme.targets.identity import same_target

if TYPE_CHECKING:  # the run stage's record, for the hints only: the run hands its settings to the check
    from lme.run.settings import RunSettings

LOOP_JUDGE_PROVIDER = OFFICIAL_JUDGE_PROVIDER
TARGET_SHARE = 0.95
"""The loop ends when a run and its clean confirmation rerun both reach ceil(0.95 * n_total) strict correct."""

LOOP_DEFAULTS: dict[str, Any] = {
    "branch": "longmemeval-iter",
    "remote": "origin",
    "run_id": "longmemeval-iter",
    "variant": "_s",
    "judge": "openai:gpt-4o",
    "target": "memory-ref",
    "target_model": None,
    "targetOptions": {flag: True for flag in SYMBOLIC_FLAGS},
    "n_parallel": 8,
    "required_keys": ["OPENAI_API_KEY", "ANTHROPIC_API_KEY"],
    "budgetUsd": None,
}


def target_correct(n_total: int) -> int:
    """Strict-correct count the loop must reach: 475 of 500, and also 475 of the 499-item ``_s`` copy."""
    if n_total <= 0:
        raise ValueError(f"n_total must be positive, got {n_total}")
    # round first: 0.95 * 500 is 475.00000000000006 in floating point
    return math.ceil(round(TARGET_SHARE * n_total, 9))


def read_project_config(project: Path) -> dict[str, Any]:
    """The raw project config (``{}`` when there is none yet). Malformed JSON is a user error."""
    data = config_file.read_object(config_file.config_path(project), fix=f"fix the JSON or re-run {command_names.SETUP}",
                                   not_object="{path} is not a JSON object", not_object_fix=f"re-run {command_names.SETUP}")
    return {} if data is None else data


def loop_config(project: Path) -> dict[str, Any]:
    """Config ``loop`` object merged over ``LOOP_DEFAULTS`` (``targetOptions`` merged key by key)."""
    raw = read_project_config(project).get("loop") or {}
    if not isinstance(raw, dict):
        raise UserError("config.json: 'loop' must be an object", fix="see references/iteration-rules.md")
    merged = copy.deepcopy(LOOP_DEFAULTS)
    for key, value in raw.items():
        if key == "targetOptions" and isinstance(value, dict):
            merged["targetOptions"].update(value)
        else:
            merged[key] = value
    return merged


def current_branch(project: Path) -> str | None:
    """The checked-out branch of the git work tree at ``project`` (None: not a repo, or detached HEAD)."""
    try:
        out = subprocess.run(
            ["git", "branch", "--show-current"],
            cwd=project,
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:
        return None
    name = out.stdout.strip()
    return name if out.returncode == 0 and name else None


def assert_on_loop_branch(branch: str | None = None, *, project: Path | None = None) -> str:
    """Raise UserError unless the work tree at ``project`` is on ``branch`` (default: config loop.branch)."""
    project = Path.cwd() if project is None else Path(project)
    wanted = branch or loop_config(project)["branch"]
    actual = current_branch(project)
    if actual != wanted:
        raise UserError(
            f"not on the loop branch: {project} is on {actual or 'no branch (detached or not a git repo)'}, "
            f"the loop only works on {wanted}",
            fix=f"git switch {wanted} before starting the loop; never switch branches mid-loop",
        )
    return actual


def _normalise_flag(name: str) -> str:
    name = name.strip().lstrip("-").replace("-", "_")
    return name if name.startswith("symbolic_") else f"symbolic_{name}"


def symbolic_problems(symbolic: Mapping[str, Any] | None) -> list[str]:
    """One problem per symbolic layer that is missing or off."""
    given = {_normalise_flag(k): v for k, v in (symbolic or {}).items()}
    return [
        f"--{flag.replace('_', '-')} is off: the loop keeps all three symbolic layers on"
        for flag in SYMBOLIC_FLAGS
        if given.get(flag) is not True
    ]


def judge_problems(provider: str | None, model: str | None) -> list[str]:
    if provider == LOOP_JUDGE_PROVIDER and model is not None and resolve_judge_model(model) == OFFICIAL_JUDGE_MODEL:
        return []
    return [
        f"judge is {provider or '?'}:{model or '?'}: the loop uses only openai:gpt-4o "
        "(gpt-4o-2024-08-06), or rounds stop being comparable"
    ]


def size_problems(n_total: int | None, max_items: int | None) -> list[str]:
    if n_total is None:
        return ["the dataset size (n_total) is unknown: the loop cannot verify it runs the full set"]
    if max_items is not None and max_items < n_total:
        return [f"--max {max_items} is below the full set of {n_total}: the loop runs every question each round"]
    return []


class LoopRunRequest(NamedTuple):
    """A planned ``--loop`` run, as the hard rules read it: built from a run's settings (``of_settings``), or by a
    command that checks before there are settings (``loop_guard.py check``). A NamedTuple, not a dataclass: the
    loop's small commands load this module, and ``dataclasses`` costs them ~8 ms of start-up (``inspect``)."""

    n_total: int | None
    """Questions in the dataset file (None: unknown, which the rules refuse)."""
    max_items: int | None
    """``--max`` (None: all)."""
    judge_provider: str | None
    judge_model: str | None
    symbolic: Mapping[str, Any] | None
    """The three symbolic flags by name (``symbolic_resolver``, ``symbolic-resolver`` and ``--symbolic-resolver``
    are one flag); a flag missing is off."""
    target: str | None
    """The target as the run names it (None: not checked against ``loop.target``)."""

    @classmethod
    def of_settings(cls, settings: "RunSettings", n_total: int) -> "LoopRunRequest":
        """The request of a run's ``RunSettings`` over a dataset of ``n_total`` questions (a symbolic flag the
        target options do not name is on: the target's default)."""
        return cls(n_total=n_total, max_items=settings.max_evals, judge_provider=settings.judge_provider,
                   judge_model=settings.judge_model,
                   symbolic={f: bool(settings.target_options.get(f, True)) for f in SYMBOLIC_FLAGS},
                   target=settings.target)


def check_loop_run(request: LoopRunRequest, project: Path) -> list[str]:
    """The reasons a planned ``--loop`` run breaks a hard rule (empty list: it may start)."""
    project = Path(project)
    problems = size_problems(request.n_total, request.max_items)
    problems += judge_problems(request.judge_provider, request.judge_model)
    problems += symbolic_problems(request.symbolic)
    cfg = loop_config(project)
    actual = current_branch(project)
    if actual != cfg["branch"]:
        problems.append(
            f"on branch {actual or '(none: detached HEAD or not a git repo)'}, not the loop branch {cfg['branch']}"
        )
    target = request.target
    if target is not None and cfg.get("target") and not same_target(str(target), str(cfg["target"]), project):
        problems.append(f"target is {target}, the loop configuration says {cfg['target']}")
    return problems


def check_settings(settings: "RunSettings", n_total: int) -> list[str]:
    """``check_loop_run`` for a run's ``RunSettings`` over a dataset of ``n_total`` questions: the check a
    ``--loop`` run is handed (``run_driver.RunOptions(loop_check=...)``)."""
    return check_loop_run(LoopRunRequest.of_settings(settings, n_total), Path(settings.project))


def fix_paths(project: Path) -> list[str]:
    """Where a round's fix may change files (project-relative; a folder ends with ``/``): ``loop.fix_paths`` when
    set, else the memory system ``loop.target`` names in the project (a package folder; a ``.py`` file in a folder:
    that folder; one at the project's root: that file). Empty when the target is built in (it lives in the plugin)."""
    project = Path(project).resolve()
    cfg = loop_config(project)
    given = cfg.get("fix_paths")
    if given is not None:
        if not isinstance(given, list) or not given or not all(isinstance(p, str) and p.strip() for p in given):
            raise UserError("config.json: loop.fix_paths must be a list of paths in the project",
                            fix='e.g. "fix_paths": ["memory_system/"]; see references/iteration-rules.md')
        return [_inside(project, p, "loop.fix_paths", folder=p.endswith("/") or None) for p in given]
    target = str(cfg.get("target") or "")
    if not target or target in BUILTIN_TARGETS:
        return []
    path = Path(target).expanduser()
    path = (path if path.is_absolute() else project / path).resolve()
    if path.suffix == ".py" and not path.is_dir():
        return [_inside(project, str(path.parent), "loop.target", folder=True) if path.parent != project
                else _inside(project, str(path), "loop.target", folder=False)]
    return [_inside(project, str(path), "loop.target", folder=True)]


def _inside(project: Path, given: str, key: str, *, folder: bool | None) -> str:
    """``given`` relative to the project (``""``: the whole project); ``folder`` None: a folder if it is one now."""
    path = Path(given).expanduser()
    path = (path if path.is_absolute() else project / path).resolve()
    if path != project and project not in path.parents:
        raise UserError(f"config.json: {key} {given!r} is outside the project {project}",
                        fix="name a folder or file inside the project (the loop commits and reverts fixes there)")
    if path == project:
        return ""
    return path.relative_to(project).as_posix() + ("/" if (path.is_dir() if folder is None else folder) else "")


def in_fix_paths(path: str, allowed: list[str]) -> bool:
    """Whether the project-relative ``path`` is one of ``allowed`` or under one of its folders."""
    return any(a == "" or path == a or (a.endswith("/") and path.startswith(a)) for a in allowed)
