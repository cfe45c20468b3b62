"""Measure a candidate judge against the official verdicts: the calibration record a successor-judged run cites.

For the day ``gpt-4o-2024-08-06`` leaves the API: take hypotheses that already have official verdicts (a run's
rows, a verdict archive from ``judge_shim.py export-verdicts`` or upstream's eval-results file, or ``--all``: every official verdict the project
holds, its archive and all its runs), judge each again with the candidate (any provider:model, upstream's prompt,
the candidate family's request shape: ``judge_shapes``), and record: the candidate, its request shape, the sha256 of
the verdict set compared, N, agreement, Cohen's kappa with its 95% interval, the confusion matrix, agreement and
kappa per type, and the flipped prompts (question id and hypothesis sha256). A run judged by that candidate (with
that shape) cites the record on its scorecard, and is never called official; without one it says "uncalibrated".

The prompt is rebuilt from your LongMemEval checkout; a record whose rebuilt prompt does not hash to the official
verdict's ``prompt_sha256`` is skipped and counted (the official judge saw another prompt). Each measurement is
appended to ``.longmemeval-benchmarks/judge-agreement.jsonl``.

A candidate's verdicts can also come from a run it judged (``--candidate-run``, no call): e.g. a hypotheses file
judged twice as runs, once by the official judge and once with ``--judge-model`` (``run_benchmark.py
--hypotheses FILE``). Its verdicts are paired with the official ones on the same prompt (``prompt_sha256``).

Usage:
    python scripts/judge_agreement.py --all --candidate openai:o3-mini            # every archived verdict
    python scripts/judge_agreement.py --run-id baseline --candidate openai:gpt-4.1-2025-04-14
    python scripts/judge_agreement.py --archive verdicts.jsonl --candidate anthropic:claude-sonnet-4-6 --json
    python scripts/judge_agreement.py --run-id official-judged --candidate-run gpt41-judged

Exit status: 0 measured, 2 a user mistake (no official verdicts, unknown run, bad candidate).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping, Sequence

from lme.core import cli_parser
from lme.core import config
from lme.judge import file_mode
from lme.judge import request_shapes
from lme.judge.successor_judge import reasoning_effort
from lme.models import providers
from lme.core.clock import utc_now
from lme.core.errors import UserError
from lme.core.facts import OFFICIAL_JUDGE_MODEL, SCHEMA_VERSIONS, is_offline, resolve_judge_model
from lme.judge import agreement, upstream_verdicts


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    project = args.project.resolve()
    cfg = file_mode.project_config(project)
    if args.candidate_run:
        provider, model, verdicts, candidate_source = agreement.candidate_run(project, args.candidate_run)
    else:
        provider, model = _candidate_judge(args.candidate, cfg)
    root = args.longmemeval_root or cfg.get("longmemeval_root")
    root = None if root is None else str(config.resolve_path(project, root))
    records, source = _official(project, args, cfg, root)
    if not records:
        raise UserError(f"{source} holds no official verdicts to compare with",
                        fix="use a run judged by openai gpt-4o-2024-08-06 with upstream's prompt, or an archive")
    if args.max is not None:
        records = records[: max(0, args.max)]
    if args.candidate_run:
        report = agreement.measure_against_run(records, verdicts)
        source = f"{source} vs candidate {candidate_source}"
        shape = agreement.run_shape(verdicts)
    else:
        effort = args.reasoning_effort or reasoning_effort(cfg.get("judgeReasoningEffort"))
        judge_shape = request_shapes.shape_for(provider, model, effort)
        report = agreement.measure(records, provider, model, root,
                                         providers.Gateway(file_mode.provider_settings(cfg)),
                                         concurrency=args.concurrency, shape=judge_shape)
        shape = judge_shape.to_dict()
    _refuse_nothing_compared(report, source)
    record = {"schemaVersion": SCHEMA_VERSIONS["judge-agreement"], "candidate": f"{provider}:{model}",
              "candidate_provider": provider,
              "candidate_model": model, "request_shape": shape, "official_judge": OFFICIAL_JUDGE_MODEL,
              "measured_at": utc_now(), "source": source, **report}
    agreement.append_record(project, record)
    shown = json.dumps(record, indent=2, ensure_ascii=False) if args.json else agreement.render_markdown(record)
    print(shown, end="")
    if args.json:
        print()
    return 0


def _official(project: Path, args: Any, cfg: Mapping[str, Any], root: str | None) -> tuple[list, str]:
    """The official verdicts to compare with: ``--archive`` may be upstream's eval-results file (its prompts rebuilt
    from the dataset, ``upstream_verdicts``)."""
    if args.archive is not None and upstream_verdicts.is_upstream_file(upstream_verdicts.read_records(args.archive)):
        refs = upstream_verdicts.references(project, args.ref_file, cfg)
        return upstream_verdicts.file_lines(args.archive, refs, root)[0], f"upstream file {args.archive}"
    return agreement.official_records(project, args.run_id, args.archive, every=args.all)


def _parser() -> cli_parser.ArgumentParser:
    parser = cli_parser.documented_parser(__doc__)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--run-id", help="a run whose rows carry official verdicts")
    source.add_argument("--archive", type=Path, help="a verdict archive (judge_shim.py export-verdicts), or "
                                                     "upstream's *.eval-results-gpt-4o file (see --ref-file)")
    source.add_argument("--all", action="store_true",
                        help="every official verdict of the project: its archive and every run (several runs and "
                             "hypothesis sources, once per prompt): the largest calibration set")
    candidate = parser.add_mutually_exclusive_group(required=True)
    candidate.add_argument("--candidate", help="the candidate judge as provider:model (judges the hypotheses again)")
    candidate.add_argument("--candidate-run", metavar="RUN",
                           help="a run (id or directory) already judged by the candidate, e.g. the same hypotheses "
                                "file judged with --judge-model: its verdicts are paired with the official ones on "
                                "the same prompt; no call")
    cli_parser.add_project_argument(parser)
    parser.add_argument("--longmemeval-root", help="upstream checkout for the prompts (default: from the config)")
    parser.add_argument("--ref-file", type=Path, default=None,
                        help="with an upstream eval-results --archive: the LongMemEval data file its hypotheses "
                             "answer (default: the project's datasetPath)")
    parser.add_argument("--max", type=int, default=None, help="compare at most this many verdicts")
    parser.add_argument("--concurrency", type=int, default=4, help="candidate calls in flight (default 4)")
    parser.add_argument("--json", action="store_true", help="print the measurement as JSON")
    parser.add_argument("--reasoning-effort", choices=request_shapes.REASONING_EFFORTS, default=None,
                        help="reasoning_effort of a reasoning-model candidate (default: config judgeReasoningEffort, "
                             "else the model's own); part of the request shape the calibration records")
    return parser


def _candidate_judge(candidate: str, cfg: Mapping[str, Any]) -> tuple[str, str]:
    """``--candidate provider:model`` -> (provider, model); the offline judge is refused, ``gpt-4o`` resolved."""
    provider, model = config.parse_model_arg(candidate, "openai", tuple(cfg.get("providers") or {}))
    if is_offline(provider):
        raise UserError("the offline judge is not a candidate for the official judge", fix="pass provider:model")
    return provider, resolve_judge_model(model)


def _refuse_nothing_compared(report: Mapping[str, Any], source: str) -> None:
    """A measurement that compared no verdict (all skipped or failed) is a mistake to fix, not a record."""
    if report["n"] == 0:
        first = (report["errors"] or report["skipped"] or [{}])[0]
        raise UserError(f"no verdict of {source} could be compared: {len(report['skipped'])} skipped, "
                        f"{len(report['errors'])} candidate error(s) (first: {first})",
                        fix="check the candidate's key and name, and that longmemeval_root is the checkout the "
                            "official verdicts were judged with")
