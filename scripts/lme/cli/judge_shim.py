"""Judge with the official LongMemEval judge from the command line: one case, a hypotheses file, the verdict archive.

The judge itself is ``judge_official`` (upstream's prompt from your checkout, upstream's call settings and label
rule; official only for the snapshot gpt-4o-2024-08-06 through OpenAI or Azure with upstream's prompt). File mode
(``--hyp-file``, ``judge_files``) judges ``--concurrency`` lines at once through a run's gateway (rate limiter and
call cache), output in input order and in upstream's bytes (``cmp`` with upstream's output finds no difference).
Official verdicts can be exported and imported (``export-verdicts`` / ``import-verdicts``, ``verdict_archive``); an
archived verdict is used instead of a call.

Usage:
    python scripts/judge_shim.py --longmemeval-root ~/LongMemEval --print-prompt \\
        --question-type temporal-reasoning --question-id q1 --question "How many days...?" \\
        --answer 18 --hypothesis "19 days"
    python scripts/judge_shim.py --longmemeval-root ~/LongMemEval --hyp-file hyps.jsonl \\
        --ref-file longmemeval_oracle.json --concurrency 8   # writes hyps.jsonl.eval-results-gpt-4o
    python scripts/judge_shim.py export-verdicts --project . --out verdicts.jsonl
    python scripts/judge_shim.py import-verdicts verdicts.jsonl --project .
    python scripts/judge_shim.py archive-status --project .      # what has no official verdict yet, and its cost
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

from lme.core import cli_parser
from lme.core import config
from lme.store import run_store
from lme.judge import archive_status
from lme.judge import agreement
from lme.judge import upstream_verdicts, verdict_archive
from lme.judge import verdict_sources
from lme.core.errors import UserError
from lme.core.facts import OFFICIAL_JUDGE_PROVIDER, STATE_DIR, is_abstention, resolve_judge_model
from lme.judge.file_mode import FileJudgeOptions, file_gateway, judge_file, project_config, successor_path
from lme.judge.official import CONTINUITY_HINT, build_prompt, checkout_commit, judge_request, load_prompt_builder, model_mismatch, official_judge_gone
from lme.judge.request_shapes import shape_for
from lme.judge.successor_judge import reasoning_effort, successor_spec
from lme.judge.stability import StabilityRegistry
from lme.models.providers import ProviderError


ARCHIVE_HELP = {
    "export-verdicts": "Write every official verdict of this project (its archive, which every run fills as it "
                       "judges, and any older run's) to one JSONL file: a header (count, sha256 of the lines, the "
                       "upstream commit of the prompts, the prompts with verdicts of both labels, how many verdicts "
                       "were skipped as not official), then one line per verdict with its origin.",
    "import-verdicts": "Add official verdicts to this project's archive: a file judge_shim.py export-verdicts wrote "
                       "(its header's count and sha256 are verified first), or upstream's *.eval-results-gpt-4o file "
                       "(each prompt rebuilt from the dataset and the line's hypothesis with your upstream "
                       "checkout). The judge then uses them instead of a call; they stay official, and every report "
                       "names the file they came from: an imported verdict is its author's claim.",
    "archive-status": "Archive the official verdicts of older runs, then count the hypotheses of this project's runs "
                      "that have no archived official verdict, and what judging them with the official judge costs "
                      "now (synchronously and through the Batch API).",
}


def _archive_main(command: str, argv: Sequence[str]) -> int:
    """``export-verdicts`` / ``import-verdicts`` / ``archive-status``: the portable archive of official verdicts."""
    parser = cli_parser.ArgumentParser(prog=f"judge_shim.py {command}", description=ARCHIVE_HELP[command])
    cli_parser.add_project_argument(parser)
    if command == "export-verdicts":
        parser.add_argument("--out", type=Path, required=True, help="the JSONL file to write")
    else:
        if command == "import-verdicts":
            parser.add_argument("file", type=Path, help="a file judge_shim.py export-verdicts wrote, or upstream's "
                                                        "*.eval-results-gpt-4o file")
            parser.add_argument("--ref-file", type=Path, default=None,
                                help="for an upstream file: the LongMemEval data file its hypotheses answer "
                                     "(default: the project's datasetPath)")
        parser.add_argument("--longmemeval-root", type=Path, default=None,
                            help="upstream checkout for the prompts (default: from the config)")
    if command == "archive-status":
        parser.add_argument("--json", action="store_true", help="print the counts as JSON")
    args = parser.parse_args(argv)
    project = args.project.resolve()
    cfg = project_config(project)
    root = getattr(args, "longmemeval_root", None) or cfg.get("longmemeval_root")
    root = None if root is None else config.resolve_path(project, str(root))
    if command == "export-verdicts":
        result = verdict_archive.export(project, run_store.runs_dir(project), args.out,
                                        upstream_commit=checkout_commit(root))
        result["out"] = str(args.out)
        if result["conflicts"]:
            print(f"warning: {result['conflicts']} prompt(s) have official verdicts of both labels: all are kept, "
                  f"each is scored by the {verdict_archive.CONFLICT_RULE}; the header lists them", file=sys.stderr)
    elif command == "import-verdicts":
        result = _import(project, args, cfg, root)
    else:
        result = archive_status.status(project, root)
        if not args.json:
            print(archive_status.describe(result), end="")
            return 0
    print(json.dumps(result))
    return 0


def _import(project: Path, args: argparse.Namespace, cfg: dict, root: Path | None) -> dict:
    """``import-verdicts``: an export of ours, or upstream's eval-results file (every line checked first)."""
    records = upstream_verdicts.read_records(args.file)
    if upstream_verdicts.is_upstream_file(records):
        refs = upstream_verdicts.references(project, args.ref_file, cfg)
        result = upstream_verdicts.import_file(project, args.file, refs, root)
    else:
        result = verdict_archive.import_file(project, args.file)
    result["archive"] = str(verdict_archive.archive_path(project))
    if result["added"]:
        print(f"imported {result['added']} verdict(s) from {args.file.name}: an imported verdict is its author's "
              "claim, not one this installation saw; reports name the file as its origin"
              + (f" ({result['label_only']} give only a label, no judge reply)" if result["label_only"] else ""),
              file=sys.stderr)
    if result["new_conflicts"]:
        print(f"warning: {result['new_conflicts']} prompt(s) now have official verdicts of both labels: all are kept, "
              f"each is scored by the {verdict_archive.CONFLICT_RULE}, and scorecards count them", file=sys.stderr)
    return result


ARCHIVE_COMMANDS = tuple(ARCHIVE_HELP)


FILE_MODE_EPILOG = (
    "File mode (--hyp-file): the lines are judged --concurrency at a time through the same rate limiter and call "
    "cache as runs (the project's .longmemeval-benchmarks/cache, unless cacheEnabled is false); the output file "
    "keeps the input's order and is written once every line is judged. An interrupted or failed judge loses no "
    "paid verdict: they are in the cache, so a re-run pays only for the rest. For checkpoints, resume by run id "
    "and a scorecard, judge the file as a run: run_benchmark.py --hypotheses FILE. "
    "Verdict archive: judge_shim.py export-verdicts --out FILE | judge_shim.py import-verdicts FILE | "
    "judge_shim.py archive-status (see --help of each). With --successor, once the official judge answers 404 / "
    "410 the lines the archive lacks are judged by the successor and written to <out>.successor.jsonl, never to "
    "<out> (upstream's print_qa_metrics.py accepts only gpt-4o-2024-08-06 there).")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ARCHIVE_COMMANDS:
        return _archive_main(argv[0], argv[1:])
    args = _parser().parse_args(argv)
    if args.print_prompt:
        return _print_prompt(args)
    if args.hyp_file is None or args.ref_file is None:
        raise UserError("give --hyp-file and --ref-file to judge a file, or --print-prompt for one case")
    if args.repeat < 1:
        raise UserError(f"--repeat {args.repeat} must be >= 1", fix="e.g. --repeat 3")
    if args.concurrency is not None and args.concurrency < 1:
        raise UserError(f"--concurrency {args.concurrency} must be >= 1", fix="e.g. --concurrency 8")
    return _judge_hyp_file(args)


def _parser() -> cli_parser.ArgumentParser:
    """The parser of the one-case and file modes (the archive commands have their own: ``_archive_main``)."""
    parser = cli_parser.ArgumentParser(description="Judge hypotheses with the official LongMemEval judge.",
                                     epilog=FILE_MODE_EPILOG)
    parser.add_argument("--longmemeval-root", type=Path, required=True,
                        help="your clone of xiaowu0162/LongMemEval (the judge prompt is read from it)")
    parser.add_argument("--provider", default=OFFICIAL_JUDGE_PROVIDER,
                        help="judge provider (official: openai, or azure for the same snapshot through Azure OpenAI)")
    parser.add_argument("--model", default="gpt-4o", help="judge model; gpt-4o means gpt-4o-2024-08-06")
    parser.add_argument("--print-prompt", action="store_true",
                        help="print the judge prompt for one case (the --question* flags) and exit; no API call")
    parser.add_argument("--question-type", help="question_type of the one case")
    parser.add_argument("--question-id", help="question_id of the one case ('_abs' in it means abstention)")
    parser.add_argument("--question", help="question text of the one case")
    parser.add_argument("--answer", help="gold answer of the one case")
    parser.add_argument("--hypothesis", help="model response of the one case")
    parser.add_argument("--hyp-file", type=Path, help="JSONL of {question_id, hypothesis} (upstream format)")
    parser.add_argument("--ref-file", type=Path, help="the LongMemEval data file the hypotheses answer")
    parser.add_argument("--out", type=Path, default=None,
                        help="output JSONL (default: <hyp-file>.eval-results-<model>, as upstream)")
    parser.add_argument("--repeat", type=int, default=1, metavar="K",
                        help="judge each hypothesis K times (the first verdict is the label); counts go to the "
                             "project's .longmemeval-benchmarks/judge-stability.jsonl")
    cli_parser.add_project_argument(parser, "project root whose verdict archive and call cache are used and whose "
                                            "stability registry is written (default: .)")
    parser.add_argument("--concurrency", type=int, default=None, metavar="N",
                        help="judge N lines at once under the runs' pacer (default: the project's "
                             "concurrency, else 8; 1 = one call at a time, as upstream); the output is the same, in "
                             "the input's order")
    parser.add_argument("--no-cache", action="store_true",
                        help="do not read the call cache (replies are still stored in it)")
    parser.add_argument("--successor", metavar="PROVIDER:MODEL",
                        help="when the official judge answers 404 / 410, judge the lines the verdict archive lacks "
                             "with this model (e.g. openai:o3-mini): written to <out>.successor.jsonl, labelled, "
                             "never official (default: config successorJudge)")
    return parser


def _print_prompt(args: argparse.Namespace) -> int:
    """``--print-prompt``: the judge prompt of the one case on stdout, the call settings on stderr; no API call."""
    missing = [f for f in ("question_type", "question_id", "question", "answer", "hypothesis")
               if getattr(args, f) is None]
    if missing:
        raise UserError(f"--print-prompt needs {', '.join('--' + m.replace('_', '-') for m in missing)}")
    builder = load_prompt_builder(args.longmemeval_root)
    prompt = build_prompt(builder, args.question_type, args.question, args.answer, args.hypothesis,
                          abstention=is_abstention(args.question_id), question_id=args.question_id)
    request = judge_request(prompt, args.provider, args.model)
    print(prompt)
    print(f"model {request.model}, {request.max_tokens_field} {request.max_tokens}, temperature "
          f"{request.temperature}, n {request.n}; prompt function is upstream's: {builder.is_upstream}",
          file=sys.stderr)
    return 0


def _judge_hyp_file(args: argparse.Namespace) -> int:
    """``--hyp-file``: judge the file, print the figures as JSON (and the verdict counts on stderr when a
    successor judged some lines)."""
    load_prompt_builder(args.longmemeval_root)  # a missing checkout is reported before anything is read
    out = args.out or Path(f"{args.hyp_file}.eval-results-{args.model}")
    project = args.project.resolve()
    options, cfg, successor_judge = _file_options(args, project)
    counts: dict[str, int] = {}
    try:
        correct, judged = judge_file(args.hyp_file, args.ref_file, out, options, counts=counts,
                                     make_llm=lambda: file_gateway(project, cfg, options.concurrency,
                                                                   read_cache=not args.no_cache))
    except ProviderError as err:
        raise _stopped(err, args, out, kept_in_cache=cfg.get("cacheEnabled", True)) from None
    result = {"judged": judged, "correct": correct, "accuracy": round(correct / judged, 4) if judged else None,
              "out": str(out), "verdicts": counts}
    if counts.get("successor"):
        calibration = options.calibration
        result["successor_out"] = str(successor_path(out))
        result["successor"] = successor_judge
        result["calibration"] = calibration or "uncalibrated"
        print(verdict_sources.describe(counts, successor=successor_judge, calibration=(
            agreement.describe(calibration) if calibration else None)), file=sys.stderr)
    print(json.dumps(result))
    return 0


def _file_options(args: argparse.Namespace, project: Path) -> tuple[FileJudgeOptions, dict, str | None]:
    """(how the file is judged, the project's config, the successor judge as ``provider:model`` or None)."""
    registry = StabilityRegistry(project) if args.repeat > 1 else None
    cfg = project_config(project)
    concurrency = args.concurrency or max(1, int(cfg.get("concurrency", 8)))
    named = tuple(cfg.get("providers") or {})
    successor_judge = successor_spec(args.successor or cfg.get("successorJudge"), named, args.provider,
                                     resolve_judge_model(args.model), explicit=bool(args.successor))
    successor = None if successor_judge is None else tuple(successor_judge.split(":", 1))
    effort = reasoning_effort(cfg.get("judgeReasoningEffort"))
    calibration = None if successor is None else agreement.compact(agreement.latest(
        project, successor[0], successor[1], shape=shape_for(successor[0], successor[1], effort).to_dict()))
    in_project = (project / STATE_DIR).is_dir()  # a file judged outside a project leaves no archive behind
    options = FileJudgeOptions(args.longmemeval_root, args.provider, args.model,
                               archive=verdict_archive.for_project(project), repeat=args.repeat, registry=registry,
                               concurrency=concurrency, successor=successor, reasoning_effort=effort,
                               calibration=calibration,
                               archive_as=f"judge_shim {args.hyp_file.name}" if in_project else None)
    return options, cfg, successor_judge


def _stopped(err: ProviderError, args: argparse.Namespace, out: Path, *, kept_in_cache: bool) -> UserError:
    """The one line for a judge that stopped the file: nothing was written, ``out`` is as it was."""
    if model_mismatch(err):
        return UserError(f"judging stopped at the first judge response naming another model: {err}; nothing was "
                         f"written, {out} is as it was (that reply was not cached)")
    if official_judge_gone(err, args.provider, args.model):
        return UserError(f"judging stopped: {CONTINUITY_HINT}; nothing was written, {out} is as it was")
    kept = ("; the verdicts already received are in the call cache: a re-run does not pay for them again"
            if kept_in_cache else "")
    return UserError(f"judging stopped ({err.kind}): {err}; nothing was written, {out} is as it was{kept}")
