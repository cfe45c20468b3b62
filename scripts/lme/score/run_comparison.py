"""Two runs compared question by question: fixes, regressions, net change and an exact McNemar p-value.

The comparison ``compare_runs.py`` prints and the diff page (``report_html.build_compare``) draws. Which items its
figures count, which are named apart (``not_compared``) and which runs are refused: ``references/SPEC.md``,
"Comparing runs". Two runs of the same hypotheses with different judges are a judge comparison
(``judge_comparison``): the judges' label agreement and Cohen's kappa.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Mapping, Sequence

from lme.data import dataset_label
from lme.judge import stability
from lme.score import code_versions
from lme.score import metrics
from lme.score import run_differences
from lme.score.comparison_record import (ChangedItem, Comparison, FlakyFlips, LabelAgreement, NotCompared, RunSide,
                                         TypeChange)
from lme.store import run_store
from lme.store.run_store import RunData, load_run
from lme.core import schemas
from lme.core.errors import UserError
from lme.core.facts import QUESTION_TYPES, SCHEMA_VERSIONS, is_official_judge
from lme.judge.agreement_figures import cohens_kappa
from lme.core.run_records import ResultRow, label_of


def mcnemar_exact_p(b: int, c: int) -> float:
    """Two-sided exact McNemar (binomial, p=1/2) p-value on the discordant counts ``b`` and ``c``."""
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1))
    return float(min(Fraction(1), Fraction(2 * tail, 2**n)))


def _judge_id(run: RunData) -> tuple[Any, Any]:
    """The official snapshot is one judge, through OpenAI or Azure."""
    provider, model = run.judge.provider, run.judge.model
    return ("official", model) if is_official_judge(provider, model) else (provider, model)


JUDGE_DIFFERS = "judge differs"


def _mismatches(a: RunData, b: RunData) -> list[str]:
    problems = []
    if _judge_id(a) != _judge_id(b):
        problems.append(f"{JUDGE_DIFFERS}: {a.judge.to_dict()} vs {b.judge.to_dict()}")
    if a.dataset_sha256 != b.dataset_sha256:
        problems.append(f"dataset sha256 differs: {a.dataset_sha256} vs {b.dataset_sha256}")
    return problems


def _side(run: RunData) -> RunSide:
    return RunSide(path=str(run.path), run_id=run.run_id, status=run.meta.status, judge=run.judge,
                   dataset_sha256=run.dataset_sha256,
                   dataset=dataset_label.recognition_line(run.meta.dataset.to_dict()), n_total=run.n_total)


def _state(row: ResultRow | None) -> str:
    return "not_run" if row is None else row.status


def differing_hypotheses(a: RunData, b: RunData, common: Sequence[str]) -> list[str]:
    """The common question ids whose hypothesis differs between the runs (an item without a row has none)."""
    return [qid for qid in common if _hypothesis(a.rows.get(qid)) != _hypothesis(b.rows.get(qid))]


def _hypothesis(row: ResultRow | None) -> str | None:
    return None if row is None else row.hypothesis


@dataclass(frozen=True)
class _RunPair:
    """The two runs loaded, each item's question type, the items both item sets hold (in run A's order), the
    items both runs judged (the comparison's figures) and the others, by why."""

    a: RunData
    b: RunData
    types_a: Mapping[str, str]
    types_b: Mapping[str, str]
    common: tuple[str, ...]
    compared: tuple[str, ...]
    not_compared: NotCompared

    @classmethod
    def load(cls, run_a: Path, run_b: Path) -> "_RunPair":
        a, b = load_run(Path(run_a)), load_run(Path(run_b))
        types_a, _ = a.item_types()
        types_b, _ = b.item_types()
        union = [*types_a, *(q for q in types_b if q not in types_a)]
        sides = {q: (_state(a.rows.get(q) if q in types_a else None), _state(b.rows.get(q) if q in types_b else None))
                 for q in union}
        return cls(a, b, types_a, types_b, tuple(qid for qid in types_a if qid in types_b),
                   tuple(q for q in union if sides[q] == ("judged", "judged")), _not_compared(sides))


_WHY_NOT = {("judged", "not_run"): "judged_only_in_a", ("not_run", "judged"): "judged_only_in_b",
            ("error", "judged"): "error_in_a", ("judged", "error"): "error_in_b"}
"""(A's state, B's state) -> why the item is not compared; any other pair but judged in both: judged in neither."""


def _not_compared(sides: Mapping[str, tuple[str, str]]) -> NotCompared:
    named: dict[str, list[str]] = {}
    for qid, pair in sides.items():
        if pair != ("judged", "judged"):
            named.setdefault(_WHY_NOT.get(pair, "judged_in_neither"), []).append(qid)
    return NotCompared(**{key: tuple(ids) for key, ids in named.items()})


@dataclass(frozen=True)
class _Tally:
    """The per-question counts: all items (``overall``), per question type, and the flipped items in order."""

    overall: Mapping[str, int]
    per_type: Mapping[str, Mapping[str, int]]
    changed: tuple[ChangedItem, ...]


_OUTCOME = {(False, True): "fixes", (True, False): "regressions", (True, True): "both_right",
            (False, False): "both_wrong"}
"""(right before, right after) -> the count it adds to."""


def compare(run_a: Path, run_b: Path, *, force: bool = False, judge_comparison: bool = False) -> Comparison:
    """Raises UserError when the judge or the dataset sha256 differ, unless ``force`` (then ``forced`` is true
    and ``mismatches`` lists what differs). Runs with the same hypotheses on every common item and different
    judges are a judge comparison (``kind: "judge"``, with ``judge_agreement``): given ``judge_comparison`` or
    ``force``, the judge is then not a mismatch. ``judge_comparison`` on runs whose hypotheses differ is refused.
    """
    pair = _RunPair.load(run_a, run_b)
    kind, mismatches = _kind_and_mismatches(pair, force=force, judge_comparison=judge_comparison)
    agreement = _label_agreement(pair.a, pair.b, pair.common) if kind == "judge" else None
    result = _result(pair, kind, mismatches, _tally(pair), agreement)
    schemas.validate("comparison", result.to_dict(), where=f"comparison of {pair.a.path} and {pair.b.path}")
    return result


def _kind_and_mismatches(pair: _RunPair, *, force: bool, judge_comparison: bool) -> tuple[str, list[str]]:
    """``runs`` or ``judge``, and what differs between how the runs were made; refuses unlike runs unless
    ``force``, and a judge comparison of runs whose hypotheses differ."""
    a, b, common = pair.a, pair.b, pair.common
    mismatches = _mismatches(a, b)
    differing = differing_hypotheses(a, b, common)
    judge_differs = any(m.startswith(JUDGE_DIFFERS) for m in mismatches)
    if judge_comparison and (differing or not common):
        raise UserError(f"{a.path} and {b.path} are not a judge comparison: "
                        + (f"{len(differing)} of {len(common)} common questions have different hypotheses (first: "
                           f"{differing[0]})" if differing else "they have no question in common"),
                        fix="compare two runs of the same hypotheses (run_benchmark.py --hypotheses FILE, judged "
                            "twice), or drop --judge-comparison")
    kind = "judge" if common and not differing and (judge_differs or judge_comparison) else "runs"
    if kind == "judge" and (judge_comparison or force):
        mismatches = [m for m in mismatches if not m.startswith(JUDGE_DIFFERS)]
    if mismatches and not force:
        hint = ("; the hypotheses are the same: pass --judge-comparison to compare the two judges"
                if kind == "judge" else "")
        raise UserError(f"refusing to compare {a.path} with {b.path}: {'; '.join(mismatches)}{hint}",
                        fix="compare runs made the same way, or pass --force to compare anyway")
    return kind, mismatches


def _empty_bucket() -> dict[str, int]:
    return {"n": 0, "fixes": 0, "regressions": 0, "net": 0, "both_right": 0, "both_wrong": 0}


def _tally(pair: _RunPair) -> _Tally:
    flaky_a, flaky_b = _flaky_keys(pair.a), _flaky_keys(pair.b)
    per_type = {t: _empty_bucket() for t in QUESTION_TYPES}
    overall = {"fixes": 0, "regressions": 0, "both_right": 0, "both_wrong": 0}
    changed = []
    for qid in pair.compared:
        qtype = pair.types_a.get(qid) or pair.types_b[qid]
        row_a, row_b = pair.a.rows.get(qid), pair.b.rows.get(qid)
        before = row_a is not None and row_a.correct
        after = row_b is not None and row_b.correct
        key = _OUTCOME[(before, after)]
        overall[key] += 1
        bucket = per_type.setdefault(qtype, _empty_bucket())
        bucket["n"] += 1
        bucket[key] += 1
        if before != after:
            flaky = stability.row_is_unstable(row_a, flaky_a) or stability.row_is_unstable(row_b, flaky_b)
            changed.append(ChangedItem(qid, qtype, before, after, flaky, before_status=_state(row_a),
                                       after_status=_state(row_b), hypothesis_before=_hypothesis(row_a),
                                       hypothesis_after=_hypothesis(row_b)))
    for bucket in per_type.values():
        bucket["net"] = bucket["fixes"] - bucket["regressions"]
    return _Tally(overall, per_type, tuple(changed))


def _flaky_flips(tally: _Tally) -> FlakyFlips:
    flaky = [c for c in tally.changed if c.flaky]
    fixes = sum(1 for c in flaky if c.after)
    return FlakyFlips(fixes=fixes, regressions=len(flaky) - fixes, net=fixes - (len(flaky) - fixes),
                      ids=tuple(c.question_id for c in flaky))


def _result(pair: _RunPair, kind: str, mismatches: list[str], tally: _Tally,
            agreement: LabelAgreement | None) -> Comparison:
    n, overall = len(pair.compared), tally.overall
    code = code_versions.change(pair.a, pair.b, pair.compared)
    net = overall["fixes"] - overall["regressions"]
    flaky_flips = _flaky_flips(tally)
    return Comparison(
        schema_version=SCHEMA_VERSIONS["comparison"], kind=kind, run_a=_side(pair.a), run_b=_side(pair.b),
        forced=bool(mismatches), mismatches=tuple(mismatches),
        differences=tuple(run_differences.differences(pair.a.meta, pair.b.meta, code)), n_compared=n,
        only_in_a=tuple(qid for qid in pair.types_a if qid not in pair.types_b),
        only_in_b=tuple(qid for qid in pair.types_b if qid not in pair.types_a),
        accuracy_a=(overall["both_right"] + overall["regressions"]) / n if n else None,
        accuracy_b=(overall["both_right"] + overall["fixes"]) / n if n else None,
        fixes=overall["fixes"], regressions=overall["regressions"], net=net, both_right=overall["both_right"],
        both_wrong=overall["both_wrong"], p_value=mcnemar_exact_p(overall["regressions"], overall["fixes"]),
        flaky_flips=flaky_flips, net_excluding_flaky=net - flaky_flips.net,
        per_type={t: TypeChange(**bucket) for t, bucket in tally.per_type.items()}, changed=tally.changed,
        judge_agreement=agreement, not_compared=pair.not_compared, code=code)


def _label_agreement(a: RunData, b: RunData, common: Sequence[str]) -> LabelAgreement:
    """How often judge B gives judge A's label, over the items both judged (the same hypotheses)."""
    table = {(True, True): 0, (True, False): 0, (False, True): 0, (False, False): 0}
    for qid in common:
        la, lb = label_of(a.rows.get(qid)), label_of(b.rows.get(qid))
        if la is not None and lb is not None:
            table[(bool(la), bool(lb))] += 1
    n = sum(table.values())
    agree = table[(True, True)] + table[(False, False)]
    return LabelAgreement(n=n, agree=agree, agreement=agree / n if n else None, kappa=cohens_kappa(*table.values()),
                          a_yes_b_no=table[(True, False)], a_no_b_yes=table[(False, True)])


def _flaky_keys(run: RunData) -> set:
    """Prompts the registry of the run's project (``run_store.scoring_project``) marks flaky (stability.jsonl);
    empty when it has none."""
    project = run_store.scoring_project(run.path)
    return set() if project is None else stability.StabilityRegistry(project).flaky()


def _cell(change: ChangedItem, side: str) -> str:
    """A side's hypothesis (``before`` or ``after``), or its state when it has none to show (``not_run``, an
    error)."""
    text = _short(change.hypothesis_before if side == "before" else change.hypothesis_after)
    state = change.before_status if side == "before" else change.after_status
    return text if text or state in (None, "judged") else f"({state})"


def _short(text: Any, width: int = 80) -> str:
    s = "" if text is None else " ".join(str(text).split())
    s = s.replace("|", "\\|")
    return s if len(s) <= width else s[: width - 1] + "…"


def render_markdown(result: Comparison) -> str:
    """The comparison as a Markdown report (the items not compared named by why)."""
    a, b = result.run_a, result.run_b
    lines = [f"# Comparison: {a.run_id} (before) -> {b.run_id} (after)", ""]
    if result.is_judge_comparison:
        lines += [f"> **{judge_comparison_line(result)}**", ""]
    if result.forced:
        lines += ["> **FORCED comparison of runs made differently — not a like-for-like result:**"]
        lines += [f"> - {m}" for m in result.mismatches]
        lines.append("")
    lines += [
        f"Items compared: {result.n_compared} (those both runs judged)",
        f"Runs: {run_differences.describe_runs(result)}",
        f"Accuracy on those items: {metrics.fmt(result.accuracy_a)} -> {metrics.fmt(result.accuracy_b)}",
        f"Fixes (wrong -> right): {result.fixes}; regressions (right -> wrong): {result.regressions}; "
        f"net {result.net:+d}",
        f"Unchanged: {result.both_right} both right, {result.both_wrong} both wrong",
        f"Exact McNemar p-value (two-sided): {result.p_value:.4g}",
        "",
    ]
    flaky = result.flaky_flips
    if flaky.ids:
        lines += [f"Flips on unstable judge labels (counted above, and here on their own): {flaky.fixes} fixes, "
                  f"{flaky.regressions} regressions ({', '.join(flaky.ids)}); net without them "
                  f"{result.net_excluding_flaky:+d}", ""]
    outside = result.not_compared
    if outside.n:
        lines += [f"Not compared (outside every figure above): {outside.describe()}.", ""]
        for why, ids in outside.by_why():
            lines.append(f"- {why}: {', '.join(ids[:20])}" + (f" and {len(ids) - 20} more" if len(ids) > 20 else ""))
        lines.append("")
    lines += ["| type | n | fixes | regressions | net |", "|---|---:|---:|---:|---:|"]
    for qtype, t in result.per_type.items():
        lines.append(f"| {qtype} | {t.n} | {t.fixes} | {t.regressions} | {t.net:+d} |")
    if result.changed:
        lines += ["", "## Changed questions", "", "| question_id | type | change | before | after |",
                  "|---|---|---|---|---|"]
        for c in result.changed:
            change = ("fix" if c.after else "regression") + (" (unstable label)" if c.flaky else "")
            lines.append(f"| {c.question_id} | {c.question_type} | {change} | "
                         f"{_cell(c, 'before')} | {_cell(c, 'after')} |")
    return "\n".join(lines) + "\n"


def judge_comparison_line(result: Comparison) -> str:
    """What a judge comparison is, with its agreement figures (one line of plain text)."""
    a, b, agr = result.run_a, result.run_b, result.judge_agreement
    assert agr is not None, "a judge comparison carries its label agreement"
    judge = lambda run: f"{run.judge.provider} {run.judge.model}"  # noqa: E731
    kappa = "undefined" if agr.kappa is None else f"{agr.kappa:.3f}"
    return (f"Judge comparison: the same hypotheses judged by {judge(a)} (before) and {judge(b)} (after). "
            f"Labels agree on {agr.agree} of {agr.n} items judged by both ({metrics.fmt(agr.agreement)}, "
            f"Cohen's kappa {kappa}); yes -> no {agr.a_yes_b_no}, no -> yes {agr.a_no_b_yes}. Fixes and "
            "regressions below are the second judge's label changes, not the system's.")
