"""How much of the project is archived: ``judge_shim.py archive-status``.

Every distinct judge prompt the project's runs hold a hypothesis for (judged rows and rows that failed after
generating) is rebuilt from the row with the checkout's prompt function and looked up: archived (the project's
``verdicts.jsonl``), official in a run only (``export-verdicts`` puts it in an archive file), or without an
official verdict. For those the cost of judging them now with the official judge is given, synchronously and
through the Batch API (input tokens estimated from the prompt, ``max_tokens`` 10 as output: an upper bound).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from lme.core.facts import OFFICIAL_JUDGE_MODEL, OFFICIAL_JUDGE_SHUTDOWN
from lme.judge import official as judge_official, verdict_archive
from lme.judge.request_shapes import UPSTREAM_MAX_TOKENS
from lme.models import prices
from lme.models.token_counts import estimate_tokens
from lme.store import run_store


def status(project: Path, longmemeval_root: str | Path | None) -> dict[str, Any]:
    """The counts and costs (see the module docstring)."""
    builder = judge_official.load_prompt_builder(longmemeval_root)
    archive = verdict_archive.for_project(project)
    runs_dir = run_store.runs_dir(project)
    in_runs = {(line["prompt_sha256"], line["model"]) for line in verdict_archive.run_verdicts(runs_dir)}
    prompts: dict[str, int] = {}
    unbuildable = 0
    for _run, row in verdict_archive.runs_rows(runs_dir):
        if not isinstance(row.hypothesis, str):
            continue
        try:
            prompt = judge_official.build_prompt(builder, row.question_type, row.question, row.answer,
                                                 row.hypothesis, abstention=row.abstention,
                                                 question_id=row.question_id)
        except judge_official.JudgeInputError:
            unbuildable += 1
            continue
        prompts.setdefault(hashlib.sha256(prompt.encode("utf-8")).hexdigest(), estimate_tokens(prompt))
    archived = runs_only = 0
    missing_tokens: list[int] = []
    for sha, tokens in prompts.items():
        if archive is not None and archive.lookup(sha, OFFICIAL_JUDGE_MODEL) is not None:
            archived += 1
        elif (sha, OFFICIAL_JUDGE_MODEL) in in_runs:
            runs_only += 1
        else:
            missing_tokens.append(tokens)
    tokens_in = sum(missing_tokens)
    tokens_out = UPSTREAM_MAX_TOKENS * len(missing_tokens)
    return {
        "hypotheses": len(prompts), "archived": archived, "official_in_runs_only": runs_only,
        "without_official_verdict": len(missing_tokens), "unbuildable": unbuildable,
        "judge_tokens_in": tokens_in, "judge_tokens_out_at_most": tokens_out,
        "cost_sync_usd": prices.cost_usd(OFFICIAL_JUDGE_MODEL, tokens_in, tokens_out),
        "cost_batch_usd": prices.cost_usd(OFFICIAL_JUDGE_MODEL, tokens_in, tokens_out, billing="batch"),
        "official_judge_shutdown": OFFICIAL_JUDGE_SHUTDOWN,
        "archive": str(verdict_archive.archive_path(project)),
    }


def describe(report: dict[str, Any]) -> str:
    """The lines people read."""
    def usd(value: Any) -> str:
        return "unknown" if value is None else f"${value:,.2f}"

    lines = [f"{report['hypotheses']} distinct hypotheses (judge prompts) in this project's runs: "
             f"{report['archived']} archived, {report['official_in_runs_only']} judged officially but only in a run "
             f"(export-verdicts writes them to an archive file), {report['without_official_verdict']} without an "
             "official verdict."]
    if report["without_official_verdict"]:
        lines.append(f"Judging those {report['without_official_verdict']} with {OFFICIAL_JUDGE_MODEL} now: about "
                     f"{report['judge_tokens_in']:,} input tokens, {usd(report['cost_sync_usd'])} synchronously, "
                     f"{usd(report['cost_batch_usd'])} through the Batch API (--batch judge); the snapshot is "
                     f"retired on {report['official_judge_shutdown']}.")
    if report["official_in_runs_only"] or report["archived"]:
        lines.append("Keep a copy: python scripts/judge_shim.py export-verdicts --out verdicts.jsonl")
    return "\n".join(lines) + "\n"
