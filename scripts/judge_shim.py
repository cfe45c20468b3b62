"""The official LongMemEval judge: upstream's prompt, upstream's call settings, upstream's label rule.

The prompt comes from the user's own LongMemEval checkout: only the function ``get_anscheck_prompt`` is taken
from ``<root>/src/evaluation/evaluate_qa.py`` (parsed with ``ast`` and compiled alone, so the module's heavy
imports and ``__main__`` block never run, and the checkout is never modified). The call is what upstream sends:
one user message holding the prompt, no system message, ``temperature 0``, ``max_tokens 10``, ``n 1``, with the
judge alias ``gpt-4o`` pinned to ``gpt-4o-2024-08-06``. The label is ``'yes' in reply.strip().lower()``.

A verdict is ``official`` only for provider ``openai``, the model ``gpt-4o-2024-08-06`` (requested and returned),
and a prompt function whose source is upstream's (its sha256 is pinned below). Any other judge is allowed and
recorded as non-official.

Usage:
    python scripts/judge_shim.py --longmemeval-root ~/LongMemEval --print-prompt \\
        --question-type temporal-reasoning --question-id q1 --question "How many days...?" \\
        --answer 18 --hypothesis "19 days"
    python scripts/judge_shim.py --longmemeval-root ~/LongMemEval --hyp-file hyps.jsonl \\
        --ref-file longmemeval_oracle.json            # writes hyps.jsonl.eval-results-gpt-4o
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import lzma
import os
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import command_names
from errors import UserError, run_main
from records import (
    LLM,
    OFFICIAL_JUDGE_MODEL,
    OFFICIAL_JUDGE_PROVIDER,
    QUESTION_TYPES,
    ChatRequest,
    Verdict,
    is_abstention,
)

TEMPLATE_RELPATH = Path("src") / "evaluation" / "evaluate_qa.py"
PROMPT_FUNCTION = "get_anscheck_prompt"
JUDGE_MODEL_ALIASES = {"gpt-4o": "gpt-4o-2024-08-06", "gpt-4o-mini": "gpt-4o-mini-2024-07-18"}
"""Upstream's ``model_zoo`` for the judge."""
JUDGE_MAX_TOKENS = 10
UPSTREAM_FUNCTION_SHA256 = frozenset({
    # get_anscheck_prompt at xiaowu0162/LongMemEval d6dc8b5 (2024-11-24; unchanged through 9e0b455), CRLF -> LF
    "90413115ed06dd07135f9d9ed53b14238776029eeb1a32a87ccbfbc0e2730482",
})
SETUP_HINT = f"run {command_names.SETUP} (it clones xiaowu0162/LongMemEval) or set longmemeval_root in the config"


class JudgeInputError(UserError):
    """The item cannot be judged (e.g. an unknown question_type): the run records it as a ``judge_input`` error."""

    kind = "judge_input"


@dataclass(frozen=True)
class PromptBuilder:
    build: Callable[..., str]
    """``get_anscheck_prompt(task, question, answer, response, abstention=False)`` from the checkout."""
    path: Path
    template_sha256: str
    """sha256 of the whole ``evaluate_qa.py`` file."""
    function_sha256: str
    """sha256 of the function's source (CRLF normalised): what decides whether the prompt is upstream's."""

    @property
    def is_upstream(self) -> bool:
        return self.function_sha256 in UPSTREAM_FUNCTION_SHA256


class _BuilderCache:
    """Loaded prompt functions per (path, mtime, size): a run judges hundreds of items from one file."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[tuple[str, int, int], PromptBuilder] = {}

    def get(self, path: Path) -> PromptBuilder:
        stat = path.stat()
        key = (str(path), stat.st_mtime_ns, stat.st_size)
        with self._lock:
            builder = self._entries.get(key)
        if builder is None:
            builder = _compile_builder(path)
            with self._lock:
                self._entries[key] = builder
        return builder


_CACHE = _BuilderCache()


def _compile_builder(path: Path) -> PromptBuilder:
    data = path.read_bytes()
    try:
        source = data.decode("utf-8")
        tree = ast.parse(source, filename=str(path))
    except (UnicodeDecodeError, SyntaxError) as err:
        raise UserError(f"cannot parse {path}: {err}", fix=SETUP_HINT) from None
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == PROMPT_FUNCTION]
    if not functions:
        raise UserError(f"{path} has no function {PROMPT_FUNCTION}: is this a LongMemEval checkout?",
                        fix=SETUP_HINT)
    function = functions[-1]  # Python semantics: the last definition wins
    segment = ast.get_source_segment(source, function) or ""
    namespace: dict[str, Any] = {"__builtins__": __builtins__, "__name__": "longmemeval_judge_prompt"}
    code = compile(ast.Module(body=[function], type_ignores=[]), str(path), "exec")
    exec(code, namespace)  # noqa: S102 - only the one function definition is executed
    return PromptBuilder(
        build=namespace[PROMPT_FUNCTION],
        path=path,
        template_sha256=hashlib.sha256(data).hexdigest(),
        function_sha256=hashlib.sha256(segment.replace("\r\n", "\n").encode("utf-8")).hexdigest(),
    )


def load_prompt_builder(longmemeval_root: str | Path | None) -> PromptBuilder:
    """``get_anscheck_prompt`` from ``<root>/src/evaluation/evaluate_qa.py``; UserError saying how to get it."""
    if longmemeval_root is None or str(longmemeval_root) == "":
        raise UserError("no LongMemEval checkout configured for the official judge prompt", fix=SETUP_HINT)
    path = Path(longmemeval_root).expanduser() / TEMPLATE_RELPATH
    if not path.is_file():
        raise UserError(f"LongMemEval checkout not found: {path} does not exist", fix=SETUP_HINT)
    return _CACHE.get(path.resolve())


def resolve_judge_model(model: str) -> str:
    return JUDGE_MODEL_ALIASES.get(model, model)


def label_from_reply(reply: str) -> bool:
    """Upstream's label rule, the only one: correct iff ``yes`` occurs in the stripped, lower-cased reply."""
    return "yes" in reply.strip().lower()


def build_prompt(
    builder: PromptBuilder, question_type: str, question: str, answer: Any, hypothesis: str, *,
    abstention: bool, question_id: str = "?",
) -> str:
    try:
        return builder.build(question_type, question, answer, hypothesis, abstention=abstention)
    except NotImplementedError:
        raise JudgeInputError(
            f"question {question_id}: question_type {question_type!r} has no judge prompt upstream "
            f"(known: {', '.join(QUESTION_TYPES)})"
        ) from None
    except Exception as err:  # noqa: BLE001 - a bad item must become an error row, not a crash
        raise JudgeInputError(f"question {question_id}: the judge prompt could not be built "
                              f"({type(err).__name__}: {err})") from None


def judge_request(prompt: str, provider: str, model: str) -> ChatRequest:
    """Upstream's call: one user message, no system message, temperature 0, max_tokens 10, n 1."""
    return ChatRequest(
        provider=provider,
        model=resolve_judge_model(model),
        messages=({"role": "user", "content": prompt},),
        system=None,
        max_tokens=JUDGE_MAX_TOKENS,
        temperature=0,  # an int, as upstream sends it: the JSON body says 0, not 0.0
        n=1,
    )


def judge(
    question_type: str,
    question: str,
    answer: Any,
    hypothesis: str,
    longmemeval_root: str | Path | None,
    provider: str = "openai",
    model: str = "gpt-4o",
    question_id: str | None = None,
    llm: LLM | None = None,
) -> dict[str, Any]:
    """Judge one hypothesis; returns ``Verdict.to_dict()``. Raises JudgeInputError or providers.ProviderError."""
    if question_id is None:
        raise UserError("judge needs the question_id: abstention is decided by '_abs' in the id",
                        fix="pass question_id=...")
    abstention = is_abstention(question_id)
    if provider == "offline":
        from offline_judge import offline_judge

        return offline_judge(question_id, question_type, question, answer, hypothesis)
    builder = load_prompt_builder(longmemeval_root)
    prompt = build_prompt(builder, question_type, question, answer, hypothesis, abstention=abstention,
                          question_id=question_id)
    request = judge_request(prompt, provider, model)
    if llm is None:
        from providers import Gateway

        llm = Gateway()
    completion = llm.complete(request)
    reply = completion.text if isinstance(completion.text, str) else ""
    if not reply.strip():
        from providers import ProviderError

        raise ProviderError("malformed", f"question {question_id}: the judge ({provider} {request.model}) "
                            "returned an empty reply", attempts=completion.attempts)
    official = (
        provider == OFFICIAL_JUDGE_PROVIDER
        and request.model == OFFICIAL_JUDGE_MODEL
        and completion.model == OFFICIAL_JUDGE_MODEL
        and builder.is_upstream
    )
    return Verdict(
        label=label_from_reply(reply),
        raw=reply,
        provider=provider,
        model=completion.model,
        requested_model=model,
        official=official,
        prompt_sha256=hashlib.sha256(prompt.encode("utf-8")).hexdigest(),
        template_sha256=builder.template_sha256,
        tokensIn=completion.tokensIn,
        tokensOut=completion.tokensOut,
        latencyMs=completion.latencyMs,
        attempts=completion.attempts,
        cached=completion.cached,
    ).to_dict()


# ---------------------------------------------------------------------- CLI


def _load_records(path: Path) -> list[Any]:
    """A JSON array or JSON lines, plain or ``.xz``."""
    opener: Any = lzma.open if path.suffix == ".xz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as fh:
            text = fh.read()
    except OSError as err:
        raise UserError(f"cannot read {path}: {err.strerror or err}") from None
    except (UnicodeDecodeError, lzma.LZMAError) as err:
        raise UserError(f"cannot read {path}: not UTF-8 JSON text ({err})") from None
    try:
        data = json.loads(text)
        return list(data) if isinstance(data, list) else [data]
    except ValueError:
        try:
            return [json.loads(line) for line in text.splitlines() if line.strip()]
        except ValueError as err:
            raise UserError(f"{path} is neither a JSON array nor JSON lines: {err}") from None


REF_FIELDS = ("question_id", "question_type", "question", "answer")
"""What the judge needs from each record of the LongMemEval data file."""


def _record_name(number: int, record: Any) -> str:
    qid = record.get("question_id") if isinstance(record, dict) else None
    return f"record {number}" + (f" (question_id {qid})" if qid is not None else "")


def load_references(ref_file: Path) -> dict[str, dict[str, Any]]:
    """The data file's records by question_id; a record the judge cannot use is a UserError naming it."""
    references: dict[str, dict[str, Any]] = {}
    for number, record in enumerate(_load_records(ref_file), 1):
        missing = [f for f in REF_FIELDS if f not in record] if isinstance(record, dict) else list(REF_FIELDS)
        if missing:
            swapped = isinstance(record, dict) and "hypothesis" in record
            hint = " (are --hyp-file and --ref-file swapped?)" if swapped else ""
            raise UserError(
                f"--ref-file {ref_file}: {_record_name(number, record)} is not a LongMemEval question: "
                f"no {', '.join(missing)}{hint}",
                fix="pass the LongMemEval data file the hypotheses answer as --ref-file",
            )
        if not isinstance(record["question_type"], str):
            raise UserError(f"--ref-file {ref_file}: {_record_name(number, record)} has a question_type that is "
                            f"not a string ({record['question_type']!r})")
        references[str(record["question_id"])] = record
    return references


def load_hypotheses(hyp_file: Path) -> list[dict[str, Any]]:
    """Upstream's hypothesis lines ``{question_id, hypothesis}``; anything else is a UserError naming the record."""
    hypotheses = _load_records(hyp_file)
    for number, entry in enumerate(hypotheses, 1):
        missing = ([f for f in ("question_id", "hypothesis") if f not in entry] if isinstance(entry, dict)
                   else ["question_id", "hypothesis"])
        if missing:
            swapped = isinstance(entry, dict) and "question_type" in entry
            hint = " (are --hyp-file and --ref-file swapped?)" if swapped else ""
            raise UserError(
                f"--hyp-file {hyp_file}: {_record_name(number, entry)} is not a hypothesis line: "
                f"no {', '.join(missing)}{hint}",
                fix='pass a JSONL file of {"question_id": ..., "hypothesis": ...} as --hyp-file',
            )
    return hypotheses


def check_out_path(out: Path) -> None:
    """Refuse an output path that cannot be written before any judge call is paid for."""
    if out.is_dir():
        raise UserError(f"--out {out} is a directory", fix="pass a file path for the judged lines")
    if not out.parent.is_dir():
        raise UserError(f"--out {out}: folder {out.parent} does not exist", fix="create it or pick another --out")
    try:
        fd, probe = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".probe")
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        raise UserError(f"--out {out}: cannot write in {out.parent} ({err.strerror or err})") from None


def judge_file(
    hyp_file: Path, ref_file: Path, longmemeval_root: Path, provider: str, model: str, out: Path,
    llm: LLM | None = None,
) -> tuple[int, int]:
    """Upstream's file flow: judge each hypothesis line, write it back with ``autoeval_label``. -> (correct, n).

    ``out`` is replaced atomically once every line is judged: a failed run leaves a previous ``out`` as it was.
    """
    from checkpoint_io import write_atomic_bytes

    out = Path(out)
    if out.resolve() in (Path(hyp_file).resolve(), Path(ref_file).resolve()):
        raise UserError(f"--out {out} is one of the input files", fix="pick another --out")
    references = load_references(ref_file)
    hypotheses = load_hypotheses(hyp_file)
    check_out_path(out)
    lines: list[str] = []
    correct = judged = 0
    for entry in hypotheses:
        qid = str(entry["question_id"])
        ref = references.get(qid)
        if ref is None:
            print(f"skipping {qid}: not in {ref_file}", file=sys.stderr)
            continue
        verdict = judge(ref["question_type"], ref["question"], ref["answer"], str(entry["hypothesis"]),
                        longmemeval_root, provider=provider, model=model, question_id=qid, llm=llm)
        line = dict(entry)
        line["autoeval_label"] = {"model": verdict["model"], "label": verdict["label"]}
        lines.append(json.dumps(line, ensure_ascii=False) + "\n")
        judged += 1
        correct += bool(verdict["label"])
    try:
        write_atomic_bytes(out, "".join(lines).encode("utf-8"))
    except OSError as err:
        raise UserError(f"cannot write --out {out}: {err.strerror or err}") from None
    return correct, judged


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Judge hypotheses with the official LongMemEval judge.")
    parser.add_argument("--longmemeval-root", type=Path, required=True,
                        help="your clone of xiaowu0162/LongMemEval (the judge prompt is read from it)")
    parser.add_argument("--provider", default=OFFICIAL_JUDGE_PROVIDER, help="judge provider (official: openai)")
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
    args = parser.parse_args(argv)

    if args.print_prompt:
        missing = [f for f in ("question_type", "question_id", "question", "answer", "hypothesis")
                   if getattr(args, f) is None]
        if missing:
            raise UserError(f"--print-prompt needs {', '.join('--' + m.replace('_', '-') for m in missing)}")
        builder = load_prompt_builder(args.longmemeval_root)
        prompt = build_prompt(builder, args.question_type, args.question, args.answer, args.hypothesis,
                              abstention=is_abstention(args.question_id), question_id=args.question_id)
        request = judge_request(prompt, args.provider, args.model)
        print(prompt)
        print(f"model {request.model}, max_tokens {request.max_tokens}, temperature {request.temperature}, "
              f"n {request.n}; prompt function is upstream's: {builder.is_upstream}", file=sys.stderr)
        return 0
    if args.hyp_file is None or args.ref_file is None:
        raise UserError("give --hyp-file and --ref-file to judge a file, or --print-prompt for one case")
    load_prompt_builder(args.longmemeval_root)  # a missing checkout is reported before anything is read
    out = args.out or Path(f"{args.hyp_file}.eval-results-{args.model}")
    from providers import ProviderError

    try:
        correct, judged = judge_file(args.hyp_file, args.ref_file, args.longmemeval_root, args.provider,
                                     args.model, out)
    except ProviderError as err:
        raise UserError(f"judging stopped ({err.kind}): {err}; nothing was written, {out} is as it was") from None
    print(json.dumps({"judged": judged, "correct": correct, "accuracy": round(correct / judged, 4) if judged else None,
                      "out": str(out)}))
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
