"""Group a run's failures by question type and failure mode: step A of the loop's cluster -> diagnose -> propose.

The command (its parser, ``main()`` and help text) is ``lme/cli/cluster_failures.py``."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Iterable, Mapping

from lme.data import gold_registry
from lme.judge import offline_judge
from lme.score import pipeline_health
from lme.store import run_store
from lme.score import trigger_set
from lme.core.errors import UserError
from lme.core.facts import QUESTION_TYPES, is_abstention
from lme.core.run_records import ResultRow

EXAMPLES_PER_CLUSTER = 5
_HOW_MUCH = re.compile(r"\s*how (?:many|much|long|old)\b", re.IGNORECASE)
"""'How many days between my first X and Y' is date arithmetic, whatever word follows."""
_WHICH_FIRST = re.compile(
    r"\b(?:which|what|who)\b[^?]*\b(?:first|earlier|earliest|last|later|latest|most recently)\b|"
    r"\b(?:first|earlier|last|later)\b\s*[,:]?[^?]*\bor\b",
    re.IGNORECASE,
)
_REFUSAL = re.compile(
    r"\b(i don't know|i do not know|not (?:been )?mentioned|no (?:information|mention|record)|"
    r"(?:cannot|can't|unable to) (?:determine|find|answer|tell)|not enough information|"
    r"(?:did|does|do) not (?:mention|say|specify)|there is no (?:information|mention|record))\b",
    re.IGNORECASE,
)


def load_known_gold_errors(path: Path = gold_registry.REGISTRY, variant: str | None = None,
                           release: str | None = None) -> set[str]:
    """Question ids whose gold was reported wrong or disputed upstream (a ``fixed-in-cleaned`` one only on an
    original-release file), for the run's variant; structural entries (#54) are not gold errors. Empty set if the
    registry is absent."""
    if not path.exists():
        return set()
    entries = gold_registry.load(path)
    chase_not = gold_registry.listed(entries, variant, release, ("wrong", "disputed"))
    return set(chase_not) | set(gold_registry.excluded(entries, variant, release))


def asks_which_first(question: Any) -> bool:
    """An ordering question ("Which did I do first, A or B?", "Who did I meet last?")."""
    if not isinstance(question, str) or _HOW_MUCH.match(question):
        return False
    return bool(_WHICH_FIRST.search(question))


def looks_like_refusal(hypothesis: Any) -> bool:
    return isinstance(hypothesis, str) and bool(_REFUSAL.search(hypothesis))


def says_it_cannot_answer(question_id: str, hypothesis: Any) -> bool:
    """Whether an abstention item's hypothesis refuses, by the offline judge's abstention-phrase rule."""
    if not isinstance(hypothesis, str) or not is_abstention(question_id):
        return False
    label, _why = offline_judge.decide(question_id, None, hypothesis)
    return label


def retrieval_state(row: ResultRow, top_k: int) -> str | None:
    """``hit`` (all gold in top k), ``partial``, ``miss`` (none), or None when the row has no retrieval."""
    if row.retrieval is None:
        return None
    retrieved = row.retrieval.retrieved_session_ids
    gold = [g for g in row.retrieval.gold_session_ids if g]
    if retrieved is None or not gold:
        return None
    top = set(retrieved[:top_k])
    found = sum(1 for g in gold if g in top)
    return "hit" if found == len(gold) else ("miss" if found == 0 else "partial")


def stage_marks(row: ResultRow) -> list[str]:
    """The pipeline stages the target declared on this item (``target.stages``) that did not run as meant:
    ``name status`` for each one ``skipped``, ``failed`` or ``fallback`` (memory-ref: ``reader skipped`` when its
    symbolic bypass answered), so a cluster can be pinned on a stage."""
    stages = None if row.target is None else row.target.stages
    return [f"{s.name} {s.status}" for s in stages or () if s.status != "ok"]


def failure_mode(row: ResultRow, gold_bad: set[str], top_k: int) -> str:
    qid = row.question_id
    if row.status == "error":
        return f"error:{'unknown' if row.error is None else row.error.kind}"
    if qid in gold_bad:
        return "gold_reported_bad"
    if is_abstention(qid):
        return "abstention_refused_judged_wrong" if says_it_cannot_answer(qid, row.hypothesis) \
            else "abstention_answered"
    if looks_like_refusal(row.hypothesis):
        return "refused_should_answer"
    retrieval = retrieval_state(row, top_k)
    if retrieval in ("miss", "partial"):
        return f"retrieval_{retrieval}"
    qtype = row.question_type
    if qtype == "temporal-reasoning":
        return "temporal_order" if asks_which_first(row.question) else "temporal_arithmetic"
    if qtype == "knowledge-update":
        return "stale_value"
    if qtype == "single-session-preference":
        return "preference_not_personalised"
    return "reading_error"


def cluster(
    rows: Mapping[str, ResultRow],
    types: Mapping[str, str],
    *,
    gold_bad: Iterable[str] = (),
    top_k: int = 10,
) -> dict[str, Any]:
    """Failures of a run grouped by (question type, mode), biggest cluster first.

    ``types`` is the run's item set (manifest): an id with no row at all is a failure of mode ``not_run``.
    """
    gold_bad = set(gold_bad)
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for qid, qtype in types.items():
        row = rows.get(qid)
        if row is not None and row.correct:
            continue
        mode = "not_run" if row is None else failure_mode(row, gold_bad, top_k)
        groups[(qtype, mode)].append(
            {
                "question_id": qid,
                "stages": [] if row is None else stage_marks(row),
                "hypothesis": None if row is None else row.hypothesis,
                "answer": None if row is None else row.answer,
            }
        )
    clusters = []
    for (qtype, mode), members in groups.items():
        stage_counts = Counter(mark for m in members for mark in m["stages"])
        clusters.append(
            {
                "question_type": qtype,
                "mode": mode,
                "count": len(members),
                "question_ids": [m["question_id"] for m in members],
                "examples": members[:EXAMPLES_PER_CLUSTER],
                "stages": dict(sorted(stage_counts.items())),
                "infrastructure": mode.startswith("error:") or mode == "not_run",
            }
        )
    type_rank = {t: i for i, t in enumerate(QUESTION_TYPES)}
    clusters.sort(key=lambda c: (c["infrastructure"], -c["count"], type_rank.get(c["question_type"], 99), c["mode"]))
    by_mode = Counter()
    for c in clusters:
        by_mode[c["mode"]] += c["count"]
    return {
        "n_total": len(types),
        "failures": sum(c["count"] for c in clusters),
        "top_k": top_k,
        "by_mode": dict(by_mode.most_common()),
        "clusters": clusters,
    }


def cluster_run(run_dir: Path, *, top_k: int = 10) -> dict[str, Any]:
    run_dir = Path(run_dir)
    rows = run_store.load_results(run_dir)
    manifest = run_store.read_manifest(run_dir)
    types = manifest.types() if manifest is not None else {qid: row.question_type for qid, row in rows.items()}
    meta = run_store.read_meta(run_dir) if run_store.has_meta(run_dir) else None
    gold_bad = load_known_gold_errors(variant=None if meta is None else meta.variant,
                                      release=None if meta is None else meta.dataset.release)
    result = cluster(rows, types, gold_bad=gold_bad, top_k=top_k)
    result["run"] = str(run_dir)
    result["pipeline_health"] = pipeline_health.summarise(rows[q] for q in types if q in rows).to_dict()
    result["gold_bad"] = sorted(gold_bad)
    return result


def _short(text: Any, width: int = 90) -> str:
    s = "" if text is None else " ".join(str(text).split()).replace("|", "\\|")
    return s if len(s) <= width else s[: width - 1] + "…"


def render_markdown(result: Mapping[str, Any]) -> str:
    health = result.get("pipeline_health")
    loud = pipeline_health.loud_lines(None if health is None else pipeline_health.PipelineHealth.from_dict(health))
    lines = [
        *[f"> **{line}**" for line in loud],
        *([""] if loud else []),
        f"# Failure clusters: {result['failures']} of {result['n_total']} items not correct (strict)",
        "",
        "Pick ONE cluster (not infrastructure, not gold_reported_bad), read its rows, then propose one fix "
        "(references/iteration-rules.md, steps B and C).",
        "",
        "| # | type | mode | count | stages not ok | example ids |",
        "|---|---|---|---|---|---|",
    ]
    for i, c in enumerate(result["clusters"], 1):
        layers = ", ".join(f"{k}: {v}" for k, v in c["stages"].items()) or "—"
        mode = c["mode"] + (" (infrastructure)" if c["infrastructure"] else "")
        lines.append(f"| {i} | {c['question_type']} | {mode} | {c['count']} | {layers} | {', '.join(c['question_ids'][:EXAMPLES_PER_CLUSTER])} |")
    for i, c in enumerate(result["clusters"], 1):
        if c["infrastructure"]:
            continue
        lines += ["", f"## {i}. {c['question_type']} / {c['mode']} ({c['count']})", ""]
        for ex in c["examples"]:
            lines.append(f"- `{ex['question_id']}`: said \"{_short(ex['hypothesis'])}\"; gold \"{_short(ex['answer'])}\"")
    return "\n".join(lines) + "\n"


def cluster_ids(result: Mapping[str, Any], number: int) -> list[str]:
    """The question ids of cluster ``number`` (1-based, as numbered in the Markdown): a trigger set's core.

    Infrastructure clusters (resume the run instead) and ``gold_reported_bad`` (never chase it) are refused.
    """
    clusters = result["clusters"]
    if not clusters:
        raise UserError("the run has no failures: there is no cluster to pick")
    if not 1 <= number <= len(clusters):
        raise UserError(f"no cluster {number}: the run has clusters 1 to {len(clusters)}",
                        fix="pick a number from the Markdown table")
    chosen = clusters[number - 1]
    label = f"cluster {number} ({chosen['question_type']} / {chosen['mode']})"
    if chosen["infrastructure"]:
        raise UserError(f"{label} is infrastructure, not a fix target", fix="resume the run; pick another cluster")
    if chosen["mode"] == "gold_reported_bad":
        raise UserError(f"{label} has gold answers reported wrong upstream", fix="never chase it; pick another cluster")
    return list(chosen["question_ids"])


def fair_trigger_set(run_dir: Path, result: Mapping[str, Any], number: int, *, ratio: float = 1.0,
                     seed: str = "v0") -> trigger_set.TriggerSet:
    """Cluster ``number``'s failing ids plus a seeded control sample of correct items of the same types."""
    failing = cluster_ids(result, number)
    chosen = result["clusters"][number - 1]
    rows = run_store.load_results(run_dir)
    manifest = run_store.read_manifest(run_dir)
    types = manifest.types() if manifest is not None else {qid: row.question_type for qid, row in rows.items()}
    control, shortfall = trigger_set.control_sample(rows, types, failing, ratio=ratio, seed=seed,
                                                    exclude=result.get("gold_bad") or ())
    return trigger_set.TriggerSet(tuple(failing), tuple(control), seed=seed, ratio=ratio,
                                  source=f"cluster {number} ({chosen['question_type']} / {chosen['mode']})",
                                  shortfall=shortfall)
