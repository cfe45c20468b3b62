"""The official LongMemEval judge: upstream's prompt, upstream's call settings, upstream's label rule.

The prompt comes from the user's own LongMemEval checkout: only the function ``get_anscheck_prompt`` is taken
from ``<root>/src/evaluation/evaluate_qa.py`` (parsed with ``ast`` and compiled alone, so the module's heavy
imports and ``__main__`` block never run, and the checkout is never modified). The call is what upstream sends:
one user message holding the prompt, no system message, ``temperature 0``, ``max_tokens 10``, ``n 1``, with the
judge alias ``gpt-4o`` pinned to ``gpt-4o-2024-08-06``. The label is ``'yes' in reply.strip().lower()``.

A verdict is ``official`` only for provider ``openai`` (or ``azure``: the same snapshot through Azure OpenAI), the
model ``gpt-4o-2024-08-06`` (requested and returned), and a prompt function whose source is upstream's (its sha256
is pinned below). Any other judge is allowed and recorded as non-official. An empty reply is labelled False, as
upstream does. Official verdicts can be exported and imported (``export-verdicts`` / ``import-verdicts``, see
``verdict_archive``); an archived verdict is used instead of a call. File mode (``--hyp-file``) judges
``--concurrency`` lines at once through a run's gateway (rate limiter and call cache), output in input order.

Usage:
    python scripts/judge_shim.py --longmemeval-root ~/LongMemEval --print-prompt \\
        --question-type temporal-reasoning --question-id q1 --question "How many days...?" \\
        --answer 18 --hypothesis "19 days"
    python scripts/judge_shim.py --longmemeval-root ~/LongMemEval --hyp-file hyps.jsonl \\
        --ref-file longmemeval_oracle.json --concurrency 8   # writes hyps.jsonl.eval-results-gpt-4o
    python scripts/judge_shim.py export-verdicts --project . --out verdicts.jsonl
    python scripts/judge_shim.py import-verdicts verdicts.jsonl --project .
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
from typing import Any, Callable, Mapping, Sequence

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
    is_official_judge,
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
    """Upstream's call: one user message, no system message, temperature 0, max_tokens 10, n 1.

    An empty reply is a reply (``allow_empty``): upstream labels it False (``'yes' in ''``) and goes on."""
    return ChatRequest(
        provider=provider,
        model=resolve_judge_model(model),
        messages=({"role": "user", "content": prompt},),
        system=None,
        max_tokens=JUDGE_MAX_TOKENS,
        temperature=0,  # an int, as upstream sends it: the JSON body says 0, not 0.0
        n=1,
        allow_empty=True,
    )


CONTINUITY_HINT = (
    "the official judge gpt-4o-2024-08-06 is not served here (retired?): reuse official verdicts from an archive "
    "(judge_shim.py import-verdicts FILE), route the same snapshot through Azure OpenAI (judgeProvider azure with "
    "providers.azure endpoint, deployment, api_version; key AZURE_OPENAI_API_KEY), or measure a successor judge "
    "with scripts/judge_agreement.py (its runs are labelled with that agreement, never official)"
)
"""What to do when the official judge answers not_found: named in the one-line stop of a run and of --hyp-file."""


def official_judge_gone(err: Any, provider: str, model: str) -> bool:
    """True when ``err`` (a ProviderError, or a row's ``error`` dict) is the official judge answering 'not found'
    (the snapshot retired from the API)."""
    kind = err.get("kind") if isinstance(err, dict) else getattr(err, "kind", None)
    return kind == "not_found" and is_official_judge(provider, resolve_judge_model(model))


def _verdict_summary(verdict: Verdict) -> dict[str, Any]:
    return {"label": verdict.label, "raw": verdict.raw, "model": verdict.model, "cached": verdict.cached,
            "source": verdict.source}


def _fresh_complete(llm: LLM) -> Callable[[ChatRequest], Any]:
    """The LLM's call that bypasses (neither reads nor writes) a call cache, for the repeats of ``--repeat``."""
    return getattr(llm, "complete_fresh", None) or llm.complete


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
    *,
    archive: Any = None,
    repeat: int = 1,
) -> dict[str, Any]:
    """Judge one hypothesis; returns ``Verdict.to_dict()``. Raises JudgeInputError or providers.ProviderError.

    ``archive`` (a ``verdict_archive.VerdictArchive``): an official verdict for this exact prompt and model is used
    instead of a call. ``repeat`` K > 1 judges K times (the K-1 repeats bypass cache and archive) and adds
    ``verdicts`` (all K, the first is the label) and ``stability`` to the returned dict.
    """
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
    prompt_sha256 = hashlib.sha256(prompt.encode("utf-8")).hexdigest()
    if llm is None:
        from providers import Gateway

        llm = Gateway()
    official_route = is_official_judge(provider, request.model)
    archived = archive.lookup(prompt_sha256, request.model) if archive is not None and official_route else None
    if archived is not None:
        first = _verdict(builder, provider, model, request, prompt_sha256, archived["raw"], archived["model"],
                         source="archive")
    else:
        completion = llm.complete(request)
        first = _verdict(builder, provider, model, request, prompt_sha256, completion.text, completion.model,
                         completion=completion, source="cache" if completion.cached else "call")
    out = first.to_dict()
    if repeat > 1:
        from judge_stability import stability

        fresh = _fresh_complete(llm)
        verdicts = [_verdict_summary(first)]
        for _ in range(repeat - 1):
            try:
                again = fresh(request)
            except Exception as err:  # noqa: BLE001 - a failed repeat never costs the item its official label
                verdicts.append({"label": None, "error": f"{getattr(err, 'kind', type(err).__name__)}: {err}"})
                continue
            verdicts.append(_verdict_summary(_verdict(builder, provider, model, request, prompt_sha256, again.text,
                                                      again.model, completion=again, source="call")))
        out["verdicts"] = verdicts
        out["stability"] = stability(verdicts)
    return out


def _verdict(builder: PromptBuilder, provider: str, model: str, request: ChatRequest, prompt_sha256: str,
             reply: Any, returned_model: str, *, completion: Any = None, source: str) -> Verdict:
    reply = reply if isinstance(reply, str) else ""
    official = is_official_judge(provider, request.model) and returned_model == OFFICIAL_JUDGE_MODEL \
        and builder.is_upstream
    return Verdict(
        label=label_from_reply(reply),
        raw=reply,
        provider=provider,
        model=returned_model,
        requested_model=model,
        official=official,
        prompt_sha256=prompt_sha256,
        template_sha256=builder.template_sha256,
        tokensIn=0 if completion is None else completion.tokensIn,
        tokensOut=0 if completion is None else completion.tokensOut,
        latencyMs=0.0 if completion is None else completion.latencyMs,
        attempts=0 if completion is None else completion.attempts,
        cached=source != "call",
        source=source,
    )


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


def load_hypotheses(hyp_file: Path, *, flag: str = "--hyp-file") -> list[dict[str, Any]]:
    """Upstream's hypothesis lines ``{question_id, hypothesis}``; anything else is a UserError naming the record."""
    hypotheses = _load_records(hyp_file)
    for number, entry in enumerate(hypotheses, 1):
        missing = ([f for f in ("question_id", "hypothesis") if f not in entry] if isinstance(entry, dict)
                   else ["question_id", "hypothesis"])
        if missing:
            swapped = isinstance(entry, dict) and "question_type" in entry
            hint = ("" if not swapped else " (are --hyp-file and --ref-file swapped?)" if flag == "--hyp-file"
                    else " (is it the dataset file?)")
            raise UserError(
                f"{flag} {hyp_file}: {_record_name(number, entry)} is not a hypothesis line: "
                f"no {', '.join(missing)}{hint}",
                fix=f'pass a JSONL file of {{"question_id": ..., "hypothesis": ...}} as {flag}',
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
    llm: LLM | None = None, *, archive: Any = None, repeat: int = 1, registry: Any = None, concurrency: int = 1,
    make_llm: Callable[[], LLM] | None = None,
) -> tuple[int, int]:
    """Upstream's file flow: judge each hypothesis line, write it back with ``autoeval_label``. -> (correct, n).

    ``concurrency`` lines are judged at once (through ``llm``, e.g. ``file_gateway``'s limiter and call cache); the
    output keeps the input's order, so it is the same whatever the concurrency. ``out`` is replaced atomically once
    every line is judged: a failed run leaves a previous ``out`` as it was (the verdicts it got are in the cache).
    With ``repeat`` K > 1 each line also gets ``autoeval_verdicts`` (all K verdicts; the first is the label) and
    ``registry`` (a ``judge_stability.StabilityRegistry``) gets the counts. ``make_llm`` builds the LLM once the
    inputs are checked (a mistake in them creates no call cache).
    """
    from checkpoint_io import write_atomic_bytes

    out = Path(out)
    if out.resolve() in (Path(hyp_file).resolve(), Path(ref_file).resolve()):
        raise UserError(f"--out {out} is one of the input files", fix="pick another --out")
    references = load_references(ref_file)
    hypotheses = load_hypotheses(hyp_file)
    check_out_path(out)
    jobs = []
    for entry in hypotheses:
        qid = str(entry["question_id"])
        if qid not in references:
            print(f"skipping {qid}: not in {ref_file}", file=sys.stderr)
            continue
        jobs.append((qid, entry, references[qid]))
    if make_llm is not None and jobs:
        llm = make_llm()

    def one(job: tuple[str, dict[str, Any], dict[str, Any]]) -> dict[str, Any]:
        qid, entry, ref = job
        return judge(ref["question_type"], ref["question"], ref["answer"], str(entry["hypothesis"]),
                     longmemeval_root, provider=provider, model=model, question_id=qid, llm=llm,
                     archive=archive, repeat=repeat)

    verdicts = _in_order(one, jobs, concurrency)
    lines: list[str] = []
    for (qid, entry, _ref), verdict in zip(jobs, verdicts):
        line = dict(entry)
        line["autoeval_label"] = {"model": verdict["model"], "label": verdict["label"]}
        if "verdicts" in verdict:
            line["autoeval_verdicts"] = verdict["verdicts"]
            if registry is not None:
                registry.record(qid, verdict, f"judge_shim {hyp_file}")
        lines.append(json.dumps(line, ensure_ascii=False) + "\n")
    try:
        write_atomic_bytes(out, "".join(lines).encode("utf-8"))
    except OSError as err:
        raise UserError(f"cannot write --out {out}: {err.strerror or err}") from None
    return sum(bool(v["label"]) for v in verdicts), len(verdicts)


def _in_order(work: Callable[[Any], Any], jobs: Sequence[Any], concurrency: int) -> list[Any]:
    """``work`` over ``jobs``, at most ``concurrency`` at once, results in the jobs' order. The first failure (or
    Ctrl-C) starts no further job, lets the calls in flight finish (their replies reach the call cache), and is
    raised."""
    import concurrent.futures as cf

    results: list[Any] = [None] * len(jobs)
    waiting = iter(enumerate(jobs))
    in_flight: dict[cf.Future, int] = {}
    with cf.ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="judge") as pool:
        while True:
            while len(in_flight) < max(1, concurrency):
                nxt = next(waiting, None)
                if nxt is None:
                    break
                in_flight[pool.submit(work, nxt[1])] = nxt[0]
            if not in_flight:
                return results
            done, _ = cf.wait(in_flight, return_when=cf.FIRST_COMPLETED)
            for fut in done:
                results[in_flight.pop(fut)] = fut.result()


def file_gateway(project: Path, cfg: Mapping[str, Any], concurrency: int, *, read_cache: bool = True) -> LLM:
    """The LLM of ``--hyp-file``: a run's gateway (``run_gateway``) with the project's call cache, the run's pacer
    (at most ``concurrency`` calls in flight, paced by the provider's limits), and the config's provider settings
    (``cfg``: ``project_config``)."""
    import config as config_mod
    from call_cache import CallCache
    from config_defaults import STATE_DIR
    from rate_pacer import Pacer
    from run_gateway import RunGateway

    cache = None
    if cfg.get("cacheEnabled", True):
        cache_dir = config_mod.resolve_path(project, cfg.get("cache_dir") or Path(STATE_DIR) / "cache")
        cache = CallCache(cache_dir, read=read_cache)
    return RunGateway(settings=provider_settings(cfg), cache=cache,
                      limiter=Pacer(concurrency, limits=config_mod.rate_limits(cfg)))


def provider_settings(cfg: Mapping[str, Any]) -> Any:
    """``providers.ProviderSettings`` from a config: base URLs of named providers, Azure, timeout, attempts."""
    import providers

    named = cfg.get("providers") or {}
    return providers.ProviderSettings(
        base_urls={n: str(p["base_url"]) for n, p in named.items() if isinstance(p, Mapping) and p.get("base_url")},
        azure={k: str(v) for k, v in dict(named.get("azure") or {}).items()},
        timeout_s=float(cfg.get("requestTimeoutSeconds", 600)), max_attempts=int(cfg.get("maxAttempts", 8)))


def _archive_main(command: str, argv: Sequence[str]) -> int:
    """``export-verdicts`` / ``import-verdicts``: the portable archive of official verdicts."""
    import verdict_archive

    parser = argparse.ArgumentParser(prog=f"judge_shim.py {command}", description=(
        "Write every official verdict of this project (its archive and its runs) to one JSONL file."
        if command == "export-verdicts" else
        "Add the official verdicts of an exported file to this project's archive; the judge then uses them "
        "instead of a call, and they stay official."))
    parser.add_argument("--project", type=Path, default=Path("."), help="project root (default: .)")
    if command == "export-verdicts":
        parser.add_argument("--out", type=Path, required=True, help="the JSONL file to write")
    else:
        parser.add_argument("file", type=Path, help="a file written by judge_shim.py export-verdicts")
    args = parser.parse_args(argv)
    project = args.project.resolve()
    if command == "export-verdicts":
        import scorecard

        result = verdict_archive.export(project, scorecard.runs_dir(project), args.out)
        result["out"] = str(args.out)
    else:
        result = verdict_archive.import_file(project, args.file)
        result["archive"] = str(verdict_archive.archive_path(project))
    print(json.dumps(result))
    return 0


ARCHIVE_COMMANDS = ("export-verdicts", "import-verdicts")
FILE_MODE_EPILOG = (
    "File mode (--hyp-file): the lines are judged --concurrency at a time through the same rate limiter and call "
    "cache as runs (the project's .longmemeval-benchmarks/cache, unless cacheEnabled is false); the output file "
    "keeps the input's order and is written once every line is judged. An interrupted or failed judge loses no "
    "paid verdict: they are in the cache, so a re-run pays only for the rest. For checkpoints, resume by run id "
    "and a scorecard, judge the file as a run: run_benchmark.py --hypotheses FILE. "
    "Verdict archive: judge_shim.py export-verdicts --out FILE | judge_shim.py import-verdicts FILE (see --help of "
    "each).")


def project_config(project: Path) -> dict[str, Any]:
    """The project's config.json, or {} when it has none (a file can be judged outside a project)."""
    import config as config_mod

    return dict(config_mod.load_config(project)) if config_mod.config_path(project).is_file() else {}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ARCHIVE_COMMANDS:
        return _archive_main(argv[0], argv[1:])
    parser = argparse.ArgumentParser(description="Judge hypotheses with the official LongMemEval judge.",
                                     epilog=FILE_MODE_EPILOG)
    parser.add_argument("--longmemeval-root", type=Path, required=True,
                        help="your clone of xiaowu0162/LongMemEval (the judge prompt is read from it)")
    parser.add_argument("--provider", default=OFFICIAL_JUDGE_PROVIDER,
                        help="judge provider (official: openai, or azure for the same snapshot through Azure OpenAI)")
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
    parser.add_argument("--repeat", type=int, default=1, metavar="K",
                        help="judge each hypothesis K times (the first verdict is the label); counts go to the "
                             "project's .longmemeval-benchmarks/judge-stability.jsonl")
    parser.add_argument("--project", type=Path, default=Path("."),
                        help="project root whose verdict archive and call cache are used and whose stability "
                             "registry is written (default: .)")
    parser.add_argument("--concurrency", type=int, default=None, metavar="N",
                        help="judge N lines at once under the runs' adaptive rate limiter (default: the project's "
                             "concurrency, else 8; 1 = one call at a time, as upstream); the output is the same, in "
                             "the input's order")
    parser.add_argument("--no-cache", action="store_true",
                        help="do not read the call cache (replies are still stored in it)")
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
    if args.repeat < 1:
        raise UserError(f"--repeat {args.repeat} must be >= 1", fix="e.g. --repeat 3")
    if args.concurrency is not None and args.concurrency < 1:
        raise UserError(f"--concurrency {args.concurrency} must be >= 1", fix="e.g. --concurrency 8")
    load_prompt_builder(args.longmemeval_root)  # a missing checkout is reported before anything is read
    out = args.out or Path(f"{args.hyp_file}.eval-results-{args.model}")
    import verdict_archive
    from judge_stability import StabilityRegistry
    from providers import ProviderError

    project = args.project.resolve()
    registry = StabilityRegistry(project) if args.repeat > 1 else None
    cfg = project_config(project)
    concurrency = args.concurrency or max(1, int(cfg.get("concurrency", 8)))
    kept = ("; the verdicts already received are in the call cache: a re-run does not pay for them again"
            if cfg.get("cacheEnabled", True) else "")
    try:
        correct, judged = judge_file(args.hyp_file, args.ref_file, args.longmemeval_root, args.provider,
                                     args.model, out, archive=verdict_archive.for_project(project),
                                     repeat=args.repeat, registry=registry, concurrency=concurrency,
                                     make_llm=lambda: file_gateway(project, cfg, concurrency,
                                                                   read_cache=not args.no_cache))
    except ProviderError as err:
        if official_judge_gone(err, args.provider, args.model):
            raise UserError(f"judging stopped: {CONTINUITY_HINT}; nothing was written, {out} is as it was") from None
        raise UserError(f"judging stopped ({err.kind}): {err}; nothing was written, {out} is as it was{kept}") \
            from None
    print(json.dumps({"judged": judged, "correct": correct, "accuracy": round(correct / judged, 4) if judged else None,
                      "out": str(out)}))
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
