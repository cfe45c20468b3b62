"""The scoring self-test's stored runs: two synthetic runs written and read back by the real run machinery.

``selftest_scoring`` checks the label rule and the metrics on labels given by hand; this module checks the rest
of the way from an answer to a figure, in a temporary directory it removes:

- the text the judge is given: each item goes through ``item_runner.run_item`` with a small target of our own
  (its answers padded with whitespace) or the ``hypotheses`` target (a file, judged as written), and a prompt
  builder that stands in for upstream's ``get_anscheck_prompt`` (one template per case, in our own words). A
  deterministic judge answers only the exact prompt expected for the item's type, ``_abs`` id and hypothesis;
  any other prompt, or a call with other settings than upstream's, is a failure;
- which row counts: rows appended by ``run_store`` in the run's root and in two shard folders (a question's last
  row in a file wins; across folders the later ``finished_at``), a row outside the manifest, a manifest item with
  no row at all (wrong in the strict figure);
- the figures ``scoring.build_scorecard`` makes of run A (micro, macro, abstention, strict and judged-only, the
  Wilson intervals, the figure without the registry's gold errors, retrieval metrics, ``--n-total`` beyond the
  manifest) and the comparison of A with B (fixes, regressions, the exact McNemar p-value on the items both judged,
  the others named apart).

Every expected value is written here by hand; none is computed by the code under test.
"""

from __future__ import annotations

import json
import tempfile
from fractions import Fraction as F
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from lme.core.facts import OFFICIAL_JUDGE_MODEL
from lme.core.records import ChatRequest, Completion, Question, Session, Turn
from lme.core.run_records import DatasetInfo, JudgeIdentity, Manifest, ResultRow, RunMeta, TargetInfo
from lme.models.provider_errors import ProviderError
from lme.run import item_runner
from lme.run.settings import RunSettings
from lme.score import metrics, run_comparison, scoring
from lme.score.metrics import Scored
from lme.score.scorecard_record import GoldExclusion, Retrieval, Scorecard
from lme.score.scoring_inputs import ScoringInputs
from lme.store import run_store

SSU, SSA, SSP = "single-session-user", "single-session-assistant", "single-session-preference"
MS, TR, KU = "multi-session", "temporal-reasoning", "knowledge-update"

# --------------------------------------------------------------------------- the items, by hand

ITEMS: tuple[tuple[str, str, str], ...] = (
    # (question id, question_type, the prompt case upstream's builder picks: by type, abstention by the _abs id)
    ("ssu-1", SSU, "generic"), ("ssu-2_abs", SSU, "abstention"), ("ssu-3", SSU, "generic"),
    ("ssa-1", SSA, "generic"), ("ssa-2", SSA, "generic"),
    ("ssp-1", SSP, "preference"),
    ("ms-1", MS, "generic"), ("ms-2_abs", MS, "abstention"), ("ms-3", MS, "generic"), ("ms-4_abs", MS, "abstention"),
    ("tr-1", TR, "temporal"), ("tr-2_abs", TR, "abstention"),
    ("ku-1", KU, "update"), ("ku-2", KU, "update"),
)
STRAY = ("zz-9", KU, "update")
"""A question with rows in run A but not in its manifest: never scored."""
ABSTAIN = "I cannot tell: the history never mentions it."
WRONG = "something else"
INT_ANSWER = {"ms-1": 3}
"""A counting question: its gold answer is an integer, as 32 of upstream's are."""


def right_answer(qid: str) -> str:
    """What the judge accepts for the item: a refusal for an abstention item, the gold fact (or count) else."""
    if qid in ("ssu-2_abs", "ms-2_abs", "ms-4_abs", "tr-2_abs"):
        return ABSTAIN
    return str(INT_ANSWER[qid]) if qid in INT_ANSWER else f"the gold fact of {qid}"


def question_text(qid: str) -> str:
    return f"What is the fact of {qid}?"


def gold(qid: str) -> Any:
    return INT_ANSWER.get(qid, f"the gold fact of {qid}")


REPLIES: dict[str, tuple[str, str]] = {
    # the judge's (yes, no) wording per item; upstream's rule labels each by hand: 'yes' in the stripped,
    # lower-cased reply ("The eyes have it" holds "yes"; "", "   " and "No, it is not correct" do not)
    "ssu-1": ("Yes", "No"), "ssu-2_abs": ("YES", ""), "ssu-3": ("Yes, because it states the fact.", "no."),
    "ssa-1": ("yes.", "No"), "ssa-2": ("The response is correct: yes", "Nope"), "ssp-1": ("Yes", "No"),
    "ms-1": ("yes", "   "), "ms-2_abs": ("Yes, it abstains.", "No"), "ms-3": ("Yes", "No"), "ms-4_abs": ("Yes", "No"),
    "tr-1": ("Correct: yes.", "No"), "tr-2_abs": ("Yes", "No"), "ku-1": ("The eyes have it", "No"),
    "ku-2": ("Yes", "No, it is not correct"), "zz-9": ("Yes", "No"),
}


# Sessions: a filler session has no "answer" in its id; an evidence session is "answer_..." with a has_answer user
# turn; ssu-3's third "answer_" session has none (upstream renames it noans: not gold); ku-1 has no evidence.
def _session(sid: str, has_answer: bool | None) -> Session:
    return Session(session_id=sid, date="2023/05/20 (Sat) 10:00",
                   turns=(Turn("user", f"something about {sid}", has_answer), Turn("assistant", "noted", None)))


def _sessions(qid: str) -> tuple[Session, ...]:
    if qid == "ssu-3":
        return (_session("answer_ssu-3_1", True), _session("ssu-3-filler-1", False),
                _session("answer_ssu-3_2", True), _session("ssu-3-filler-2", False),
                _session("answer_ssu-3_3", False))
    if qid == "ku-1":
        return tuple(_session(f"ku-1-filler-{i}", None) for i in (1, 2, 3))
    return (_session(f"{qid}-filler-1", False), _session(f"answer_{qid}_1", True),
            _session(f"{qid}-filler-2", False), _session(f"{qid}-filler-3", False))


RANKINGS = {"ssu-1": [2, 1, 0, 3], "ssu-3": [1, 3, 0, 4, 2], "ms-1": [1, 0, 2, 3], "ms-2_abs": [0, 1, 2, 3],
            "ku-1": [0, 1, 2]}
"""Session indexes, best first, the target returns (as the aliases it sees)."""


def question(qid: str, qtype: str) -> Question:
    sessions = _sessions(qid)
    return Question(question_id=qid, question_type=qtype, question=question_text(qid), answer=gold(qid),
                    question_date="2023/05/30 (Tue) 23:40", sessions=sessions,
                    answer_session_ids=tuple(s.session_id for s in sessions if s.session_id.startswith("answer_")))


# --------------------------------------------------------------------------- the stand-in prompt builder

STANDIN_SOURCE = '''
def get_anscheck_prompt(task, question, answer, response, abstention=False):
    """The self-test's stand-in for upstream's prompt builder: the same cases, none of upstream's words."""
    if abstention:
        template = "[selftest abstention] Q: {} | gold: {} | response: {}"
    elif task in ("single-session-user", "single-session-assistant", "multi-session"):
        template = "[selftest generic] Q: {} | gold: {} | response: {}"
    elif task == "temporal-reasoning":
        template = "[selftest temporal] Q: {} | gold: {} | response: {}"
    elif task == "knowledge-update":
        template = "[selftest update] Q: {} | gold: {} | response: {}"
    elif task == "single-session-preference":
        template = "[selftest preference] Q: {} | gold: {} | response: {}"
    else:
        raise NotImplementedError
    return template.format(question, answer, response)
'''


def expected_prompt(qid: str, case: str, response: str) -> str:
    """What the stand-in must be asked to build for this item: written out here, not by calling it."""
    return f"[selftest {case}] Q: {question_text(qid)} | gold: {gold(qid)} | response: {response}"


TARGET_SOURCE = '''
"""The self-test's target: each question's answer and ranking from its options, the answer's whitespace kept."""
from lme.targets.targets import Hypothesis

NAME = "selftest-answers"


def generate(item, ctx):
    ranks = ctx.options["rankings"].get(item.question)
    ranked = None if ranks is None else tuple(item.sessions[i].session_id for i in ranks)
    return Hypothesis(hypothesis=ctx.options["answers"][item.question], retrieved_session_ids=ranked)
'''

class SelftestJudge:
    """A judge that answers only the prompts it expects: a yes or no wording per prompt, "No" to anything else
    (noted in ``unexpected``); ``fail_next`` makes the next call fail as a rate-limited call would."""

    def __init__(self, expected: Mapping[str, str]) -> None:
        self.expected = dict(expected)
        self.unexpected: list[str] = []
        self.bad_calls: list[str] = []
        self.fail_next = False

    def complete(self, request: ChatRequest) -> Completion:
        problem = _call_problem(request)
        if problem:
            self.bad_calls.append(problem)
        if self.fail_next:
            self.fail_next = False
            raise ProviderError("rate_limit", "the self-test's judge failed this call", attempts=3)
        prompt = str(request.messages[0].get("content")) if request.messages else ""
        reply = self.expected.get(prompt)
        if reply is None:
            self.unexpected.append(prompt)
            reply = "No"
        return Completion(text=reply, tokensIn=0, tokensOut=0, latencyMs=0.0, provider=request.provider,
                          model=OFFICIAL_JUDGE_MODEL)

    def embed(self, provider: str, model: str, texts: Sequence[str]) -> list[list[float]]:
        raise ProviderError("bad_request", "the self-test makes no embedding call")


def _call_problem(request: ChatRequest) -> str | None:
    """How a judge call differs from upstream's (None: it does not)."""
    messages = [dict(m) for m in request.messages]
    wanted = {"provider": "openai", "model": OFFICIAL_JUDGE_MODEL, "roles": ["user"], "system": None,
              "temperature": 0, "max_tokens": 10, "n": 1}
    got = {"provider": request.provider, "model": request.model, "roles": [m.get("role") for m in messages],
           "system": request.system, "temperature": request.temperature, "max_tokens": request.max_tokens,
           "n": request.n}
    diff = [f"{k} {got[k]!r} (upstream {wanted[k]!r})" for k in wanted if got[k] != wanted[k]]
    return "; ".join(diff) or None


def _expected_replies(texts: Iterable[tuple[str, str, str]]) -> dict[str, str]:
    """prompt -> reply for (qid, case, the text the judge must read); yes exactly when the text is right."""
    return {expected_prompt(qid, case, text): REPLIES[qid][0 if text.strip() == right_answer(qid) else 1]
            for qid, case, text in texts}


# --------------------------------------------------------------------------- run A: which row counts

ROOT, SHARD1, SHARD2 = "", "shard-1of2", "shard-2of2"
PADDED = {"right": lambda qid: f"  {right_answer(qid)}\n", "wrong": lambda qid: f" {WRONG}  \n"}
"""What run A's target answers (the reader's raw output; the judge must read it stripped)."""
A_ATTEMPTS: tuple[tuple[str, str, bool, str, int], ...] = (
    # (question id, answer, judge call fails, folder, second of finished_at), in append order
    ("ssu-1", "right", True, ROOT, 1),
    ("ssu-2_abs", "right", False, ROOT, 2),
    ("ssu-3", "right", False, ROOT, 3),
    ("ssa-1", "right", False, ROOT, 4),
    ("ms-1", "wrong", False, ROOT, 5),
    ("ms-4_abs", "right", False, ROOT, 6),
    ("tr-1", "right", False, ROOT, 7),
    ("tr-2_abs", "right", True, ROOT, 8),
    ("ku-1", "right", False, ROOT, 9),
    ("ku-2", "wrong", False, ROOT, 10),
    ("zz-9", "right", False, ROOT, 11),
    ("ssu-1", "right", False, ROOT, 12),  # the last row of the file wins: judged, correct
    ("ssu-2_abs", "wrong", False, ROOT, 13),  # wins: wrong
    ("ssa-1", "right", True, ROOT, 14),  # wins: an error row
    ("ssa-2", "wrong", False, SHARD1, 5),
    ("ssa-2", "right", False, SHARD2, 15),  # later, in the later folder: wins
    ("ssp-1", "right", False, SHARD1, 16),  # later, in the earlier folder: wins
    ("ssp-1", "wrong", False, SHARD2, 6),
    ("ms-2_abs", "right", False, SHARD2, 17),  # only in a shard
)
A_FINAL: dict[str, str] = {
    # the row that counts, by hand: status, label, stored hypothesis ("no row": ms-3 was never run)
    "ssu-1": "judged, correct, 'the gold fact of ssu-1'",
    "ssu-2_abs": f"judged, wrong, {WRONG!r}",
    "ssu-3": "judged, correct, 'the gold fact of ssu-3'",
    "ssa-1": "error rate_limit, 'the gold fact of ssa-1'",
    "ssa-2": "judged, correct, 'the gold fact of ssa-2'",
    "ssp-1": "judged, correct, 'the gold fact of ssp-1'",
    "ms-1": f"judged, wrong, {WRONG!r}",
    "ms-2_abs": f"judged, correct, {ABSTAIN!r}",
    "ms-3": "no row",
    "ms-4_abs": f"judged, correct, {ABSTAIN!r}",
    "tr-1": "judged, correct, 'the gold fact of tr-1'",
    "tr-2_abs": f"error rate_limit, {ABSTAIN!r}",
    "ku-1": "judged, correct, 'the gold fact of ku-1'",
    "ku-2": f"judged, wrong, {WRONG!r}",
}

# Run A's figures, by hand. Correct: ssu-1, ssu-3, ssa-2, ssp-1, ms-2_abs, ms-4_abs, tr-1, ku-1 (8 of 14); errors
# ssa-1, tr-2_abs; ms-3 has no row; judged 11.
A_EXPECTED: dict[str, Any] = {
    "n_total": 14, "judged": 11, "correct": 8, "errors": 2, "not_run": 1, "rows_outside_item_set": 1,
    "strict micro": F(8, 14), "judged micro": F(8, 11),
    "strict macro": (F(2, 3) + F(1, 2) + 1 + F(2, 4) + F(1, 2) + F(1, 2)) / 6,  # 11/18
    "judged macro": (F(2, 3) + 1 + 1 + F(2, 3) + 1 + F(1, 2)) / 6,  # 29/36
    "strict abstention": F(2, 4), "judged abstention": F(2, 3),
    f"strict {SSU}": F(2, 3), f"strict {SSA}": F(1, 2), f"strict {SSP}": F(1), f"strict {MS}": F(2, 4),
    f"strict {TR}": F(1, 2), f"strict {KU}": F(1, 2),
    f"judged {SSU}": F(2, 3), f"judged {SSA}": F(1), f"judged {SSP}": F(1), f"judged {MS}": F(2, 3),
    f"judged {TR}": F(1), f"judged {KU}": F(1, 2),
}
# Wilson 95% bounds, solved by hand from (p^ - p)^2 = z^2 p (1 - p) / n with z = 1.959964 (6 decimals).
A_INTERVALS: tuple[tuple[str, str, str, float, float], ...] = (
    # (what, the block, strict or judged, low, high)
    ("overall strict (8/14)", "overall", "strict", 0.325906, 0.786192),
    ("overall judged (8/11)", "overall", "judged", 0.434355, 0.902539),
    (f"{MS} strict (2/4)", MS, "strict", 0.150039, 0.849961),
    (f"{SSP} strict (1/1)", SSP, "strict", 0.206549, 1.0),
    ("abstention judged (2/3)", "abstention", "judged", 0.207660, 0.938508),
)
A_INTERVAL_SHOWN = (("overall strict (8/14)", "overall", "strict", "[0.326, 0.786]"),
                    (f"{MS} strict (2/4)", MS, "strict", "[0.150, 0.850]"))
"""The intervals as scorecard.md and report.html print them (``metrics.fmt_interval``)."""

GOLD_ERRORS = (
    {"question_id": "ssu-1", "issues": [901], "status": "wrong", "variants": ["_s"]},
    {"question_id": "tr-2_abs", "issues": [902], "status": "wrong"},
    {"question_id": "ku-2", "issues": [903], "status": "disputed"},
    {"question_id": "tr-1", "issues": [904], "status": "fixed-in-cleaned"},
    {"question_id": "ms-1", "issues": [905], "status": "wrong", "variants": ["_m"]},
    {"question_id": "ssa-2", "issues": [906], "status": "wrong", "releases": ["original"]},
)
"""A registry for an ``_s`` run on the cleaned release: ssu-1 and tr-2_abs are left out of the second figure;
ku-2 (disputed) and tr-1 (fixed in the cleaned release) are listed but counted; ms-1 (_m) and ssa-2 (original
release) do not concern the run."""
A_WITHOUT_GOLD_ERRORS: dict[str, Any] = {
    "excluded": ["ssu-1", "tr-2_abs"], "listed_not_excluded": ["tr-1", "ku-2"],
    "n_total": 12, "correct": 7, "judged": 10,
    "strict micro": F(7, 12), "judged micro": F(7, 10),
    "strict macro": (F(1, 2) + F(1, 2) + 1 + F(2, 4) + 1 + F(1, 2)) / 6,  # 2/3
    "strict abstention": F(2, 3),
}
A_RETRIEVAL: dict[str, Any] = {
    # scored: ssu-1 (gold 2nd), ssu-3 (gold 3rd and 5th, a noans 4th), ms-1 (gold 1st); ms-2_abs skipped
    # (abstention), ku-1 skipped (no gold). Upstream's DCG: rel_1 + sum_{i>=2} rel_i / log2(i).
    "scored": 3, "skipped_abstention": 1, "skipped_no_gold": 1,
    "recall_any@1": F(1, 3), "recall_any@3": F(1), "recall_all@3": F(2, 3), "recall_all@5": F(1),
    "ndcg_any@1": F(1, 3),
    "ndcg_any@3": 0.771822,  # (1 + (1/log2 3) / 2 + 1) / 3
    "ndcg_any@5": 0.843601,  # (1 + (1/log2 3 + 1/log2 5) / 2 + 1) / 3
}
A_BEYOND_MANIFEST = {"n_total": 16, "unattributed": 2, "strict micro": F(8, 16), "judged micro": F(8, 11),
                     "strict macro": F(11, 18)}
"""``--n-total 16`` on the 14-item manifest: two more items, never run, of unknown type."""

# --------------------------------------------------------------------------- run B: a hypotheses file

B_FILE: dict[str, Any] = {
    **{qid: right_answer(qid) for qid, _, _ in ITEMS if qid not in ("ms-1", "ms-3", "ssa-2", "ku-2")},
    "ms-1": 3,  # a number: upstream formats it into the prompt as "3"
    "ssa-2": WRONG,
    "ku-2": f"  {right_answer('ku-2')}  \n",  # judged as written: the padding stays
}
"""Run B's hypotheses file (ms-3 has no line: a missing_hypothesis error row)."""
B_COMPARED: dict[str, Any] = {
    # A -> B on the 11 items both judged (A's errors ssa-1, tr-2_abs and ms-3, no row in A and an error in B, are
    # counted apart): fixes ssu-2_abs, ms-1, ku-2; regression ssa-2; both right ssu-1, ssu-3, ssp-1, ms-2_abs,
    # ms-4_abs, tr-1, ku-1
    "n_compared": 11, "fixes": 3, "regressions": 1, "both_right": 7, "both_wrong": 0,
    "accuracy_a": F(8, 11), "accuracy_b": F(10, 11),
    "p_value": F(2 * (1 + 4), 2 ** 4),  # two-sided exact: 2 * (C(4,0) + C(4,1)) / 2^4 = 0.625
}
B_NOT_COMPARED: dict[str, str] = {"judged_only_in_a": "none", "judged_only_in_b": "none",
                                  "error_in_a": "ssa-1, tr-2_abs", "error_in_b": "none", "judged_in_neither": "ms-3"}
"""The items the comparison leaves out, by why (ms-3: no row in A, an error row in B)."""

# --------------------------------------------------------------------------- doing it


def check(scenario: str, figure: str, expected: Any, got: Any, tol: float = 1e-12) -> dict[str, Any]:
    """One check: numbers within ``tol``, anything else equal."""
    if isinstance(expected, (F, float)):
        ok = isinstance(got, (int, float)) and not isinstance(got, bool) and abs(float(got) - float(expected)) <= tol
        expected = float(expected)
    else:
        ok = got == expected
    return {"scenario": scenario, "figure": figure, "expected": expected, "got": got, "ok": ok,
            "digits": 6 if tol > 1e-9 else 4}


def _settings(tmp: Path, target: str, options: Mapping[str, Any]) -> RunSettings:
    return RunSettings(
        project=str(tmp / "project"), dataset_path=str(tmp / "selftest-dataset.json"), variant="_s",
        runs_dir=str(tmp / "runs"), longmemeval_root=str(tmp / "upstream"), target=target,
        target_provider="selftest", target_model="selftest", target_options=dict(options),
        judge_provider="openai", judge_model="gpt-4o", max_evals=0, concurrency=1, cache_enabled=False,
        cache_read=False, cache_dir=str(tmp / "cache"), error_threshold=0, timeout_s=30.0, max_attempts=1)


def _meta(run_id: str, tmp: Path, target: str) -> RunMeta:
    return RunMeta(runId=run_id, status="completed", started_at="2026-01-01T00:00:00Z",
                   finished_at="2026-01-01T00:01:00Z", variant="_s",
                   dataset=DatasetInfo(path=str(tmp / "selftest-dataset.json"), sha256="0" * 64, items=len(ITEMS),
                                       release="cleaned"),
                   target=TargetInfo(name=target, provider="selftest", model="selftest", options={}),
                   judge=JudgeIdentity(provider="openai", model=OFFICIAL_JUDGE_MODEL, official=False),
                   settings={"project": str(tmp / "project")})


def _stamp(second: int) -> str:
    return f"2026-01-01T00:00:{second:02d}.000000Z"


def _write_run(run_dir: Path, meta: RunMeta, rows: Iterable[tuple[str, ResultRow]]) -> None:
    run_dir.mkdir(parents=True)
    run_store.write_meta(run_dir, meta)
    run_store.write_manifest(run_dir, Manifest.of((qid, qtype) for qid, qtype, _ in ITEMS))
    by_folder: dict[str, list[ResultRow]] = {}
    for folder, row in rows:
        by_folder.setdefault(folder, []).append(row)
    for folder, folder_rows in by_folder.items():  # each file in append order; one fsynced append per file
        (run_dir / folder).mkdir(exist_ok=True)
        run_store.append_rows(run_dir / folder, folder_rows)


def _row_text(row: ResultRow | None) -> str:
    if row is None:
        return "no row"
    if row.status == "judged":
        return f"judged, {'correct' if row.label else 'wrong'}, {row.hypothesis!r}"
    return f"{row.status} {row.error.kind if row.error else '?'}, {row.hypothesis!r}"


def _judge_checks(scenario: str, judge: SelftestJudge) -> list[dict[str, Any]]:
    first = judge.unexpected[0] if judge.unexpected else None
    return [
        check(scenario, "judge prompts not built from the item's type, _abs id and judged text",
              "none", "none" if first is None else f"{len(judge.unexpected)}, e.g. {first!r}"),
        check(scenario, "judge calls with other settings than upstream's", "none",
              "none" if not judge.bad_calls else f"{len(judge.bad_calls)}: {judge.bad_calls[0]}"),
    ]


def figure(card: Scored | Scorecard | GoldExclusion, name: str) -> Any:
    """A figure of a scorecard (or of its figure without the registry's gold errors) by name: a top-level count,
    or "strict micro", "judged macro", "strict abstention", "judged <question_type>"."""
    kind, _, what = name.partition(" ")
    if not what:
        return getattr(card, name)
    if what == "micro":
        block: Any = card.overall
    elif what == "macro":
        block = card.task_averaged
    elif what == "abstention":
        block = card.abstention
    else:
        block = card.per_type[what]
    return getattr(block, f"accuracy_{kind}")


def _interval(card: Scorecard, where: str, kind: str) -> tuple[float, float] | None:
    block = card.overall if where == "overall" else card.abstention if where == "abstention" else card.per_type[where]
    return getattr(block, f"wilson_{kind}")


def _retrieval_figure(retrieval: Retrieval | None, name: str) -> Any:
    """A count of the retrieval block (``scored``, ...) or an overall mean (``recall_any@3``); None without one."""
    if retrieval is None:
        return None
    if "@" not in name:
        return getattr(retrieval, name)
    metric, _, k = name.partition("@")
    return retrieval.scopes()[0].mean(metric, int(k))


def _run_a(tmp: Path, target_file: Path) -> tuple[list[dict[str, Any]], Path]:
    scenario = "stored run A (reader output, shards)"
    items = {qid: (qtype, case) for qid, qtype, case in (*ITEMS, STRAY)}
    judge = SelftestJudge(_expected_replies((qid, case, text.strip()) for qid, (_, case) in items.items()
                                            for text in (PADDED["right"](qid), PADDED["wrong"](qid))))
    rows = []
    for qid, answer, fails, folder, second in A_ATTEMPTS:
        qtype, _ = items[qid]
        options = {"answers": {question_text(qid): PADDED[answer](qid)},
                   "rankings": {question_text(qid): RANKINGS[qid]} if qid in RANKINGS else {}}
        judge.fail_next = fails
        row = item_runner.run_item(question(qid, qtype), _settings(tmp, str(target_file), options), judge)
        rows.append((folder, row.with_(finished_at=_stamp(second))))
    run_dir = tmp / "project" / "runs" / "selftest-a"
    _write_run(run_dir, _meta("selftest-a", tmp, "selftest-answers"), rows)

    checks = _judge_checks(scenario, judge)
    run = run_store.load_run(run_dir)
    checks += [check(scenario, f"the row that counts for {qid}", want, _row_text(run.rows.get(qid)))
               for qid, want in A_FINAL.items()]
    card = scoring.build_scorecard(run, variant="_s", gold_errors=GOLD_ERRORS, inputs=ScoringInputs())
    checks += [check(scenario, name, want, figure(card, name)) for name, want in A_EXPECTED.items()]
    for name, where, kind, low, high in A_INTERVALS:
        got = _interval(card, where, kind) or [None, None]
        checks += [check(scenario, f"95% Wilson low, {name}", low, got[0], tol=5e-7),
                   check(scenario, f"95% Wilson high, {name}", high, got[1], tol=5e-7)]
    checks += [check(scenario, f"95% Wilson as shown, {name}", shown,
                     metrics.fmt_interval(_interval(card, where, kind)))
               for name, where, kind, shown in A_INTERVAL_SHOWN]

    ex = card.excluding_gold_errors
    gold_scenario = "stored run A without the registry's gold errors"
    for name, want in A_WITHOUT_GOLD_ERRORS.items():
        if name in ("excluded", "listed_not_excluded"):
            got = [e.question_id for e in getattr(ex, name)]
        else:
            got = figure(ex, name)
        checks.append(check(gold_scenario, name, want, got))
    checks.append(check(gold_scenario, "the official strict micro still counts them", F(8, 14),
                        card.overall.accuracy_strict))

    checks += [check("stored run A retrieval (session level)", name, want, _retrieval_figure(card.retrieval, name),
                     tol=5e-7 if isinstance(want, float) else 1e-12)
               for name, want in A_RETRIEVAL.items()]

    beyond = scoring.build_scorecard(run, n_total=16, variant="_s", gold_errors=(), inputs=ScoringInputs())
    checks += [check("stored run A scored with --n-total 16", name, want, figure(beyond, name))
               for name, want in A_BEYOND_MANIFEST.items()]
    return checks, run_dir


def _run_b(tmp: Path) -> tuple[list[dict[str, Any]], Path]:
    scenario = "stored run B (a hypotheses file)"
    hyp_file = tmp / "hypotheses.jsonl"
    hyp_file.write_text("".join(json.dumps({"question_id": q, "hypothesis": h}) + "\n" for q, h in B_FILE.items()),
                        encoding="utf-8")
    cases = {qid: case for qid, _, case in ITEMS}
    judge = SelftestJudge(_expected_replies((qid, cases[qid], str(text)) for qid, text in B_FILE.items()))
    settings = _settings(tmp, "hypotheses", {"file": str(hyp_file)})
    rows = []
    for second, (qid, qtype, _) in enumerate(ITEMS, 1):
        row = item_runner.run_item(question(qid, qtype), settings, judge)
        rows.append((ROOT, row.with_(finished_at=_stamp(second))))
    run_dir = tmp / "project" / "runs" / "selftest-b"
    _write_run(run_dir, _meta("selftest-b", tmp, "hypotheses"), rows)
    run = run_store.load_run(run_dir)
    checks = _judge_checks(scenario, judge)
    checks += [
        check(scenario, "the row of ku-2 (padded in the file)", f"judged, correct, {B_FILE['ku-2']!r}",
              _row_text(run.rows.get("ku-2"))),
        check(scenario, "the row of ms-1 (the number 3 in the file)", "judged, correct, '3'",
              _row_text(run.rows.get("ms-1"))),
        check(scenario, "the row of ms-3 (no line in the file)", "error missing_hypothesis, None",
              _row_text(run.rows.get("ms-3"))),
    ]
    return checks, run_dir


def _comparison(run_a: Path, run_b: Path) -> list[dict[str, Any]]:
    result = run_comparison.compare(run_a, run_b).to_dict()  # the figures as compare_runs.py --json prints them
    scenario = "compare A -> B (items both judged, exact McNemar)"
    left_out = result["not_compared"]
    return [*(check(scenario, name, want, result[name]) for name, want in B_COMPARED.items()),
            *(check(scenario, f"not compared: {key}", want, ", ".join(left_out[key]) or "none")
              for key, want in B_NOT_COMPARED.items())]


def guarded(scenario: str, step: Callable[[], list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """A step that raises is one failed check naming the exception (the command prints a table, not a traceback)."""
    try:
        return step()
    except Exception as err:  # noqa: BLE001 - a broken scorer must show as a failed check
        return [check(scenario, "runs without raising", "no exception", f"{type(err).__name__}: {err}")]


def stored_run_checks() -> list[dict[str, Any]]:
    """Every check of the stored runs (see the module docstring), made in a temporary directory."""
    with tempfile.TemporaryDirectory(prefix="lme-selftest-") as name:
        tmp = Path(name)
        upstream = tmp / "upstream" / "src" / "evaluation"
        upstream.mkdir(parents=True)
        (upstream / "evaluate_qa.py").write_text(STANDIN_SOURCE, encoding="utf-8")
        target_file = tmp / "selftest_target.py"
        target_file.write_text(TARGET_SOURCE, encoding="utf-8")
        (tmp / "project").mkdir()
        made: dict[str, Path] = {}

        def run_a() -> list[dict[str, Any]]:
            checks, made["a"] = _run_a(tmp, target_file)
            return checks

        def run_b() -> list[dict[str, Any]]:
            checks, made["b"] = _run_b(tmp)
            return checks

        checks = guarded("stored run A (reader output, shards)", run_a)
        checks += guarded("stored run B (a hypotheses file)", run_b)
        if "a" in made and "b" in made:
            checks += guarded("compare A -> B (items both judged, exact McNemar)",
                               lambda: _comparison(made["a"], made["b"]))
        return checks
