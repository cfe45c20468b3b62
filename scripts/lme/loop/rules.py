"""The iteration loop's configuration and hard rules, as checks a script can run before it acts. Standard library only.

A ``--loop`` run is handed ``check_settings`` by its command (``run_benchmark.py``) and refuses to start on any
problem (the run stage sits below the loop and never imports it). The rules and the ``loop`` config keys are
documented in ``references/iteration-rules.md``; ``loop_guard.py`` prints them.
"""

from __future__ import annotations

import copy
import math
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, NamedTuple

from lme.core import command_names
from lme.core import config
from lme.core import config_file
from lme.core import state_reader
from lme.core.errors import UserError
from lme.core.facts import (
    BUILTIN_TARGETS,
    JUDGE_DAY_FILE,
    OFFICIAL_JUDGE_MODEL,
    OFFICIAL_JUDGE_PROVIDER,
    SYMBOLIC_FLAGS,
    resolve_judge_model,
)
from lme.targets.identity import is_reference, same_target

if TYPE_CHECKING:  # the run stage's record, for the hints only: the run hands its settings to the check
    from lme.run.settings import RunSettings

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
    "targetOptions": {},
    "n_parallel": 8,
    "required_keys": ["OPENAI_API_KEY", "ANTHROPIC_API_KEY"],
    "budgetUsd": None,
}
REFERENCE_OPTIONS: dict[str, Any] = {flag: True for flag in SYMBOLIC_FLAGS}
"""The target options the loop gives memory-ref and its copies by default (its three symbolic layers on); never
another target."""
REFERENCE_ONLY_OPTIONS = (*SYMBOLIC_FLAGS, "stack")
"""memory-ref's own settings among the target options (the symbolic layers; the model stack with its writer)."""


def target_correct(n_total: int) -> int:
    """Strict-correct count the loop must reach: 475 of 500, and also 475 of the 499-item ``_s`` copy."""
    if n_total <= 0:
        raise ValueError(f"n_total must be positive, got {n_total}")
    # round first: 0.95 * 500 is 475.00000000000006 in floating point
    return math.ceil(round(TARGET_SHARE * n_total, 9))


def read_project_config(project: Path, *, required: bool = False) -> dict[str, Any]:
    """The raw project config (``{}`` when there is none yet; ``required``: a UserError naming setup). Malformed
    JSON is a user error."""
    path = config_file.config_path(project)
    data = config_file.read_object(path, fix=f"fix the JSON or re-run {command_names.SETUP}",
                                   not_object="{path} is not a JSON object", not_object_fix=f"re-run {command_names.SETUP}")
    if data is None and required:
        raise UserError(f"no config at {path}", fix=f"run {command_names.SETUP} first")
    return {} if data is None else data


def loop_config(project: Path) -> dict[str, Any]:
    """Config ``loop`` object merged over ``LOOP_DEFAULTS`` (``targetOptions`` merged key by key, over
    ``REFERENCE_OPTIONS`` when the target is memory-ref or a copy of it)."""
    raw = read_project_config(project).get("loop") or {}
    if not isinstance(raw, dict):
        raise UserError("config.json: 'loop' must be an object", fix="see references/iteration-rules.md")
    if not isinstance(raw.get("targetOptions", {}), dict):
        raise UserError("config.json: loop.targetOptions must be an object", fix="see references/iteration-rules.md")
    merged = copy.deepcopy(LOOP_DEFAULTS)
    merged.update(copy.deepcopy(raw))
    if is_reference(str(merged.get("target") or ""), Path(project)):
        merged["targetOptions"] = {**REFERENCE_OPTIONS, **merged["targetOptions"]}
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
    """One problem per symbolic layer that is missing or off (memory-ref's layers: ``check_loop_run`` asks only
    for memory-ref and its copies)."""
    given = {_normalise_flag(k): v for k, v in (symbolic or {}).items()}
    return [
        f"--{flag.replace('_', '-')} is off: the loop keeps all three symbolic layers on"
        for flag in SYMBOLIC_FLAGS
        if given.get(flag) is not True
    ]


def symbolic_setup(project: Path) -> list[str]:
    """The pre-flight's lines for the symbolic layers (``loop_guard.py symbolic``, ``check_setup.sh``): ``ok`` or
    ``FAIL ... -> fix`` per layer for memory-ref and its copies; one ``ok`` line saying none are checked (nor
    given) for any other target."""
    cfg = loop_config(project)
    target = str(cfg.get("target") or "")
    if not is_reference(target, Path(project)):
        return [f"ok   symbolic layers: memory-ref's settings, not checked: the loop's target {target} gets no "
                "symbolic option"]
    options = cfg["targetOptions"]
    return [f"ok   {flag} is on" if options.get(flag) is True else
            f"FAIL {flag} is off -> set loop.targetOptions.{flag} to true in .longmemeval-benchmarks/config.json"
            for flag in SYMBOLIC_FLAGS]


def judge_problems(provider: str | None, model: str | None) -> list[str]:
    if provider == OFFICIAL_JUDGE_PROVIDER and model is not None and resolve_judge_model(model) == OFFICIAL_JUDGE_MODEL:
        return []
    return [
        f"judge is {provider or '?'}:{model or '?'}: the loop uses only openai:gpt-4o "
        "(gpt-4o-2024-08-06), or rounds stop being comparable (after the day it retires: the user's calibrated "
        "successor, successorJudge in the config, never another judge model)"
    ]


class LoopJudge(NamedTuple):
    """Who judges the loop's runs (``loop_judge``)."""

    kind: str
    """``official`` (no judge-day record); ``successor`` (after the day: the successor the config names, whose
    baseline the loop took); ``retired`` (after the day, no baseline of the config's successor yet: the loop waits
    for the user)."""
    successor: str | None
    """``kind`` successor: the successor, ``provider:model``; else None."""
    named: str | None
    """The config's ``successorJudge`` (``successor_named``), None when the user named none."""
    record: Mapping[str, Any] | None
    """judge-day.json as the file has it (None: the official judge has not retired for this loop)."""


def successor_named(project: Path) -> str | None:
    """The config's ``successorJudge`` as ``provider:model`` (an alias resolved, as a run resolves it), None when
    the user named none. Only the user names it: the loop's rules cannot edit the config."""
    cfg = read_project_config(project)
    value = cfg.get("successorJudge")
    if not value:
        return None
    try:
        provider, model = config.parse_model_arg(str(value), OFFICIAL_JUDGE_PROVIDER, tuple(cfg.get("providers") or {}))
    except UserError:
        return str(value)  # the run refuses it with its own line
    return f"{provider}:{resolve_judge_model(model)}"


def judge_day_record(project: Path) -> Mapping[str, Any] | None:
    """judge-day.json (``lme.loop.judge_day`` writes it when a loop run finds the official judge gone), or None."""
    try:
        data = state_reader.read_json(Path(project) / JUDGE_DAY_FILE)
    except state_reader.StateFileError as err:
        raise UserError(f"{err.path} {err.problem}", fix="restore it from git history (git log -- "
                        f"{JUDGE_DAY_FILE})") from None
    return data if isinstance(data, Mapping) else None


def loop_judge(project: Path) -> LoopJudge:
    """The official judge, or, after the day, the user's calibrated successor throughout (see ``LoopJudge``)."""
    record = judge_day_record(project)
    named = successor_named(project)
    if record is None:
        return LoopJudge("official", None, named, None)
    if named is not None and record.get("successor") == named and record.get("baseline_at"):
        return LoopJudge("successor", named, named, record)
    return LoopJudge("retired", None, named, record)


def successor_problems(successor: str | None, successor_only: bool, judge: LoopJudge) -> list[str]:
    """A loop run's successor against the loop's judge: none before the day, the recorded one for every item after."""
    if judge.kind == "official":
        return [] if successor is None else [
            f"successor {successor} before the day: the loop's judge is the official one until a loop run finds it "
            "retired (a fallback item by item would mix two judges in one baseline)"]
    if judge.kind == "retired":
        return ["BLOCKED: official judge retired: no baseline judged by a calibrated successor the user named yet "
                "(rounds.py successor-baseline; see references/judging-after-2027-01-14.md, \"The loop across the "
                "day\")"]
    if successor != judge.successor or not successor_only:
        return [f"after the day the loop's judge is the successor {judge.successor} for every item "
                f"(got {successor or 'none'}{'' if successor_only else ', not for every item'})"]
    return []


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
    successor: str | None = None
    """The successor judge the run names (``provider:model``), None for none."""
    successor_only: bool = False
    """The successor judges every item (a loop run after the day)."""

    @classmethod
    def of_settings(cls, settings: "RunSettings", n_total: int) -> "LoopRunRequest":
        """The request of a run's ``RunSettings`` over a dataset of ``n_total`` questions (a symbolic flag the
        target options do not name is on: the target's default)."""
        return cls(n_total=n_total, max_items=settings.max_evals, judge_provider=settings.judge_provider,
                   judge_model=settings.judge_model,
                   symbolic={f: bool(settings.target_options.get(f, True)) for f in SYMBOLIC_FLAGS},
                   target=settings.target, successor=settings.successor_judge,
                   successor_only=settings.successor_only)


def check_loop_run(request: LoopRunRequest, project: Path) -> list[str]:
    """The reasons a planned ``--loop`` run breaks a hard rule (empty list: it may start)."""
    project = Path(project)
    problems = size_problems(request.n_total, request.max_items)
    problems += judge_problems(request.judge_provider, request.judge_model)
    problems += successor_problems(request.successor, request.successor_only, loop_judge(project))
    cfg = loop_config(project)
    if is_reference(str(request.target or cfg.get("target") or ""), project):
        problems += symbolic_problems(request.symbolic)
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
    return any(a == "" or path == a or (a.endswith("/") and path.startswith(a)) for a in allowed)
