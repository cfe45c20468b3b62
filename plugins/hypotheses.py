"""Target ``hypotheses``: answers your own stack already wrote to a file, judged as a run.

    python scripts/run_benchmark.py --hypotheses hyps.jsonl       # upstream's {"question_id", "hypothesis"} lines

Options (``--hypotheses`` sets both): ``file`` (the path) and ``sha256`` (its bytes when the run started). This is
the one target keyed by question id (the run driver calls ``answer``, not ``generate``): the answers were written
before the run and no model here sees the id. A question the file has no line for is an error row of kind
``missing_hypothesis``. Each hypothesis is judged exactly as written (not stripped), as upstream's evaluate_qa.py
judges a file. No model call is made here: generation costs nothing. Reading and checking the file:
``scripts/lme/data/hypotheses_file.py``.
"""

from __future__ import annotations

from typing import Any, Mapping

from lme.data import hypotheses_file
from lme.targets import ChatRequest, Hypothesis, PublicItem, TargetContext, TargetError
from lme.core.facts import HYPOTHESES_TARGET

NAME = HYPOTHESES_TARGET
DRY_RUN_ASSUMPTIONS = "no generation calls: the answers are read from the file"


class MissingHypothesis(TargetError):
    kind = hypotheses_file.MISSING_HYPOTHESIS


def _file(options: Mapping[str, Any]) -> hypotheses_file.HypothesesFile:
    if not options.get("file"):
        raise ValueError("the hypotheses target needs option file=PATH: run run_benchmark.py --hypotheses FILE")
    return hypotheses_file.load(str(options["file"]))


def describe(options: Mapping[str, Any]) -> dict[str, Any]:
    hf = _file(options)
    return {"name": NAME, "model": "none (answers read from a file)", "file": hf.path, "sha256": hf.sha256,
            "hypotheses": len(hf.hypotheses)}


def prepare_requests(item: PublicItem, ctx: TargetContext) -> list[ChatRequest]:
    return []  # no model calls


def generate(item: PublicItem, ctx: TargetContext) -> Hypothesis:
    raise TargetError("target hypotheses answers by question id: run it with run_benchmark.py --hypotheses FILE")


def answer(question_id: str, ctx: TargetContext) -> Hypothesis:
    """The file's hypothesis for ``question_id``; MissingHypothesis when it has none."""
    hf = _file(ctx.options)
    recorded = ctx.options.get("sha256")
    if recorded and recorded != hf.sha256:  # a resume is refused up front; this is a change during the run
        raise TargetError(f"hypotheses file {hf.path} changed during the run (sha256 {hf.sha256[:12]}, the run's "
                          f"{str(recorded)[:12]}); restore it and resume")
    if question_id not in hf.hypotheses:
        raise MissingHypothesis(f"no hypothesis for this question in {hf.path}")
    return Hypothesis(hypothesis=hf.hypotheses[question_id], debug={"record": hf.record_of[question_id]})


def preview(question_id: str, options: Mapping[str, Any]) -> str | None:
    """The hypothesis the run will judge for ``question_id`` (dry runs size the judge call with it), or None."""
    return _file(options).hypotheses.get(question_id)
