"""The data of a run's report page: one record per question (state, figures, judge, debug, the sessions the target
saw, the exact prompts it sent) and the texts behind the drill-down, within a budget.

Session texts, dates and evidence ids come from the run's dataset file (checked against the size and mtime
run-meta recorded), streamed once; the prompts are the run's stored ``prompts.jsonl``. Each session and each long
prompt line is embedded once, however many questions refer to it; evidence sessions always, other texts
(retrieved sessions, prompt lines) up to the budget, wrong and failed items first. ``report_html`` renders it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from lme.data import dataset
from lme.core import config, fileio
from lme.store import prompt_store, run_store
from lme.report import shown_paths
from lme.core.facts import QUESTION_TYPES, STABILITY_REGISTRY, STATE_DIR, is_abstention
from lme.core.records import CallRecord, Question
from lme.core.run_records import ResultRow, RunMeta
from lme.store.run_store import RunData
from lme.score.scorecard_record import Scorecard, TargetRef, require

DEFAULT_MAX_TEXT_MB = 24.0
DEFAULT_TOP_K = 10
"""Retrieved sessions listed per question when the target does not say how many it read (``retrieval.top_k``)."""


# --------------------------------------------------------------------------- the judge-stability registry


def stability_registry(path: Path | None) -> dict[tuple[str, str, str], dict[str, Any]]:
    """The judge-stability registry: the last line per (question_id, judge_model, prompt_sha256); {} if absent."""
    registry: dict[tuple[str, str, str], dict[str, Any]] = {}
    for _, rec in fileio.iter_jsonl(Path(path)) if path is not None else ():
        registry[(str(rec.get("question_id")), str(rec.get("judge_model")), str(rec.get("prompt_sha256")))] = rec
    return registry


def flaky_mark(row: ResultRow | None, registry: Mapping[tuple[str, str, str], Mapping[str, Any]]
               ) -> dict[str, Any] | None:
    """``{"yes", "no", "source"}`` when the judge gave this row's exact prompt both labels (the row's own repeats,
    ``judgment.stability``, the verdict archive's conflicting verdicts, ``judgment.conflict``, or the registry),
    else None. The one place the flaky rule is read."""
    verdict = None if row is None else row.judgment
    if verdict is None:
        return None
    own = verdict.stability
    if isinstance(own, Mapping) and own.get("flaky"):
        return {"yes": own.get("yes"), "no": own.get("no"), "source": "this run's repeated verdicts"}
    conflict = verdict.conflict
    if isinstance(conflict, Mapping):
        return {"yes": conflict.get("yes"), "no": conflict.get("no"),
                "source": f"official verdicts in the verdict archive, scored by the {conflict.get('rule')}"}
    rec = registry.get((row.question_id, str(verdict.model), str(verdict.prompt_sha256)))
    if rec and (rec.get("flaky") or (int(rec.get("yes") or 0) > 0 and int(rec.get("no") or 0) > 0)):
        return {"yes": rec.get("yes"), "no": rec.get("no"), "source": f"registry ({rec.get('source', '?')})"}
    return None


def stability_path(run_dir: Path, project: Path | None = None) -> Path | None:
    """``<project>/.longmemeval-benchmarks/judge-stability.jsonl`` when it exists, else the one of the run's own
    project (``run_store.scoring_project``, as its scorecard's: a run scored from anywhere); None: neither."""
    holder = run_store.scoring_project(run_dir)
    beside = None if holder is None else holder / STATE_DIR / STABILITY_REGISTRY
    if project is not None:
        own = Path(project) / STATE_DIR / STABILITY_REGISTRY
        if own.is_file() or beside is None or not beside.is_file():
            return own
    return beside


# --------------------------------------------------------------------------- the dataset side


class PackedJson:
    """A piece of the texts blob kept as its JSON, UTF-8 (``report_html.pack_texts`` writes it as it is): a
    full-context ``_s`` report holds thousands of sessions' turns while it chooses what to embed, and as bytes
    they take a byte a character, where Python strings take four once one emoji is in them."""

    __slots__ = ("_json",)

    def __init__(self, obj: Any) -> None:
        self._json = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")

    def json_bytes(self) -> bytes:
        return self._json


@dataclass
class _SessionText:
    session_id: str
    date: str
    turns: PackedJson | None = None
    """``[[role, content, has_answer 0/1], ...]``, packed; None when the page does not need the turns."""
    chars: int = 0
    n_turns: int = 0

    def keep_turns(self, turns: Sequence[Any]) -> None:
        rows = [[t.role, t.content, 1 if t.has_answer else 0] for t in turns]
        if rows:
            self.turns, self.chars, self.n_turns = PackedJson(rows), sum(len(r[1]) for r in rows), len(rows)


@dataclass
class _ItemFacts:
    question_date: str
    order: list[str]
    """Real ids of the sessions the target was given, in the dataset's order."""
    evidence: list[str]


@dataclass
class _DatasetView:
    items: dict[str, _ItemFacts] = field(default_factory=dict)
    sessions: dict[str, _SessionText] = field(default_factory=dict)
    note: str | None = None


def _dataset_note(meta: RunMeta, project: Path | None) -> tuple[Path | None, str | None]:
    ds = meta.dataset
    recorded = str(ds.path or "")  # a moved project's own file, where it is now (``moved_path``)
    path = Path(recorded if project is None else config.moved_path(recorded, meta.project, project))
    named = shown_paths.shown(ds.path, project) or "(none recorded)"
    if not ds.path or not path.is_file():
        return None, (f"the run's dataset file {named} is not here: question dates and session texts are missing "
                      "from this report")
    st = path.stat()
    if ds.file_bytes not in (None, st.st_size) or ds.file_mtime_ns not in (None, st.st_mtime_ns):
        return None, (f"the dataset file {named} changed since the run (size or mtime differ from run-meta): "
                      "question dates and session texts are left out rather than shown wrong")
    return path, None


def _read_dataset(run: RunData, wanted: Mapping[str, set[str]], visible_only_evidence: bool,
                  project: Path | None) -> _DatasetView:
    """Stream the run's dataset once; keep dates and ids of every wanted item, and the turns of the sessions in
    ``wanted[qid]`` (the ones a drill-down may show). Nothing else is held in memory."""
    view = _DatasetView()
    path, view.note = _dataset_note(run.meta, project)
    if path is None:
        return view
    left = set(wanted)
    for raw in dataset.iter_items(path):
        qid = str(raw["question_id"])
        if qid not in left:
            continue
        left.discard(qid)
        q = Question.from_dict(raw)
        evidence = list(q.answer_session_ids)
        shown = [s for s in q.sessions if not visible_only_evidence or s.session_id in set(evidence)]
        view.items[qid] = _ItemFacts(q.question_date, [s.session_id for s in shown], evidence)
        keep = wanted[qid] | set(evidence)
        for s in q.sessions:
            known = view.sessions.get(s.session_id)
            if known is None:
                known = view.sessions[s.session_id] = _SessionText(s.session_id, s.date)
            if s.session_id in keep and known.turns is None:
                known.keep_turns(s.turns)
        if not left:
            break
    return view


# --------------------------------------------------------------------------- per question


def _state(row: ResultRow | None) -> str:
    if row is None:
        return "not_run"
    if row.status == "error":
        return "error"
    return "correct" if row.correct else "wrong"


_CALL_VIEW_KEYS = ("role", "provider", "model", "tokensIn", "tokensOut", "latencyMs", "cached", "attempts")


def _call_view(call: CallRecord) -> dict[str, Any]:
    """A call as the drill-down lists it: these keys of its JSON form (null where the row did not record one)."""
    recorded = call.to_dict()
    return {k: recorded.get(k) for k in _CALL_VIEW_KEYS}


def _cached(row: ResultRow | None) -> str | None:
    if row is None:
        return None
    flags = [c.cached for c in row.calls]
    if row.judgment is not None:
        flags.append(bool(row.judgment.cached))
    if not flags:
        return None
    return "all" if all(flags) else "some" if any(flags) else "none"


def _top_k(row: ResultRow | None) -> int:
    detail = None if row is None or row.retrieval is None else row.retrieval.detail
    k = None if detail is None else detail.top_k
    return k if k else DEFAULT_TOP_K


def _stages(row: ResultRow | None) -> list[str]:
    """One line per pipeline stage the target declared (``target.stages``): ``name: status — detail``."""
    stages = None if row is None or row.target is None else row.target.stages
    return [f"{s.name}: {s.status}" + (f" — {s.detail}" if s.detail else "") for s in stages or ()]


def _truncation(row: ResultRow | None) -> dict[str, Any] | None:
    trunc = None if row is None or row.target is None else row.target.truncation
    return None if trunc is None else trunc.to_dict()


def _session_refs(row: ResultRow | None, facts: _ItemFacts | None) -> list[tuple[str, int | None, str]]:
    """(session id, rank or None, flags) for the drill-down: ``e`` evidence, ``k`` given to the reader (top k),
    ``d`` dropped to fit the context window, ``x`` evidence left outside the top k."""
    retrieval = None if row is None else row.retrieval
    evidence = set(facts.evidence if facts else (retrieval.gold_session_ids if retrieval else ()))
    trunc = None if row is None or row.target is None else row.target.truncation
    dropped = set() if trunc is None else set(trunc.dropped_session_ids)
    ranked = None if retrieval is None or retrieval.retrieved_session_ids is None else list(retrieval.retrieved_session_ids)
    refs: list[tuple[str, int | None, str]] = []
    if ranked is not None:
        k = _top_k(row)
        for rank, sid in enumerate(ranked[:k], 1):
            refs.append((sid, rank, ("e" if sid in evidence else "") + "k" + ("d" if sid in dropped else "")))
        shown = {sid for sid, _, _ in refs}
        for sid in sorted(evidence - shown, key=lambda s: ranked.index(s) if s in ranked else len(ranked)):
            refs.append((sid, ranked.index(sid) + 1 if sid in ranked else None, "ex"))
    elif facts is not None:
        for sid in facts.order:
            refs.append((sid, None, ("e" if sid in evidence else "") + "k" + ("d" if sid in dropped else "")))
    return refs


# --------------------------------------------------------------------------- texts under a budget


INLINE_SHARE = 0.25
"""The short lines a prompt record holds inline (instructions, headers, short turns) are embedded up to this share
of the text budget, wrong and failed items first; a prompt whose short lines no longer fit shows one "not embedded"
note per message. (A memory-ref ``_s`` run's 19,000 writer prompts hold 176M characters of them: the page was
212 MB and its scoring peaked at 2.3 GB.)"""


class _Texts:
    """Sessions and prompt lines, each embedded once, evidence always, the rest while the budget lasts."""

    def __init__(self, budget_bytes: int, sessions: Mapping[str, _SessionText], prompts: prompt_store.StoredPrompts):
        self.budget = budget_bytes
        self.used = 0
        self.inline_left = int(budget_bytes * INLINE_SHARE)
        self.left_out: set[str] = set()
        self._sessions_src = sessions
        self._prompts = prompts
        self.session_index: dict[str, int] = {}
        self.sessions: list[dict[str, Any]] = []
        self.session_turns: list[PackedJson | None] = []
        self.line_index: dict[str, int] = {}
        self.line_chars: list[int] = []
        self.lines: list[str | None] = []

    def session(self, sid: str) -> int:
        if sid not in self.session_index:
            src = self._sessions_src.get(sid)
            self.session_index[sid] = len(self.sessions)
            self.sessions.append({"id": sid, "date": src.date if src else None,
                                  "turns": src.n_turns if src and src.turns else None,
                                  "chars": src.chars if src and src.turns else None})
            self.session_turns.append(None)
        return self.session_index[sid]

    def embed_session(self, sid: str, *, always: bool = False) -> None:
        i = self.session(sid)
        src = self._sessions_src.get(sid)
        if self.session_turns[i] is not None or src is None or not src.turns:
            return
        cost = src.chars + 16 * src.n_turns
        if always or self.used + cost <= self.budget:
            self.session_turns[i] = src.turns
            self.used += cost
        else:
            self.left_out.add(f"session {sid}")

    def line(self, key: str) -> int:
        if key not in self.line_index:
            self.line_index[key] = len(self.lines)
            self.line_chars.append(self._prompts.line_chars(key) if self._prompts.has_line(key) else -1)
            self.lines.append(None)
        return self.line_index[key]

    def take_inline(self, chars: int) -> bool:
        """Whether a prompt's ``chars`` characters of inline lines still fit (and charge them if so)."""
        if chars > self.inline_left:
            return False
        self.inline_left -= chars
        return True

    def placeholder(self, chars: int) -> int:
        """A line index the page shows as ``chars`` characters not embedded."""
        self.line_chars.append(chars)
        self.lines.append(None)
        return len(self.lines) - 1

    def embed_line(self, key: str) -> None:
        i = self.line(key)
        if self.lines[i] is not None or not self._prompts.has_line(key):
            return
        cost = self.line_chars[i]
        if self.used + cost <= self.budget:
            self.lines[i] = self._prompts.text(key)
            self.used += cost
        else:
            self.left_out.add(f"line {key}")


def _prompt_view(key: str, store: prompt_store.StoredPrompts, texts: _Texts) -> dict[str, Any]:
    record = store.prompts.get(key)
    if record is None:
        return {"key": key, "missing": True}
    parts = [record.get("system") or [], *(m.get("content") or [] for m in record.get("messages") or [])]
    inline = sum(len(s) for segments in parts for s in segments if isinstance(s, str))
    keep = texts.take_inline(inline)
    if not keep:
        texts.left_out.add(f"prompt {key}")

    def segs(segments: Sequence[Any] | None) -> list[Any] | None:
        if segments is None:
            return None
        if not keep:  # one note for the whole text: the page never holds this prompt's lines one by one
            size = sum(len(s) if isinstance(s, str) else max(0, store.line_chars(s["line"]) if
                       store.has_line(s["line"]) else 0) for s in segments) + max(0, len(segments) - 1)
            return [texts.placeholder(size)]
        return [s if isinstance(s, str) else texts.line(s["line"]) for s in segments]

    messages = [{"role": m.get("role"), "seg": segs(m.get("content") or [])} for m in record.get("messages") or []]
    chars = sum(sum(len(s) if isinstance(s, str) else max(0, texts.line_chars[s]) for s in m["seg"])
                + max(0, len(m["seg"]) - 1) for m in messages)  # the segments and the newlines joining them
    view = {"key": key, "provider": record.get("provider"), "model": record.get("model"),
            "max_tokens": record.get("max_tokens"), "temperature": record.get("temperature"),
            "system": segs(record.get("system")), "messages": messages, "chars": chars}
    return view if keep else {**view, "left_out": True}


def _line_keys(record: Mapping[str, Any] | None) -> Iterable[str]:
    if not record:
        return []
    parts = list(record.get("system") or []) + [s for m in record.get("messages") or [] for s in m.get("content") or []]
    return [s["line"] for s in parts if isinstance(s, Mapping)]


def prompt_keys(row: ResultRow | None) -> tuple[str, ...]:
    return () if row is None or row.prompt_keys is None else row.prompt_keys


def _question(qid: str, qtype: str, row: ResultRow | None, facts: _ItemFacts | None,
              refs: Sequence[tuple[str, int | None, str]], texts: _Texts,
              registry: Mapping[tuple[str, str, str], Mapping[str, Any]]) -> dict[str, Any]:
    """One question's record in the page's data (the table row and its drill-down)."""
    debug = {} if row is None else dict(row.debug)
    return {
        "id": qid, "type": qtype, "abs": is_abstention(qid), "state": _state(row),
        "err": None if row is None or row.error is None else row.error.to_dict(),
        "cost": None if row is None or row.cost is None else row.cost.total_usd,
        "lat": None if row is None else row.latencyMs, "cached": _cached(row), "flaky": flaky_mark(row, registry),
        "q": None if row is None else row.question, "qdate": facts.question_date if facts else None,
        "gold": None if row is None else row.answer, "hyp": None if row is None else row.hypothesis,
        "judge": None if row is None or row.judgment is None else row.judgment.to_dict(), "debug": debug,
        "stages": _stages(row), "trunc": _truncation(row),
        "tokens": [None if row is None else row.tokensIn, None if row is None else row.tokensOut],
        "calls": [_call_view(c) for c in (row.calls if row else ())],
        "finished": None if row is None else row.finished_at,
        "sess": [[texts.session(sid), rank, flags] for sid, rank, flags in refs],
        "prompts": [],  # filled in by page_data, wrong and failed items first
    }



def _shown_target(target: TargetRef, project: Path | None) -> dict[str, Any]:
    """The card's target for the page: a hypotheses file named relative to the project (never an absolute path)."""
    out = target.to_dict()
    if target.hypotheses is not None:
        out["hypotheses"] = {**out["hypotheses"], "file": shown_paths.shown(target.hypotheses.file, project)}
    return out


def _wanted_sessions(run: RunData, types: Mapping[str, str]) -> dict[str, set[str]]:
    """Each item's sessions the page shows beyond its evidence: the top k of its retrieval ranking."""
    wanted: dict[str, set[str]] = {}
    for qid in types:
        row = run.rows.get(qid)
        ranked = None if row is None or row.retrieval is None else row.retrieval.retrieved_session_ids
        wanted[qid] = set(ranked[: _top_k(row)]) if ranked else set()
    return wanted


def page_data(run: RunData, card: Scorecard, *, project: Path | None = None,
              max_text_mb: float = DEFAULT_MAX_TEXT_MB) -> tuple[dict[str, Any], dict[str, Any]]:
    """The report page's data for ``run`` and its ``card``: the table and drill-down records (JSON, parsed at
    load) and the texts blob (sessions and prompt lines, evidence always, the rest within ``max_text_mb``)."""
    card = require(card)
    types, _ = run.item_types(card.n_total)
    registry = stability_registry(stability_path(run.path, project))
    store = prompt_store.load(run.path)
    root = shown_paths.project_of(run, project)
    view = _read_dataset(run, _wanted_sessions(run, types), visible_only_evidence=run.meta.target.name == "oracle",
                         project=root)
    texts = _Texts(int(max_text_mb * 1_000_000), view.sessions, store)

    questions: list[dict[str, Any]] = []
    refs_of: dict[str, list[tuple[str, int | None, str]]] = {}
    for qid, qtype in types.items():
        row = run.rows.get(qid)
        facts = view.items.get(qid)
        refs = refs_of[qid] = _session_refs(row, facts)
        for sid in (facts.evidence if facts else []):
            texts.embed_session(sid, always=True)
        questions.append(_question(qid, qtype, row, facts, refs, texts, registry))
    # Texts beyond the evidence, while the budget lasts: wrong and failed items first, then the rest.
    for first in (True, False):
        for q in questions:
            if (q["state"] in ("wrong", "error", "not_run")) != first:
                continue
            for sid, _, flags in refs_of[q["id"]]:
                if "k" in flags:
                    texts.embed_session(sid)
            q["prompts"] = [_prompt_view(k, store, texts) for k in prompt_keys(run.rows.get(q["id"]))]
            for prompt in q["prompts"]:
                if not prompt.get("missing") and not prompt.get("left_out"):
                    for line in _line_keys(store.prompts.get(prompt["key"])):
                        texts.embed_line(line)

    notes = [n for n in [view.note] if n]
    if texts.left_out:
        notes.append(f"{len(texts.left_out)} session or prompt text(s) were left out to keep this page under "
                     f"{max_text_mb:g} MB of text (evidence sessions are always in); the drill-down names the "
                     f"command that prints a left-out prompt")
    if not store.prompts and any(run.rows.get(q) for q in types):
        notes.append("this run stored no prompts (an offline target makes no model calls, or the run predates "
                     "prompts.jsonl)")
    data = {
        "run": {"id": run.run_id, "path": shown_paths.shown(run.path, root), "variant": card.variant,
                "target": _shown_target(card.target, root),
                "judge": card.judge.to_dict(), "status": card.status},
        "types": [t for t in QUESTION_TYPES if t in set(types.values())],
        "questions": questions,
        "sessions": texts.sessions,
        "line_chars": texts.line_chars,
        "notes": notes,
        "prompt_command": f"python scripts/report_html.py {shown_paths.shown(run.path, root)} --prompt QID",
    }
    return data, {"s": texts.session_turns, "l": texts.lines}
