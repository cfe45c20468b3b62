"""Planted mistakes on the scoring path, and the runner that plants them one at a time in a copy of the toolkit.

``MUTATIONS`` is the table: each row names a file, an exact snippet of its source (found exactly once, or the row
is stale and says so), the snippet's replacement, and what the replacement breaks. Each one changes figures or
stored hypotheses on a real run; ``tests/score/test_selftest_scoring.py`` asserts that the scoring self-test fails on
every one of them and passes on the unmutated copy.

The runner is fast because it never pays for an interpreter and the third-party imports per mutation: one
subprocess (``python tests/selftest_mutations.py COPY NAME...``) imports the copy's self-test once (which loads
numpy, jsonschema, backoff and the provider SDKs), then per mutation writes the mutated file, forks, and the
child drops every ``lme`` module, imports the self-test again from the mutated copy and runs it. The copy's
bytecode is compiled with checked hashes, so a mutated file is always recompiled, whatever its mtime.
"""

from __future__ import annotations

import ast
import compileall
import contextlib
import io
import json
import os
import py_compile
import shutil
import signal
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

REPO = Path(__file__).resolve().parent.parent
COPIED = ("scripts", "references", "plugins")
"""What the self-test reads: the library, the schemas, the hypotheses target."""
CHILD_TIMEOUT_S = 60


@dataclass(frozen=True)
class Mutation:
    name: str
    file: str
    """Relative to the repository's root."""
    old: str
    """An exact snippet of the file's source: it must occur exactly once."""
    new: str
    breaks: str
    """What a run would get wrong with it."""


M, RR, RS = "scripts/lme/score/metrics.py", "scripts/lme/core/run_records.py", "scripts/lme/store/run_store.py"
RROWS = "scripts/lme/store/run_rows.py"
JO, IR = "scripts/lme/judge/official.py", "scripts/lme/run/item_runner.py"
JS = "scripts/lme/judge/request_shapes.py"
RM, GR, RC, RECORDS = ("scripts/lme/score/retrieval_metrics.py", "scripts/lme/data/gold_registry.py",
                       "scripts/lme/score/run_comparison.py", "scripts/lme/core/records.py")
HF = "scripts/lme/data/hypotheses_file.py"

MUTATIONS: tuple[Mutation, ...] = (
    # --- micro, macro, denominators (metrics.py)
    Mutation("judged-only macro computed as micro", M,
             "accuracy_judged=_mean([per_type[t].accuracy_judged for t in judged_types]),",
             "accuracy_judged=overall.accuracy_judged,",
             "the task-averaged judged-only figure is the micro one"),
    Mutation("strict macro computed as micro", M,
             "accuracy_strict=_mean([per_type[t].accuracy_strict for t in present]),",
             "accuracy_strict=overall.accuracy_strict,",
             "the task-averaged strict figure is the micro one"),
    Mutation("strict macro over judged types only", M,
             "accuracy_strict=_mean([per_type[t].accuracy_strict for t in present]),",
             "accuracy_strict=_mean([per_type[t].accuracy_strict for t in judged_types]),",
             "a type whose every item failed leaves the strict macro instead of counting 0"),
    Mutation("strict abstention over the judged-only denominator", M,
             "abstention=_block(abstention),",
             "abstention=Figures(**{**vars(_block(abstention)), 'accuracy_strict': _block(abstention).accuracy_judged}),",
             "failed abstention items leave the strict abstention figure"),
    Mutation("strict accuracy over judged items", M,
             "accuracy_strict=correct / n if n else None,",
             "accuracy_strict=correct / judged if judged else None,",
             "errors and items never run drop out of the strict denominator"),
    Mutation("error or not-run counted as correct", M,
             "correct = sum(1 for v in values if v is True)",
             "correct = sum(1 for v in values if v is not False)",
             "an error row (label None) counts as correct"),
    Mutation("items without a row skipped by score", M,
             "        label = labels.get(qid)\n",
             "        if qid not in labels:\n            continue\n        label = labels.get(qid)\n",
             "an item of the manifest that never got a row is out of every denominator"),
    Mutation("items beyond the manifest not counted", M,
             "    every.extend([None] * unattributed)\n",
             "\n",
             "--n-total above the manifest no longer counts the missing items as wrong"),
    Mutation("abstention detected by question_type", M,
             "        if is_abstention(qid):\n",
             '        if qtype == "abstention":\n',
             "the abstention figure looks for a type that does not exist (it is the _abs id marker)"),
    # --- rounding and display (metrics.py)
    Mutation("Python round for display", M,
             "return value if not math.isfinite(scaled) else math.copysign(round(scaled) / scale, value)",
             "return round(value, decimals)",
             "7/160 shows 0.0437, upstream prints 0.0438"),
    Mutation("3 decimals for display", M, "DISPLAY_DECIMALS = 4", "DISPLAY_DECIMALS = 3",
             "figures shown with 3 decimals, upstream prints 4"),
    # --- the interval printed with the figures (metrics.py)
    Mutation("Wilson interval without the z^2/4n^2 term", M,
             "p * (1 - p) / n + z2 / (4 * n * n)", "p * (1 - p) / n",
             "the interval's half-width is too narrow"),
    Mutation("Wilson interval centred on p", M,
             "centre = (p + z2 / (2 * n)) / denom", "centre = p",
             "the interval is centred on the raw proportion"),
    Mutation("a 90% interval labelled 95%", M,
             "Z_95 = 1.959963984540054", "Z_95 = 1.6448536269514722",
             "the interval printed as 95% is a 90% interval"),
    Mutation("strict interval over the judged items", M,
             'wilson_strict=wilson_interval(correct, n),', 'wilson_strict=wilson_interval(correct, judged),',
             "the strict figure's interval uses the judged-only denominator"),
    Mutation("interval printed with 2 decimals", M,
             "def fmt_interval(interval: Sequence[float] | None, decimals: int = 3)",
             "def fmt_interval(interval: Sequence[float] | None, decimals: int = 2)",
             "the interval on scorecard.md and report.html loses a decimal"),
    # --- which row counts (run_records.py, run_rows.py, run_store.py)
    Mutation("manifest items without a row dropped from the item set", RR,
             '        known = [(i.question_id, i.question_type) for i in manifest.items]\n',
             '        known = [(i.question_id, i.question_type) for i in manifest.items if i.question_id in rows]\n',
             "items never run leave the strict denominator (the manifest no longer covers them)"),
    Mutation("n_total above the manifest ignored", RR,
             "unattributed = max(0, (n_total or 0) - len(types)) if n_total is not None else 0",
             "unattributed = 0",
             "--n-total 500 on a 450-item manifest scores out of 450"),
    Mutation("first row of a question wins", RROWS,
             "            this_file[row.question_id] = row\n",
             "            this_file.setdefault(row.question_id, row)\n",
             "a resumed item keeps its first (failed or older) result"),
    Mutation("first shard directory wins", RROWS,
             "if old is None or row.finished_at >= old.finished_at:", "if old is None:",
             "a question re-run in a later shard keeps the older shard's result"),
    Mutation("earlier finish wins across shards", RROWS,
             "if old is None or row.finished_at >= old.finished_at:",
             "if old is None or row.finished_at <= old.finished_at:",
             "the older of two shard rows wins"),
    Mutation("shards not merged", RS,
             "latest, earlier = load_rows(run_dir)", "latest, earlier = load_rows(run_dir, include_shards=False)",
             "a sharded run is scored from its root's rows only"),
    # --- the label rule (judge_official.py)
    Mutation("startswith('yes') label rule", JO,
             'return "yes" in reply.strip().lower()', 'return reply.strip().lower().startswith("yes")',
             '"The answer is yes" is labelled wrong'),
    Mutation("label = 'no' not in reply", JO,
             'return "yes" in reply.strip().lower()', 'return "no" not in reply.strip().lower()',
             '"Yes, I know it" is labelled wrong, an empty reply right'),
    Mutation("case-sensitive label rule", JO,
             'return "yes" in reply.strip().lower()', 'return "yes" in reply.strip()',
             '"YES." is labelled wrong'),
    Mutation("an empty reply labelled correct", JO,
             'return "yes" in reply.strip().lower()', 'return not reply.strip() or "yes" in reply.strip().lower()',
             "an empty or blank judge reply is labelled correct (upstream: 'yes' in '' is False)"),
    # --- the text the judge is given (judge_official.py, item_runner.py)
    Mutation("abstention prompt chosen by question_type", JO,
             "abstention=is_abstention(item.question_id), question_id=item.question_id)",
             'abstention=item.question_type == "abstention", question_id=item.question_id)',
             "the abstention template is never applied"),
    Mutation("one template for every type", JO,
             "return builder.build(question_type, question, answer, hypothesis, abstention=abstention)",
             'return builder.build("single-session-user", question, answer, hypothesis, abstention=abstention)',
             "temporal, knowledge-update and preference items get the generic prompt"),
    Mutation("answer and hypothesis swapped in the prompt", JO,
             "return builder.build(question_type, question, answer, hypothesis, abstention=abstention)",
             "return builder.build(question_type, question, hypothesis, answer, abstention=abstention)",
             "the judge reads the gold answer as the response"),
    Mutation("judge max_tokens not upstream's", JS, "UPSTREAM_MAX_TOKENS = 10", "UPSTREAM_MAX_TOKENS = 100",
             "the judge call is not upstream's (max_tokens 10)"),
    Mutation("a system message added to the judge call", JS,
             "system=None, max_tokens=self.max_tokens", 'system="You are a careful grader.", max_tokens=self.max_tokens',
             "the judge call is not upstream's (one user message, no system message)"),
    Mutation("reader output judged unstripped", IR,
             "return hyp.hypothesis if settings.target == HYPOTHESES_TARGET else hyp.hypothesis.strip()",
             "return hyp.hypothesis",
             "the judge reads the reader's surrounding whitespace (upstream strips it)"),
    Mutation("a hypotheses file stripped before judging", IR,
             "return hyp.hypothesis if settings.target == HYPOTHESES_TARGET else hyp.hypothesis.strip()",
             "return hyp.hypothesis.strip()",
             "a file's hypotheses are not judged as written (upstream judges a file as written)"),
    Mutation("the stored hypothesis is the raw output", IR,
             "        status=JUDGED,\n        hypothesis=hypothesis,\n",
             "        status=JUDGED,\n        hypothesis=hyp.hypothesis,\n",
             "item-results.jsonl stores text other than what was judged"),
    Mutation("a number in a hypotheses file not taken as text", HF,
             "hypotheses[qid] = str(text)", "hypotheses[qid] = text",
             'a file answering 3 (a JSON number) gets an error row, upstream judges "3"'),
    Mutation("an error row loses its hypothesis", IR,
             "hypothesis=hypothesis if hypothesis is not None else (None if hyp is None else hyp.hypothesis),",
             "hypothesis=None,",
             "a judge failure drops the answer it was to judge (a resume cannot show it)"),
    # --- retrieval metrics (records.py, retrieval_metrics.py)
    Mutation("evidence sessions without has_answer counted as gold", RECORDS,
             'if "answer" in s.session_id and any(t.role == "user" and t.has_answer for t in s.turns)',
             'if "answer" in s.session_id',
             "sessions upstream renames noans count as gold"),
    Mutation("recall_any computed as recall_all", RM,
             "return float(any(g in top for g in set(gold)))", "return float(all(g in top for g in set(gold)))",
             "recall_any@k is recall_all@k"),
    Mutation("textbook DCG instead of upstream's", RM,
             "rel / math.log2(i + 1)", "rel / math.log2(i + 2)",
             "ndcg_any@k discounts rank 2 (upstream: rel_1 + sum rel_i / log2 i)"),
    Mutation("ndcg looks one past k", RM,
             "for doc in list(ranked)[:k]])", "for doc in list(ranked)[: k + 1]])",
             "ndcg_any@k counts the session at rank k+1"),
    Mutation("abstention items kept in retrieval metrics", RM,
             "return is_abstention(question_id) or len(gold) == 0", "return len(gold) == 0",
             "abstention items are scored for retrieval (upstream skips them)"),
    # --- the gold-error registry's second figure (gold_registry.py)
    Mutation("wrong gold not left out", GR,
             'if status == "wrong" or (status == "fixed-in-cleaned" and release == "original"):',
             'if status == "fixed-in-cleaned" and release == "original":',
             "the figure without reported gold errors equals the official one"),
    Mutation("fixed-in-cleaned left out on the cleaned release", GR,
             'if status == "wrong" or (status == "fixed-in-cleaned" and release == "original"):',
             'if status in ("wrong", "fixed-in-cleaned"):',
             "items the cleaned release fixed are left out of its second figure"),
    Mutation("disputed gold left out", GR,
             'if status == "wrong" or (status == "fixed-in-cleaned" and release == "original"):',
             'if status in ("wrong", "disputed") or (status == "fixed-in-cleaned" and release == "original"):',
             "disputed items (never left out) are left out"),
    Mutation("registry variants ignored", GR,
             "    if variant is not None and variant not in entry.get(\"variants\", VARIANTS):\n        return False\n",
             "",
             "an entry for _m is left out of an _s run"),
    Mutation("registry releases ignored", GR,
             "return not (releases and release is not None and release not in releases)", "return True",
             "an entry for the original release is left out of a cleaned-release run"),
    # --- the comparison's items (run_comparison.py)
    Mutation("error rows compared", RC,
             'if sides[q] == ("judged", "judged")),', 'if "not_run" not in sides[q]),',
             "an item one run left as an error row counts as a fix or a regression (and in McNemar)"),
    Mutation("items one run never ran compared", RC,
             'if sides[q] == ("judged", "judged")),', 'if sides[q] != ("not_run", "not_run")),',
             "a 20-item run against a 40-item one: the 20 items it never ran become fixes or regressions"),
    # --- McNemar in the comparison (run_comparison.py)
    Mutation("McNemar tail one short", RC,
             "for i in range(min(b, c) + 1))", "for i in range(min(b, c)))",
             "the exact p-value leaves out the observed count"),
    Mutation("one-sided McNemar", RC,
             "Fraction(2 * tail, 2**n)", "Fraction(tail, 2**n)",
             "the comparison's p-value is one-sided, printed as two-sided"),
)


def by_name() -> dict[str, Mutation]:
    table = {m.name: m for m in MUTATIONS}
    assert len(table) == len(MUTATIONS), "two mutations share a name"
    return table


def anchor_count(root: Path, mutation: Mutation) -> int:
    return (Path(root) / mutation.file).read_text(encoding="utf-8").count(mutation.old)


def make_copy(dest: Path) -> Path:
    """Copy what the self-test reads into ``dest`` and compile it with checked-hash bytecode; returns ``dest``."""
    dest = Path(dest)
    for name in COPIED:
        shutil.copytree(REPO / name, dest / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    compileall.compile_dir(str(dest / "scripts"), quiet=1, workers=1,
                           invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
    return dest


class StaleMutation(Exception):
    """The mutation's snippet is not in its file exactly once: the code moved, the table must follow."""


@contextlib.contextmanager
def planted(root: Path, mutation: Mutation) -> Iterator[Path]:
    """``mutation`` written into its file under ``root`` for the block's duration (the original bytes put back
    after, whatever happens); StaleMutation, with nothing written, when the snippet is not there exactly once."""
    path = Path(root) / mutation.file
    original = path.read_bytes()
    text = original.decode("utf-8")
    count = text.count(mutation.old)
    if count != 1:
        raise StaleMutation(f"{mutation.name!r}: its snippet occurs {count} times in {mutation.file} (expected once)")
    path.write_text(text.replace(mutation.old, mutation.new), encoding="utf-8")
    try:
        yield path
    finally:
        path.write_bytes(original)


def run_mutations(copy: Path, names: Iterable[str | None], timeout: float = 600) -> dict[str, dict]:
    """Run the self-test of ``copy`` unmutated (name None, key ``"none"``) and with each named mutation.

    Each result: ``{"status": "killed"|"survived"|"stale"|"crashed", "rc", "failed": [first failing checks],
    "detail"}``. One subprocess for them all (see the module docstring)."""
    names = ["none" if n is None else n for n in names]
    env = dict(os.environ)
    if os.access("/dev/shm", os.W_OK):  # the stored runs' fsyncs cost nothing in memory
        env["TMPDIR"] = "/dev/shm"
    proc = subprocess.run([sys.executable, __file__, str(copy), *names], capture_output=True, text=True,
                          timeout=timeout, cwd=copy, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"the mutation runner failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout)


# --------------------------------------------------------------------------- the runner's subprocess


ALWAYS_RELOADED = ("lme.targets.generation_driver",)
"""Reloaded in every child whatever the mutation: it caches the target modules it loaded (``lme_target_*``)."""


def _imports_of(path: Path, known: set[str]) -> set[str]:
    """The loaded ``lme`` modules a source file imports, anywhere in it (function-level imports included)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names}
    return found & known


def import_graph() -> dict[str, set[str]]:
    """For each loaded ``lme`` module, the loaded ``lme`` modules that import it (read once from their sources)."""
    loaded = {name: Path(m.__file__) for name, m in sys.modules.items()
              if (name == "lme" or name.startswith("lme.")) and getattr(m, "__file__", None)}
    imported_by: dict[str, set[str]] = {}
    for name, path in loaded.items():
        for target in _imports_of(path, set(loaded)):
            imported_by.setdefault(target, set()).add(name)
    return imported_by


def importers_closure(roots: Iterable[str], imported_by: dict[str, set[str]]) -> set[str]:
    """``roots`` and every module that imports one of them, directly or not."""
    todo, seen = list(roots), set(roots)
    while todo:
        for importer in imported_by.get(todo.pop(), ()):
            if importer not in seen:
                seen.add(importer)
                todo.append(importer)
    return seen


def module_of(file: str) -> str:
    rel = Path(file).relative_to("scripts").with_suffix("")
    return ".".join(rel.parts)


def _purge(names: Iterable[str]) -> None:
    """Forget these modules (and their names on the parent package, or ``from lme.x import m`` finds the old one),
    and every loaded target module."""
    for name in [*names, *(n for n in sys.modules if n.startswith("lme_target_"))]:
        sys.modules.pop(name, None)
        parent, _, child = name.rpartition(".")
        if parent in sys.modules and child in vars(sys.modules[parent]):
            delattr(sys.modules[parent], child)


def _selftest_once(stale: set[str]) -> dict:
    """Import the self-test again (the modules in ``stale`` from the copy's source) and run its command."""
    import importlib

    started = time.perf_counter()
    _purge({*stale, "lme.cli.selftest_scoring"})  # the command too: it holds the library module it imported
    importlib.invalidate_caches()
    module = importlib.import_module("lme.cli.selftest_scoring")
    imported = time.perf_counter()
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        rc = module.main([])
    failed = [line for line in out.getvalue().splitlines() if line.rstrip().endswith("| FAIL |")]
    return {"rc": rc, "failed": failed[:5], "n_failed": len(failed), "reloaded": len(stale),
            "import_s": round(imported - started, 3), "run_s": round(time.perf_counter() - imported, 3)}


def _in_child(write_fd: int, stale: set[str]) -> None:
    """The forked child: run, report through the pipe, and end here whatever happens (never back in the loop)."""
    try:
        signal.alarm(CHILD_TIMEOUT_S)
        sys.dont_write_bytecode = True  # the copy's bytecode stays the unmutated one
        try:
            result = _selftest_once(stale)
        except BaseException as err:  # noqa: BLE001 - the child reports everything, the parent judges
            result = {"rc": None, "failed": [], "n_failed": 0,
                      "crash": "".join(traceback.format_exception(type(err), err, err.__traceback__))[-3000:]}
        with os.fdopen(write_fd, "w") as pipe:
            json.dump(result, pipe)
    finally:
        os._exit(0)


def _fork_selftest(stale: set[str]) -> dict:
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        _in_child(write_fd, stale)
    os.close(write_fd)
    with os.fdopen(read_fd) as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    if not data:
        return {"rc": None, "failed": [], "n_failed": 0, "crash": f"child ended with wait status {status}"}
    return json.loads(data)


def _classify(result: dict) -> str:
    if result.get("crash"):
        return "crashed"
    if result["rc"] == 1 and result["n_failed"]:
        return "killed"
    return "survived" if result["rc"] == 0 else "crashed"


def _serve(copy: Path, names: list[str]) -> dict[str, dict]:
    sys.path.insert(0, str(copy / "scripts"))
    import lme.score.selftest_scoring  # noqa: F401  (warms numpy, jsonschema, the SDKs: every child inherits them)

    lme.score.selftest_scoring.run_selftest()  # and the lazy imports and caches a run fills
    table = by_name()
    imported_by = import_graph()
    results: dict[str, dict] = {}
    for name in names:
        if name == "none":
            result = _fork_selftest({n for n in sys.modules if n == "lme" or n.startswith("lme.")})  # all afresh
            results[name] = {**result, "status": "passed" if result["rc"] == 0 and not result.get("crash")
                             else "failed"}
            continue
        mutation = table[name]
        try:
            with planted(copy, mutation):
                result = _fork_selftest(importers_closure([module_of(mutation.file), *ALWAYS_RELOADED], imported_by))
        except StaleMutation as err:
            results[name] = {"status": "stale", "rc": None, "failed": [], "n_failed": 0, "detail": str(err)}
            continue
        results[name] = {**result, "status": _classify(result)}
    return results


if __name__ == "__main__":
    print(json.dumps(_serve(Path(sys.argv[1]), sys.argv[2:])))
