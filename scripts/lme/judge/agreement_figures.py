"""The figures of a judge calibration: Cohen's kappa and its 95% interval, agreement per type, the confusion matrix
overall, per type, on the abstention items and per hypothesis source (the rates ``score/official_estimate``
corrects a successor's figure with), the flipped prompts, and the sha256 of the verdict set compared
(``judge_agreement`` measures; ``run_comparison`` compares two judges with the same kappa).
"""

from __future__ import annotations

import hashlib
from typing import Any, Iterable, Mapping, Sequence

from lme.core.facts import QUESTION_TYPES, is_abstention


def cohens_kappa(a: int, b: int, c: int, d: int) -> float | None:
    """Kappa of a 2x2 table (a: both true, b: official true / candidate false, c: official false / candidate true,
    d: both false); None when chance agreement is 1 (every label the same on both sides)."""
    n = a + b + c + d
    if n == 0:
        return None
    observed = (a + d) / n
    chance = ((a + b) / n) * ((a + c) / n) + ((c + d) / n) * ((b + d) / n)
    return None if chance >= 1.0 else (observed - chance) / (1.0 - chance)


KAPPA_Z = 1.959963984540054
"""The normal quantile of a two-sided 95% interval."""


def kappa_interval(a: int, b: int, c: int, d: int) -> list[float] | None:
    """The 95% interval of Cohen's kappa of a 2x2 table (the cells as in ``cohens_kappa``): kappa +- 1.96 times its
    large-sample standard error (Fleiss, Cohen & Everitt 1969), clipped to [-1, 1]; None when kappa is undefined."""
    kappa = cohens_kappa(a, b, c, d)
    n = a + b + c + d
    if kappa is None or n == 0:
        return None
    p = [[a / n, b / n], [c / n, d / n]]  # rows: official true/false; columns: candidate true/false
    rows = [p[0][0] + p[0][1], p[1][0] + p[1][1]]
    cols = [p[0][0] + p[1][0], p[0][1] + p[1][1]]
    chance = rows[0] * cols[0] + rows[1] * cols[1]
    diagonal = sum(p[i][i] * (1 - (rows[i] + cols[i]) * (1 - kappa)) ** 2 for i in (0, 1))
    off = (1 - kappa) ** 2 * sum(p[i][j] * (cols[i] + rows[j]) ** 2 for i in (0, 1) for j in (0, 1) if i != j)
    variance = max(0.0, (diagonal + off - (kappa - chance * (1 - kappa)) ** 2) / (n * (1 - chance) ** 2))
    half = KAPPA_Z * variance ** 0.5
    return [max(-1.0, kappa - half), min(1.0, kappa + half)]


def _cells(pairs: Sequence[Mapping[str, Any]]) -> tuple[int, int, int, int]:
    a = sum(1 for p in pairs if p["official"] and p["candidate"])
    b = sum(1 for p in pairs if p["official"] and not p["candidate"])
    c = sum(1 for p in pairs if not p["official"] and p["candidate"])
    return a, b, c, len(pairs) - a - b - c


CONFUSION_CELLS = ("official_true_candidate_true", "official_true_candidate_false", "official_false_candidate_true",
                   "official_false_candidate_false")
"""The confusion matrix's cells, in ``_cells``' order (a, b, c, d)."""


def confusion(pairs: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """The 2x2 table of ``pairs`` by ``CONFUSION_CELLS``."""
    return dict(zip(CONFUSION_CELLS, _cells(pairs)))


def _stratum(pairs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``{n, agree, confusion}`` of a subset of the pairs (the abstention items, one hypothesis source)."""
    table = confusion(pairs)
    return {"n": len(pairs), "agree": table[CONFUSION_CELLS[0]] + table[CONFUSION_CELLS[3]], "confusion": table}


def _grouped(pairs: Iterable[Mapping[str, Any]], key: str, missing: str) -> dict[str, list[Mapping[str, Any]]]:
    grouped: dict[str, list[Mapping[str, Any]]] = {}
    for p in pairs:
        grouped.setdefault(str(p.get(key) or missing), []).append(p)
    return grouped


def by_source(pairs: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """``{n, agree, confusion, per_type: {type: {n, agree, confusion}}}`` per hypothesis source: the run (or archive
    line's ``source``) whose answers the official judge judged (``unrecorded`` without one), sorted by source."""
    grouped = _grouped(pairs, "source", "unrecorded")
    out = {}
    for source in sorted(grouped):
        types = _grouped(grouped[source], "question_type", "None")
        out[source] = {**_stratum(grouped[source]),
                       "per_type": {t: _stratum(types[t]) for t in [*QUESTION_TYPES, *sorted(types)] if t in types}}
    return out


def verdict_set_sha256(pairs: Iterable[Mapping[str, Any]]) -> str:
    """sha256 of the official verdicts a measurement compared (each prompt's sha256 and label, sorted): two
    calibrations on the same verdicts have the same one."""
    lines = sorted(f"{p.get('prompt_sha256')} {bool(p['official'])}" for p in pairs)
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()


FLIP_FIELDS = ("question_id", "hypothesis_sha256", "prompt_sha256", "question_type", "official", "candidate",
               "candidate_raw")
"""A flip names the prompt: the question and the sha256 of the hypothesis (two runs may answer one question)."""


def agreement_report(pairs: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Figures over ``{question_id, hypothesis_sha256, prompt_sha256, question_type, source, official (bool),
    candidate (bool), ...}`` pairs: agreement, Cohen's kappa with its 95% interval, the confusion matrix (overall,
    per type, on the abstention items, per hypothesis source), flips."""
    pairs = list(pairs)
    a, b, c, d = _cells(pairs)
    table = confusion(pairs)
    per_type: dict[str, dict[str, Any]] = {}
    by_type: dict[str, list[Mapping[str, Any]]] = {}
    flips = []
    for p in pairs:
        off, cand = bool(p["official"]), bool(p["candidate"])
        by_type.setdefault(str(p.get("question_type")), []).append(p)
        t = per_type.setdefault(str(p.get("question_type")), {"n": 0, "agree": 0, "to_true": 0, "to_false": 0})
        t["n"] += 1
        if off == cand:
            t["agree"] += 1
        else:
            t["to_true" if cand else "to_false"] += 1
            flips.append({k: p.get(k) for k in FLIP_FIELDS})
    for qtype, t in per_type.items():
        t["agreement"] = t["agree"] / t["n"] if t["n"] else None
        t["kappa"] = cohens_kappa(*_cells(by_type[qtype]))
        t["confusion"] = confusion(by_type[qtype])
    n = len(pairs)
    agree = a + d
    ordered = {t: per_type[t] for t in [*QUESTION_TYPES, *sorted(per_type)] if t in per_type}
    return {
        "n": n, "agree": agree, "agreement": agree / n if n else None,
        "kappa": cohens_kappa(a, b, c, d), "kappa_ci95": kappa_interval(a, b, c, d), "confusion": table,
        "per_type": ordered,
        "abstention": _stratum([p for p in pairs if is_abstention(str(p.get("question_id")))]),
        "per_source": by_source(pairs), "verdict_set_sha256": verdict_set_sha256(pairs),
        "flips": sorted(flips, key=lambda f: (str(f["question_id"]), str(f.get("hypothesis_sha256")))),
    }
