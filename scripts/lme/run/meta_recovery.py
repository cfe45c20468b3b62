"""A resume of a run whose run-meta.json is missing or broken: under the settings its rows recorded, or refused.

Without run-meta, today's config would fill in the run's target, judge and code, and rows of two models would be
scored as one run (issue 38): so the rows decide (``references/SPEC.md``, "A run-meta.json that is missing or
broken"). The "broken" verdict is the store's (``run_meta.meta_fault``).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from lme.core.errors import UserError
from lme.core.run_records import CodeVersion
from lme.run.settings import RunSettings
from lme.store import run_store

BROKEN_SUFFIX = ".broken"
"""A broken run-meta.json replaced by a resume is renamed to ``run-meta.json.broken`` first: nothing is lost."""


@dataclass(frozen=True)
class RowMakers:
    """What a run's rows recorded about how they were made (every row of the run and its shards)."""

    rows: int
    targets: frozenset[tuple[str, str, str]]
    """(name, provider, model) of the target that answered."""
    judges: frozenset[tuple[str, str]]
    """(provider, requested model) of the judge (a successor's verdicts apart: the run names its successor)."""
    codes: frozenset[str]
    """The code ids rows carry (rows without one add nothing)."""
    question_ids: frozenset[str]


def row_makers(root: Path) -> RowMakers:
    targets, judges, codes, qids, rows = set(), set(), set(), set(), 0
    for row in run_store.iter_rows(root):
        rows += 1
        qids.add(row.question_id)
        if row.target is not None:
            targets.add((row.target.name, row.target.provider, row.target.model))
        if row.judgment is not None and not row.judgment.successor:
            judges.add((row.judgment.provider, row.judgment.requested_model))
        if row.code:
            codes.add(row.code)
    return RowMakers(rows, frozenset(targets), frozenset(judges), frozenset(codes), frozenset(qids))


def meta_dir(settings: RunSettings, root: Path) -> Path:
    """Where the run's settings are read: this shard's meta, else the root's (a new shard of a run)."""
    work = run_store.shard_dir(root, settings.shard)
    if not run_store.has_meta(work) and settings.shard is not None and run_store.has_meta(root):
        return root
    return work


def lost_meta(directory: Path) -> str | None:
    """What is wrong with the directory's run-meta.json (``missing``, or the store's broken verdict), or None."""
    if not run_store.has_meta(directory):
        path = run_store.meta_path(directory)
        return None if path.is_symlink() else f"{path} is missing"
    return run_store.meta_fault(directory)


def check(settings: RunSettings, run_id: str | None, code: CodeVersion | None = None, *, named: bool = True
          ) -> str | None:
    """Refuse resuming ``run_id`` when its run-meta is missing or broken and its rows say it was made otherwise,
    or when ``named`` is False (the command line did not name the target and judge models: they would come from
    the config alone). ``code``: this invocation's, when known. Returns the note to show when the resume may go on
    without its run-meta (None: the run-meta reads, or there is no such run)."""
    if not run_id:
        return None
    root = run_store.run_dir_for(Path(settings.runs_dir), run_store.validate_run_id(run_id))
    if not root.is_dir():
        return None
    run_store.refuse_links(root)  # a planted link is refused as such, never taken for a broken file
    wrong = lost_meta(meta_dir(settings, root))
    if wrong is None:
        return None
    makers = row_makers(root)
    if not makers.rows:
        return f"run {run_id}: {wrong}; it has no rows yet, so it is made again from these settings"
    problems = _disagreements(makers) or _differences(settings, makers, code)
    if not problems and not named:
        problems = ["without it a resume takes its target and judge from the command line, never from the config"]
    if problems:
        raise UserError(f"cannot resume run {run_id}: {wrong}, and " + "; ".join(problems),
                        fix=_way_out(settings, run_id, makers))
    _refuse_foreign_items(root, run_id, wrong, makers)
    return (f"run {run_id}: {wrong}; its {makers.rows} rows recorded these settings' target, judge and code, so its "
            "run-meta is made again from them (target options and the dataset file come from these settings: "
            "rows do not record them)")


def _disagreements(makers: RowMakers) -> list[str]:
    """The run's rows were made more than one way: no settings can continue them all."""
    kinds = (("targets", [_target_text(t) for t in makers.targets]), ("judges", [f"{p}:{m}" for p, m in makers.judges]),
             ("code versions", list(makers.codes)))
    return [f"its rows were made by more than one of its {kind} ({', '.join(sorted(seen))})"
            for kind, seen in kinds if len(seen) > 1]


def _differences(settings: RunSettings, makers: RowMakers, code: CodeVersion | None) -> list[str]:
    """Where this invocation's settings (and code) differ from what the rows recorded."""
    problems = []
    mine = (settings.target, settings.target_provider, settings.target_model)
    if makers.targets and mine not in makers.targets:
        problems.append(f"target {_target_text(mine)} is not the {_target_text(next(iter(makers.targets)))} its "
                        f"{makers.rows} rows recorded")
    judge = (settings.judge_provider, settings.judge_model)
    if makers.judges and judge not in makers.judges:
        problems.append(f"judge {judge[0]}:{judge[1]} is not the {':'.join(next(iter(makers.judges)))} its rows "
                        "recorded")
    if code is not None and code.id and makers.codes and code.id not in makers.codes:
        problems.append(f"the target's code (id {code.id}) is not the code its rows were made with "
                        f"(id {next(iter(makers.codes))}); nothing else records which files that was")
    return problems


def _refuse_foreign_items(root: Path, run_id: str, wrong: str, makers: RowMakers) -> None:
    manifest = run_store.read_manifest(root)
    outside = makers.question_ids - set(manifest.question_ids) if manifest is not None else frozenset()
    if outside:
        raise UserError(f"cannot resume run {run_id}: {wrong}, and {len(outside)} of its rows answer questions "
                        f"outside its manifest (e.g. {sorted(outside)[0]})",
                        fix="restore run-meta.json from a copy of the run, or start a new run (omit --run-id)")


def _way_out(settings: RunSettings, run_id: str, makers: RowMakers) -> str:
    restore = "restore run-meta.json from a copy of the run if you have one"
    if len(makers.targets) > 1 or len(makers.judges) > 1 or len(makers.codes) > 1:
        return f"{restore}; otherwise start a new run (omit --run-id): these rows cannot be continued as one run"
    flags = ["run_benchmark.py", "--run-id", run_id]
    if settings.shard is not None:
        flags += ["--shard", f"{settings.shard[0]}/{settings.shard[1]}"]
    mine = {(settings.target, settings.target_provider, settings.target_model)}
    for name, provider, model in makers.targets or mine:  # rows that recorded none (a judge: successor rows only)
        flags += ["--target", name, "--target-model", f"{provider}:{model}"]
    for provider, model in makers.judges or {(settings.judge_provider, settings.judge_model)}:
        flags += ["--judge-model", f"{provider}:{model}"]
    code = " (and the code that made them)" if makers.codes else ""
    return (f"{restore}; or resume it with the settings its rows recorded{code}: "
            f"{' '.join(shlex.quote(f) for f in flags)}; or start a new run (omit --run-id)")


def _target_text(target: tuple[str, str, str]) -> str:
    return f"{target[0]} {target[1]}:{target[2]}"


def keep_broken(directory: Path) -> None:
    """Before a resume writes a new run-meta over a broken one: the broken bytes renamed aside, never lost."""
    if run_store.meta_fault(directory) is not None:
        path = run_store.meta_path(directory)
        path.replace(path.with_name(path.name + BROKEN_SUFFIX))
