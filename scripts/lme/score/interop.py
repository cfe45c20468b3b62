"""Exchange files with upstream LongMemEval's evaluation scripts.

The command (its parser, ``main()`` and help text) is ``lme/cli/interop.py``."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from lme.data import dataset
from lme.data import upstream_files
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
    """``records`` as upstream's JSON lines, byte for byte (``upstream_files.upstream_bytes``)."""
    out = Path(out)
    fileio.make_dirs(out.parent)
    fileio.write_atomic_bytes(out, upstream_files.upstream_bytes(records))
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


@dataclass(frozen=True)
class EvalResults:
    """An eval-results file as upstream's print_qa_metrics.py reads it: one verdict per line, every line counted (a
    question on two lines counts twice there, where a run keeps one verdict per question)."""

    path: Path
    lines: tuple[tuple[str, bool], ...]
    """Each line's ``(question_id, label)``, in the file's order (blank lines skipped)."""
    types: Mapping[str, str]
    """question_id -> question_type for every item of the reference (the strict denominator)."""

    def duplicates(self) -> dict[str, int]:
        """The question ids on more than one line -> their number of lines, in the order first seen."""
        return {qid: n for qid, n in Counter(qid for qid, _ in self.lines).items() if n > 1}

    def summary(self) -> dict[str, Any]:
        """What the file holds, for ``--json`` (``eval_results``) and the duplicates line."""
        dups = self.duplicates()
        labels: dict[str, set[bool]] = {}
        for qid, label in self.lines:
            labels.setdefault(qid, set()).add(label)
        return {"file": str(self.path), "lines": len(self.lines), "question_ids": len(labels),
                "duplicate_lines": len(self.lines) - len(labels), "duplicated_ids": dups,
                "ids_with_different_labels": [qid for qid in dups if len(labels[qid]) > 1]}

    def scoring_input(self) -> tuple[dict[str, bool], dict[str, str]]:
        """``(labels, types)`` for ``metrics.score``, every line its own item as upstream counts them: a question's
        first line keeps its id, each further line is keyed ``<id>\\x00<its position>`` (no question id holds NUL,
        and ``is_abstention`` still sees the id). So the judged-only figures are upstream's for the same file, and
        the reference items the file lacks count as wrong in the strict ones."""
        labels: dict[str, bool] = {}
        types = dict(self.types)
        for number, (qid, label) in enumerate(self.lines, start=1):
            key = qid if qid not in labels else f"{qid}\x00{number}"
            labels[key], types[key] = label, self.types[qid]
        return labels, types


def duplicates_line(results: EvalResults, shown: int = 5) -> str:
    """``FILE holds 55 lines for 46 questions (9 duplicate lines): 4 ids are on more than one line, 2 with different
    labels: a (2 lines), ...``: the first ``shown`` ids named."""
    summary = results.summary()
    dups = summary["duplicated_ids"]
    named = ", ".join(f"{qid} ({n} lines)" for qid, n in list(dups.items())[:shown])
    more = f" and {len(dups) - shown} more" if len(dups) > shown else ""
    return (f"{results.path} holds {summary['lines']} lines for {summary['question_ids']} questions "
            f"({summary['duplicate_lines']} duplicate lines): {len(dups)} ids are on more than one line, "
            f"{len(summary['ids_with_different_labels'])} with different labels: {named}{more}")


def import_eval_results(path: Path, dataset_or_manifest: Path | Mapping[str, Any] | Sequence[Mapping[str, Any]],
                        *, allow_unofficial: bool = False, count_duplicates: bool = False) -> EvalResults:
    """An eval-results file read and checked against the reference; ``scoring_input()`` is what ``metrics.score``
    takes, and its judged-only figures equal what upstream's print_qa_metrics.py prints for the file.

    The strict figures count every item of the reference the file lacks as wrong. Like upstream, a judge other than
    gpt-4o-2024-08-06 is refused unless ``allow_unofficial``. A question on more than one line is refused (upstream
    would count each line, a run one verdict) unless ``count_duplicates``: then every line counts, as upstream's.
    """
    path = Path(path)
    if not path.exists():
        raise UserError(f"eval-results file {path} does not exist", fix=f"pass a *{EVAL_SUFFIX} file")
    types = _reference_types(dataset_or_manifest)
    lines = []
    for number, line in enumerate(upstream_files.upstream_lines(fileio.read_text(path)), start=1):
        if line.strip():
            lines.append(_verdict_of(line, f"{path}:{number}", types, allow_unofficial))
    results = EvalResults(path, tuple(lines), types)
    if results.duplicates() and not count_duplicates:
        raise UserError(f"{duplicates_line(results)}; upstream's print_qa_metrics.py counts every line, a run one "
                        "verdict per question", fix="pass --count-duplicates to count every line as upstream does")
    return results


def _verdict_of(line: str, where: str, types: Mapping[str, str], allow_unofficial: bool) -> tuple[str, bool]:
    """One eval-results line's ``(question_id, label)``; a line that is not one is a UserError naming ``where``."""
    try:
        entry = bounded_json.loads(line, where)
        qid, auto = str(entry["question_id"]), entry["autoeval_label"]
        model, label = auto["model"], auto["label"]
    except (ValueError, KeyError, TypeError) as err:
        raise UserError(f"{where}: not an eval-results line ({err})",
                        fix="each line needs question_id and autoeval_label {model, label}") from None
    if model != OFFICIAL_JUDGE_MODEL and not allow_unofficial:
        raise UserError(f"{where}: judged by {model!r}, not {OFFICIAL_JUDGE_MODEL}",
                        fix="pass --allow-unofficial to score it anyway (not comparable)")
    if qid not in types:
        raise UserError(f"{where}: question {qid} is not in the reference",
                        fix="pass the dataset file or manifest the run used")
    return qid, bool(label)
