"""What a run started in a loop session may not do: run code the command line names, or spend past the user's
budget on its own ``--yes`` (``lme.core.unattended`` says when a process is in a loop session, and why).

- **Code comes from the config.** A target that runs the user's code (``command``, ``python``, a ``.py`` file or a
  package folder), the options that say which code or where it writes (``CODE_OPTIONS``) and the upstream checkout
  whose ``get_anscheck_prompt`` the judge calls (``longmemeval_root``) are accepted only when they are what the
  project's ``.longmemeval-benchmarks/config.json`` says (``target`` / ``loop.target``, ``targetOptions`` /
  ``loop.targetOptions``, ``longmemeval_root``). Repeating the config on the command line is fine (the loop's
  runner does); anything else is refused. The config is the project's own file, in its history; the loop's rules
  let the agent edit only the memory system's folder and the loop's proposal and trigger set.
- **The successor judge is the user's.** ``--successor`` is accepted only when it is the config's
  ``successorJudge``: the day the official judge retires, which judge stands in for it (and whether it was
  calibrated first) is the user's decision, never the agent's (``lme.loop.judge_day``).
- **``--yes`` only within the budget.** Above ``confirmCostUsd`` a run needs the user's approval. In a loop
  session ``--yes`` starts it only when its estimate is within ``loop.budgetUsd``, the most the user lets one loop
  run cost without being asked again (unset: ``--yes`` starts nothing above ``confirmCostUsd`` in a loop session).
- **``--worker`` is the background run's own.** It skips the cost gate (the parent passed it), so it is accepted
  only from the parent, which marks the child's environment (``WORKER_ENV``).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any, Mapping

from lme.core import config
from lme.core.errors import UserError
from lme.judge.successor_judge import successor_spec
from lme.core.facts import BUILTIN_TARGETS, CONFIG_FILE, STATE_DIR
from lme.run import cost_gate
from lme.run import dry_run
from lme.targets import naming
from lme.targets.identity import same_target
from lme.run.settings import RunSettings

CODE_TARGETS = ("command", "python")
"""Built-in targets that run the user's code (a path target always does)."""
CODE_OPTIONS = {
    "command": "the program the command target runs",
    "cwd": "where the command target runs it",
    "path": "the file the python target imports",
    "facts_cache": "where memory-ref writes its cache",
}
"""Target options that name code to run or a place to write."""
WORKER_ENV = "LONGMEMEVAL_BACKGROUND_WORKER"
"""Set by ``run_benchmark.py --background`` for its worker: the run id it started."""
_CONFIG = f"{STATE_DIR}/{CONFIG_FILE}"


def runs_code(target: str) -> bool:
    return target in CODE_TARGETS or target not in BUILTIN_TARGETS


def _loop(cfg: Mapping[str, Any]) -> Mapping[str, Any]:
    loop = cfg.get("loop")
    return loop if isinstance(loop, Mapping) else {}


def _configured_options(cfg: Mapping[str, Any], key: str, target: str, project: Path) -> list[Any]:
    """The values the config gives option ``key``: as written, and as a run stores them (paths taken from the
    project, a command's folder the project when not given: ``naming.resolve_options``)."""
    found = []
    for options in (cfg.get("targetOptions"), _loop(cfg).get("targetOptions")):
        if isinstance(options, Mapping):
            found += [options[key]] if key in options else []
            found += [v for k, v in naming.resolve_options(target, options, project).items() if k == key]
    return found


def _refuse(what: str, why: str, where: str) -> UserError:
    return UserError(f"{what}: in a loop session ({why}) code, and where it writes, come only from the project's "
                     f"config, never from the command line",
                     fix=f"if you mean it, set {where} in {_CONFIG} yourself, or run it yourself in a terminal")


def check_code(settings: RunSettings, cfg: Mapping[str, Any], project: Path, why: str, *,
               given_successor: str | None = None) -> None:
    """UserError when the run would run code, or write somewhere, or judge with a successor (``given_successor``:
    the command line's ``--successor``), that the config does not name."""
    check_successor(given_successor, settings, cfg, why)
    configured = [t for t in (cfg.get("target"), _loop(cfg).get("target")) if isinstance(t, str) and t]
    if runs_code(settings.target) and not any(same_target(settings.target, t, project) for t in configured):
        raise _refuse(f"target {settings.target} runs code", why, "target and loop.target")
    for key, meaning in CODE_OPTIONS.items():
        configured = _configured_options(cfg, key, settings.target, project)
        if key in settings.target_options and settings.target_options[key] not in configured:
            raise _refuse(f"--target-option {key} ({meaning})", why, "targetOptions")
    root = settings.longmemeval_root
    wanted = cfg.get("longmemeval_root")
    if root is not None and (not wanted or Path(root) != config.resolve_path(project, str(wanted))):
        raise _refuse(f"--longmemeval-root {root} (the judge runs its get_anscheck_prompt)", why, "longmemeval_root")


def check_successor(given: str | None, settings: RunSettings, cfg: Mapping[str, Any], why: str) -> None:
    """UserError for a ``--successor`` that is not the config's ``successorJudge`` (both resolved alike)."""
    if given is None:
        return
    configured = cfg.get("successorJudge")
    named = tuple(cfg.get("providers") or {})
    if configured and successor_spec(str(configured), named, settings.judge_provider, settings.judge_model,
                                     explicit=False) == settings.successor_judge:
        return
    raise UserError(f"--successor {given}: in a loop session ({why}) the successor judge is the user's choice, named "
                    "in the config, never on the command line",
                    fix=f"if you mean it, set successorJudge in {_CONFIG} yourself (calibrated first: "
                        f"judge_agreement.py --all --candidate {given}), or run it yourself in a terminal")


def budget(cfg: Mapping[str, Any]) -> float | None:
    """``loop.budgetUsd``: the most one run may be estimated at for ``--yes`` to start it in a loop session."""
    value = _loop(cfg).get("budgetUsd")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value < 0:
        return None
    return float(value)


def check_yes(settings: RunSettings, cfg: Mapping[str, Any], run_id: str | None, threshold: float, why: str) -> None:
    """UserError when ``--yes`` would start, in a loop session, a run estimated above the user's budget."""
    if not cost_gate.makes_paid_calls(settings):
        return
    total = dry_run.estimate(settings, run_id).total_usd_max
    if total is not None and total <= threshold:
        return  # the gate would not ask: --yes changes nothing
    allowed = budget(cfg)
    if allowed is not None and total is not None and total <= allowed:
        return
    shown = "cannot be priced (a price is unknown)" if total is None else f"is {dry_run.dollars(total, bound=True)}"
    limit = "not set" if allowed is None else dry_run.dollars(allowed)
    raise UserError(f"--yes in a loop session ({why}): the run's estimate {shown}, above confirmCostUsd "
                    f"{dry_run.dollars(threshold)} and the loop's budget (loop.budgetUsd {limit}), so it needs the "
                    "user's own approval",
                    fix=f"ask the user: they raise loop.budgetUsd in {_CONFIG}, or run the step themselves in a "
                        "terminal")


def check_worker(args: argparse.Namespace) -> None:
    """UserError for ``--worker`` given by anyone but ``--background`` (it skips the cost gate)."""
    if args.worker and os.environ.get(WORKER_ENV) != (args.run_id or ""):
        raise UserError("--worker is the background run's own flag (it skips the cost gate)",
                        fix="start a run in the background with --background")


def worker_env(run_id: str) -> dict[str, str]:
    """The marks ``check_worker`` looks for, for the worker of ``run_id``."""
    return {WORKER_ENV: run_id}
