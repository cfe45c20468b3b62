"""A stand-in for the user's LongMemEval checkout, for tests: ``src/evaluation/evaluate_qa.py`` in our own words.

It has the shape that matters to ``judge_shim``: top-level imports of heavy packages, a ``__main__`` block, and a
``get_anscheck_prompt(task, question, answer, response, abstention=False)`` with the five prompt cases and a
NotImplementedError for unknown types. The module also fails at import time (``import this_module_does_not_exist``
and a ``raise``) so a test proves that judge_shim loads only the function. Wording is ours, never upstream's.
"""

from __future__ import annotations

from pathlib import Path

STANDIN_TEMPLATES = {
    "generic": "STANDIN generic: Q={} A={} R={}",
    "temporal-reasoning": "STANDIN temporal, off-by-one is fine: Q={} A={} R={}",
    "knowledge-update": "STANDIN update, older facts alongside are fine: Q={} A={} R={}",
    "single-session-preference": "STANDIN preference rubric: Q={} A={} R={}",
    "abstention": "STANDIN abstention, say it cannot be answered: Q={} A={} R={}",
}
GENERIC_TYPES = ("single-session-user", "single-session-assistant", "multi-session")

_FUNCTION = '''
def get_anscheck_prompt(task, question, answer, response, abstention=False):
    if abstention:
        return {abstention!r}.format(question, answer, response)
    if task in {generic_types!r}:
        template = {generic!r}
    elif task == 'temporal-reasoning':
        template = {temporal!r}
    elif task == 'knowledge-update':
        template = {update!r}
    elif task == 'single-session-preference':
        template = {preference!r}
    else:
        raise NotImplementedError
    return template.format(question, answer, response)
'''

_MODULE = '''import os
import sys
import json
from tqdm import tqdm
import backoff
import openai
import numpy as np
import this_module_does_not_exist

raise RuntimeError("STANDIN: this module must never be imported or executed as a whole")

model_zoo = {{'gpt-4o': ('gpt-4o-2024-08-06', 'openai')}}


def helper_that_must_not_be_loaded():
    raise RuntimeError("STANDIN: only get_anscheck_prompt may be loaded")

{function}

if __name__ == '__main__':
    raise SystemExit("STANDIN main block must not run")
'''


def standin_prompt(task: str, question: str, answer: object, response: str, abstention: bool = False) -> str:
    """What the stand-in's ``get_anscheck_prompt`` returns, computed here independently for expected values."""
    if abstention:
        return STANDIN_TEMPLATES["abstention"].format(question, answer, response)
    key = "generic" if task in GENERIC_TYPES else task
    if key not in STANDIN_TEMPLATES:
        raise NotImplementedError(task)
    return STANDIN_TEMPLATES[key].format(question, answer, response)


def standin_source(*, with_function: bool = True) -> str:
    function = _FUNCTION.format(
        abstention=STANDIN_TEMPLATES["abstention"],
        generic_types=list(GENERIC_TYPES),
        generic=STANDIN_TEMPLATES["generic"],
        temporal=STANDIN_TEMPLATES["temporal-reasoning"],
        update=STANDIN_TEMPLATES["knowledge-update"],
        preference=STANDIN_TEMPLATES["single-session-preference"],
    )
    return _MODULE.format(function=function if with_function else "")


def make_upstream_tree(tmp_path: Path, *, with_function: bool = True) -> Path:
    """Write ``<tmp_path>/LongMemEval/src/evaluation/evaluate_qa.py`` (the stand-in) and return the tree's root."""
    root = Path(tmp_path) / "LongMemEval"
    target = root / "src" / "evaluation" / "evaluate_qa.py"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(standin_source(with_function=with_function), encoding="utf-8")
    return root


def standin_print_qa_metrics(in_file: Path, ref_file: Path) -> dict[str, float]:
    """What upstream's ``print_qa_metrics.py`` does with an eval-results file, in our own code: every line must name
    the official snapshot as its judge (upstream asserts it: any other model fails the script), then means per
    type, overall and over abstention ids. Returns ``{type: mean, "overall": mean}``; raises AssertionError where
    upstream's script fails."""
    import json

    types = {x["question_id"]: x["question_type"] for x in json.loads(Path(ref_file).read_text())}
    by_type: dict[str, list[int]] = {}
    for raw in Path(in_file).read_text().splitlines():
        entry = json.loads(raw)
        assert entry["autoeval_label"]["model"] == "gpt-4o-2024-08-06"
        by_type.setdefault(types[entry["question_id"]], []).append(1 if entry["autoeval_label"]["label"] else 0)
    every = [v for vs in by_type.values() for v in vs]
    out = {t: sum(v) / len(v) for t, v in by_type.items()}
    out["overall"] = sum(every) / len(every) if every else float("nan")
    return out
