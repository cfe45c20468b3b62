"""How much of the project is archived: ``judge_shim.py archive-status`` (SPEC.md "Judge continuity").

Every distinct judge prompt the project's runs hold a hypothesis for (judged rows and rows that failed after
generating) is rebuilt with the checkout's prompt function and looked up; the cost of judging what has no official
verdict uses ``max_tokens`` 10 as output: an upper bound.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from lme.core.facts import OFFICIAL_JUDGE_MODEL, OFFICIAL_JUDGE_SHUTDOWN
from lme.judge import official, verdict_archive
from lme.judge.request_shapes import UPSTREAM_MAX_TOKENS
from lme.models import prices
from lme.models.token_counts import estimate_tokens
from lme.store import run_store


def status(project: Path, longmemeval_root: str | Path | None) -> dict[str, Any]:
    """The counts and costs (see the module docstring)."""
    builder = official.load_prompt_builder(longmemeval_root)
    backfilled = verdict_archive.backfill(project)
    archive = verdict_archive.for_project(project)
    runs_dir = run_store.runs_dir(project)
    in_runs = {(line["prompt_sha256"], line["model"]) for line in verdict_archive.run_verdicts(runs_dir)}
    prompts: dict[str, int] = {}
    unbuildable = 0
    for _run, row in verdict_archive.runs_rows(runs_dir):
        if not isinstance(row.hypothesis, str):
            continue
        try:
            prompt = official.build_prompt(builder, row.question_type, row.question, row.answer,
                                           row.hypothesis, abstention=row.abstention,
                                           question_id=row.question_id)
        except official.JudgeInputError:
            unbuildable += 1
            continue
        prompts.setdefault(hashlib.sha256(prompt.encode("utf-8")).hexdigest(), estimate_tokens(prompt))
    archived = runs_only = 0
    by_origin = {"made": 0, "imported": 0}
    missing_tokens: list[int] = []
    for sha, tokens in prompts.items():
        found = None if archive is None else archive.lookup(sha, OFFICIAL_JUDGE_MODEL)
        if found is not None:
            archived += 1
            by_origin[verdict_archive.origin_of(found)["kind"]] += 1
        elif (sha, OFFICIAL_JUDGE_MODEL) in in_runs:
            runs_only += 1
        else:
            missing_tokens.append(tokens)
    tokens_in = sum(missing_tokens)
    tokens_out = UPSTREAM_MAX_TOKENS * len(missing_tokens)
    return {
        "hypotheses": len(prompts), "archived": archived, "archived_made_here": by_origin["made"],
        "archived_imported": by_origin["imported"], "official_in_runs_only": runs_only,
        "backfilled_now": backfilled, "archive_prompts": 0 if archive is None else len(archive),
        "archive_conflicts": 0 if archive is None else len(archive.conflicts()),
        "without_official_verdict": len(missing_tokens), "unbuildable": unbuildable,
        "judge_tokens_in": tokens_in, "judge_tokens_out_at_most": tokens_out,
        "cost_sync_usd": prices.cost_usd(OFFICIAL_JUDGE_MODEL, tokens_in, tokens_out),
        "cost_batch_usd": prices.cost_usd(OFFICIAL_JUDGE_MODEL, tokens_in, tokens_out, pricing="batch"),
        "official_judge_shutdown": OFFICIAL_JUDGE_SHUTDOWN,
        "archive": str(verdict_archive.archive_path(project)),
    }


def describe(report: dict[str, Any]) -> str:
    def usd(value: Any) -> str:
        return "unknown" if value is None else f"${value:,.2f}"

    lines = [f"{report['hypotheses']} distinct hypotheses (judge prompts) in this project's runs: "
             f"{report['archived']} archived ({report['archived_made_here']} judged here, "
             f"{report['archived_imported']} imported from files), {report['official_in_runs_only']} judged "
             f"officially but only in a run, {report['without_official_verdict']} without an official verdict."]
    if report["backfilled_now"]:
        lines.append(f"Archived now: {report['backfilled_now']} official verdict(s) of runs made before runs "
                     "archived their verdicts.")
    lines.append(f"The archive ({report['archive']}) holds official verdicts for {report['archive_prompts']} "
                 "prompt(s); every run adds the official verdicts it makes as it makes them"
                 + (f"; {report['archive_conflicts']} prompt(s) have verdicts of both labels (scored by the "
                    f"{verdict_archive.CONFLICT_RULE})" if report["archive_conflicts"] else "") + ".")
    if report["without_official_verdict"]:
        lines.append(f"Judging those {report['without_official_verdict']} with {OFFICIAL_JUDGE_MODEL} now: about "
                     f"{report['judge_tokens_in']:,} input tokens, {usd(report['cost_sync_usd'])} synchronously, "
                     f"{usd(report['cost_batch_usd'])} through the Batch API (--batch judge); the snapshot is "
                     f"retired on {report['official_judge_shutdown']}.")
    if report["archived"]:
        lines.append("Keep a copy with your results: python scripts/judge_shim.py export-verdicts --out "
                     "verdicts.jsonl")
    return "\n".join(lines) + "\n"
