"""Exchange files with upstream LongMemEval's evaluation scripts.

The command (its parser, ``main()`` and help text) is ``lme/cli/interop.py``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from lme.data import dataset
from lme.core import bounded_json
from lme.core import fileio
from lme.core.errors import UserError
from lme.core.facts import OFFICIAL_JUDGE_MODEL
from lme.core.run_records import ResultRow
from lme.store.run_store import RunData, load_run

EVAL_SUFFIX = ".eval-results-gpt-4o"
"""Upstream names its output ``<hyp file>.eval-results-<judge alias>``; the official alias is gpt-4o."""


def _rows_in_order(run: RunData) -> Iterator[ResultRow]:
    types, _ = run.item_types()
    for qid in types:
        if qid in run.rows:
            yield run.rows[qid]


def _write_lines(out: Path, records: Sequence[Mapping[str, Any]]) -> Path:
    out = Path(out)
    fileio.make_dirs(out.parent)
    blob = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    fileio.write_atomic_bytes(out, blob.encode("utf-8"))
    return out


def export_hypotheses(run_dir: Path, out: Path) -> Path:
    """Upstream input JSONL: every row with a hypothesis (judged, or errored after generation), manifest order."""
    run = load_run(Path(run_dir))
    lines = [{"question_id": r.question_id, "hypothesis": r.hypothesis}
             for r in _rows_in_order(run) if r.hypothesis is not None]
    return _write_lines(out, lines)


def eval_results_path(hyp_file: Path) -> Path:
    hyp_file = Path(hyp_file)
    return hyp_file if hyp_file.name.endswith(EVAL_SUFFIX) else hyp_file.with_name(hyp_file.name + EVAL_SUFFIX)


def export_eval_results(run_dir: Path, out: Path) -> Path:
    """Upstream output JSONL (judged rows only, labels from our judge) at ``<out>.eval-results-gpt-4o``. A
    successor's verdicts are left out (upstream's print_qa_metrics.py accepts only gpt-4o-2024-08-06 there, and
    they are not the official judge's)."""
    run = load_run(Path(run_dir))
    lines = []
    for r in _rows_in_order(run):
        if r.label is None or r.judgment is None or r.judgment.successor:
            continue
        lines.append({"question_id": r.question_id, "hypothesis": r.hypothesis,
                      "autoeval_label": {"model": r.judgment.model, "label": r.label}})
    return _write_lines(eval_results_path(out), lines)


def export_reference(run_dir: Path, out: Path) -> Path:
    """A JSON list of ``{"question_id", "question_type"}`` for the run's items: enough for print_qa_metrics.py."""
    run = load_run(Path(run_dir))
    types, _ = run.item_types()
    out = Path(out)
    fileio.make_dirs(out.parent)
    fileio.write_atomic_json(out, [{"question_id": q, "question_type": t} for q, t in types.items()])
    return out


def _reference_types(ref: Path | Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """question_id -> question_type from a manifest (dict with ``items``), an item list, or a file of either."""
    if isinstance(ref, (str, Path)):
        path = Path(ref)
        if not path.exists():
            raise UserError(f"reference file {path} does not exist", fix="pass a dataset file or a run's manifest.json")
        if path.suffix in (".xz", ".gz"):
            return {i["question_id"]: i["question_type"] for i in dataset.iter_items(path)}
        ref = bounded_json.loads(fileio.read_bytes(path), f"reference file {path}",
                                 fix="pass a dataset file or a run's manifest.json")
    items = ref.get("items", []) if isinstance(ref, Mapping) else ref
    return {str(i["question_id"]): str(i["question_type"]) for i in items}


def import_eval_results(path: Path, dataset_or_manifest: Path | Mapping[str, Any] | Sequence[Mapping[str, Any]],
                        *, allow_unofficial: bool = False) -> tuple[dict[str, bool], dict[str, str]]:
    """``(labels, types)`` for ``metrics.score`` from an eval-results file.

    ``types`` covers every item of the reference (so the strict figure counts items the file lacks as wrong);
    the judged-only figures equal what upstream's print_qa_metrics.py prints for the file. Like upstream, a judge
    other than gpt-4o-2024-08-06 is refused unless ``allow_unofficial``.
    """
    path = Path(path)
    if not path.exists():
        raise UserError(f"eval-results file {path} does not exist", fix=f"pass a *{EVAL_SUFFIX} file")
    types = _reference_types(dataset_or_manifest)
    labels: dict[str, bool] = {}
    for number, line in enumerate(fileio.read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entry = bounded_json.loads(line, f"{path}:{number}")
            qid, auto = str(entry["question_id"]), entry["autoeval_label"]
            model, label = auto["model"], auto["label"]
        except (ValueError, KeyError, TypeError) as err:
            raise UserError(f"{path}:{number}: not an eval-results line ({err})",
                            fix="each line needs question_id and autoeval_label {model, label}") from None
        if model != OFFICIAL_JUDGE_MODEL and not allow_unofficial:
            raise UserError(f"{path}:{number}: judged by {model!r}, not {OFFICIAL_JUDGE_MODEL}",
                            fix="pass --allow-unofficial to score it anyway (not comparable)")
        if qid not in types:
            raise UserError(f"{path}:{number}: question {qid} is not in the reference",
                            fix="pass the dataset file or manifest the run used")
        labels[qid] = bool(label)
    return labels, types
