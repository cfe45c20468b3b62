"""Bad input gets one clear line: a table of the mistakes users make, each run the way a user runs it.

Every case runs one entry script by path (``scripts/<name>``) with the project's ``.longmemeval-venv/bin/python``
(or, for the wrong-interpreter cases, a python without our packages), from a copy of a project made like a user's:
``setup_project.py --sample --skip-venv`` (tests/markdown_harness.py's ``prepare_project``), a stand-in upstream
checkout for the judge prompt, and one offline run, ``r1``. For each case:

- exit status 2;
- exactly one non-empty line on stderr, the ``error: ...`` line (what, where, how to fix);
- no ``Traceback`` on stdout or stderr;
- the project tree byte-identical before and after (paths, sizes, sha256; only ``__pycache__`` is ignored): no run
  directory, no cache file, no lock;
- nothing outside the project touched: every case has a folder ``outside`` beside its project (files a planted
  symlink points at: ``link_out``), snapshotted the same way and unchanged after the case.

A case is one line of ``CASES``: section, id, the command (script and arguments, shell-quoted; ``{placeholders}``
are filled per case), what to change first (setup functions), environment changes, the fake model server's answer.
Cases that fail today (issue 14) carry ``today=``, the one-line description of what happens instead: they are
strict xfails, so a fix turns them red until the mark is removed. ``CONTROLS`` run the same projects with nothing
wrong and must succeed: they prove each bad case fails because of its bad input, not because of the fixture.

Nothing here reaches the internet: every case's base URLs point at its own fake server (tests/fake_llm_server.py,
in this process) or at a closed port on 127.0.0.1, and the keys are dummies. All the selected cases run at once on
a thread pool (each in its own copy of the project), so the file takes seconds.

How a case's command starts: as a subprocess (the controls, the cases that need a process of their own, and the
first case of each script: ``SAMPLES``), or, for the rest, forked by tests/script_forker.py from a process that has
already imported the toolkit and the SDKs: the same process after its imports (its own session, working folder,
environment, arguments and output files), without the ~0.4 s of CPU each start costs. Each sample runs both ways,
and the two must end the same (``test_a_forked_command_ends_as_its_subprocess_does``).
"""

from __future__ import annotations

import concurrent.futures as cf
import ctypes
import hashlib
import importlib.util
import json
import os
import resource
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

import pytest

import shared_work
from fake_llm_server import FakeLLMServer
from markdown_harness import prepare_project
from script_forker import Forker
from upstream_standin import make_upstream_tree

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "scripts"
STATE = ".longmemeval-benchmarks"
CONFIG = f"{STATE}/config.json"
DATASET = f"{STATE}/data/longmemeval_sample.json"
RUNS = f"{STATE}/runs"
RUN_ID = "r1"
"""The offline run every project copy holds (``--max 3``: the sample's first 3 items, completed)."""
CASE_TIMEOUT_S = 120.0
"""A hang guard, not a timing assert: on a loaded 2-core machine a case's SDK import alone took 12 s."""
WORKERS = 6
DUMMY_KEYS = {"OPENAI_API_KEY": "sk-test-DUMMY-openai-key-0000",
              "ANTHROPIC_API_KEY": "sk-ant-test-DUMMY-anthropic-key-0000"}

Setup = Callable[[Path], None]


@dataclass(frozen=True)
class Case:
    section: str
    id: str
    command: str
    """``SCRIPT ARGS...`` shell-quoted; SCRIPT is a file in scripts/. Placeholders: see ``_placeholders``."""
    setup: tuple[Setup, ...] = ()
    env: Mapping[str, str | None] = field(default_factory=dict)
    """Changes to the case's environment; None unsets the variable."""
    server: str | None = None
    """None: no model server (base URLs point at a closed port); ``ok``: a healthy fake server; ``KIND``: a fault kind
    of tests/fake_llm_server.py that answers every request; ``KIND:MODEL``: that fault for requests naming MODEL only
    (a model that does not exist, while the others answer)."""
    bare_python: bool = False
    """Run with a python that has none of our packages (a fresh venv without pip), not the project's venv."""
    max_file_bytes: int | None = None
    """RLIMIT_FSIZE for the process: writes beyond it fail (EFBIG), the nearest we get to a full disk here."""
    unprivileged: bool = False
    """Run without root's right to write anywhere (a user namespace), so a chmod'ed directory is really read-only."""
    max_memory_bytes: int | None = None
    """RLIMIT_AS for the process: a case that would grow without bound dies of MemoryError instead of the machine."""
    today: str | None = None
    """What happens today instead (issue 14): the case is a strict xfail with this reason."""


def case(section: str, id: str, command: str, *setup: Setup, today: str | None = None, **options: Any) -> Case:
    return Case(section, id, command, tuple(setup), today=today, **options)


# --------------------------------------------------------------------------- setups: what a case changes first

def cfg(**changes: Any) -> Setup:
    """Set keys of config.json, written as the user's editor would (indented JSON)."""
    def apply(project: Path) -> None:
        path = project / CONFIG
        data = {**json.loads(path.read_text(encoding="utf-8")), **changes}
        path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return apply


def config_text(old: str, new: str) -> Setup:
    """Replace text in config.json (after the other setups): how a NaN or a nesting bomb gets into a JSON file."""
    def apply(project: Path) -> None:
        path = project / CONFIG
        text = path.read_text(encoding="utf-8")
        assert old in text, f"{old!r} is not in the config"
        path.write_text(text.replace(old, new), encoding="utf-8")
    return apply


def write(relative: str, content: str | bytes) -> Setup:
    def apply(project: Path) -> None:
        path = project / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return apply


def replace_with_dir(relative: str) -> Setup:
    def apply(project: Path) -> None:
        path = project / relative
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
        path.mkdir(parents=True)
    return apply


def remove(relative: str) -> Setup:
    def apply(project: Path) -> None:
        path = project / relative
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    return apply


def chmod(relative: str, mode: int) -> Setup:
    def apply(project: Path) -> None:
        (project / relative).chmod(mode)
    return apply


def items(change: Callable[[list[Any]], Any]) -> Setup:
    """Rewrite the configured dataset: ``change`` gets the sample's items and returns what the file holds."""
    def apply(project: Path) -> None:
        path = project / DATASET
        path.write_text(json.dumps(change(json.loads(path.read_text(encoding="utf-8")))), encoding="utf-8")
    return apply


OUTSIDE = "outside"
"""The folder beside each case's project that planted links point into (``outside_of``)."""
VICTIM = b'{"keep": "this line"}\n{"a torn-looking tail": '
"""What a linked file outside the project holds: a resume that followed the link would cut or extend it."""


def outside_of(project: Path) -> Path:
    return project.parent / OUTSIDE


def link_out(relative: str, name: str | None = None, *, folder: bool = False) -> Setup:
    """Replace ``relative`` in the project by a symbolic link to ``outside/<name>`` (a file holding ``VICTIM``, or
    with ``folder`` a folder holding one): what a project or archive from someone else can carry."""
    def apply(project: Path) -> None:
        target = outside_of(project) / (name or Path(relative).name)
        if folder:
            target.mkdir(parents=True, exist_ok=True)
            (target / "victim.jsonl").write_bytes(VICTIM)
        else:
            target.write_bytes(VICTIM)
        path = project / relative
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.symlink_to(target, target_is_directory=folder)
    return apply


def link_loop(relative: str) -> Setup:
    """Replace ``relative`` by one of two symbolic links that point at each other."""
    def apply(project: Path) -> None:
        path = project / relative
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
        other = path.with_name(path.name + ".other")
        path.symlink_to(other.name)
        other.symlink_to(path.name)
    return apply


def copy(source: str, dest: str) -> Setup:
    def apply(project: Path) -> None:
        shutil.copyfile(project / source, project / dest)
    return apply


def _set_field(key: str, value: Any) -> Callable[[list[Any]], list[Any]]:
    def change(data: list[Any]) -> list[Any]:
        data[0][key] = value
        return data
    return change


def _bomb(depth: int) -> Callable[[list[Any]], str]:
    """The sample with one item holding a ``depth``-deep nested array (written as text: json.dumps would recurse)."""
    def change(data: list[Any]) -> str:
        head = json.dumps(data[:3])[:-1]
        item = json.dumps(data[3])[:-1] + ', "extra": ' + "[" * depth + "]" * depth + "}"
        return f"{head}, {item}, {json.dumps(data[4:])[1:]}"
    return change


def text_items(change: Callable[[list[Any]], str]) -> Setup:
    """Rewrite the configured dataset with the text ``change`` makes of the sample's items."""
    def apply(project: Path) -> None:
        path = project / DATASET
        path.write_text(change(json.loads(path.read_text(encoding="utf-8"))), encoding="utf-8")
    return apply


def _drop_field(key: str) -> Callable[[list[Any]], list[Any]]:
    def change(data: list[Any]) -> list[Any]:
        del data[0][key]
        return data
    return change


PAID_CONFIG = dict(target="full-context", targetProvider="openai", targetModel="gpt-4o-mini", judgeProvider="openai",
                   judgeModel="gpt-4o", concurrency=2, maxAttempts=2, requestTimeoutSeconds=5)
"""A run that calls models (OpenAI reader, the official judge). maxAttempts 2 keeps today's failing runs short."""
PAID = cfg(**PAID_CONFIG)
PAID_ANTHROPIC = cfg(**{**PAID_CONFIG, "targetProvider": "anthropic", "targetModel": "claude-sonnet-4-6"})
"""An Anthropic reader, judged by the official OpenAI judge."""

RUN = "run_benchmark.py --max 1 --no-scorecard"
"""The offline sample run, as the docs' first run (the sample config is offline). ``--no-scorecard`` only saves
the time today's wrongly started runs spend on charts: a refusal comes before it either way."""
PAID_RUN = f"{RUN} --yes"
"""A paid run; ``--yes`` so the cost gate is never what refuses."""
RESUME = "run_benchmark.py --no-scorecard"
"""A resume of r1, as its printed resume line runs it: no ``--max`` (a run's items are chosen when it starts; a
``--max`` naming another count would be what refuses)."""

SETUP = "setup_project.py --project . --sample --skip-venv"
"""Setup as the setup command runs it on a project with no config (``remove(CONFIG)`` first)."""

CONFIG_S, DATASET_S, ARGS_S, ENV_S, SERVER_S, FS_S = ("config", "dataset", "arguments", "environment",
                                                      "server answers", "file system")
LOOP_S = "loop session"
"""An agent holding standing permissions (lme.core.unattended): what the loop never needs is refused."""
LOOP_SESSION = "5f0c2d9e-loop-session-of-the-agent"
IN_LOOP = {"CLAUDE_CODE_SESSION_ID": LOOP_SESSION}
"""What Claude Code sets for every Bash command it runs; with the setups below, the command is in a loop session."""
PWNED = "pwned.txt"
"""What the code a refused spec names would write (the tree check proves it never ran)."""
EVIL_PY = ("import pathlib\nfrom lme.targets import Hypothesis\n"
           "pathlib.Path(__file__).with_name('pwned.txt').write_text('ran')\n"
           "def generate(item, ctx):\n    return Hypothesis(hypothesis='x')\n")
"""A target file that leaves ``pwned.txt`` beside itself when it is imported (a valid target otherwise)."""

R1 = f"{RUNS}/{RUN_ID}"
ORACLE_NAMED = f"{STATE}/data/longmemeval_oracle.json"
"""The sample under the oracle's file name: its name says _oracle."""

def started_the_loop(project: Path) -> None:
    """``loop_session.py start`` ran in this Claude Code session (``IN_LOOP``)."""
    write(f"{STATE}/loop-session.json", json.dumps({"session_id": LOOP_SESSION, "status": "active",
                                                   "history_rows": 0}))(project)


def r1_answers_wrong(project: Path) -> None:
    """r1's judged items answered wrong: cluster 1 is a fix target (``cluster_failures.py --ids 1`` writes it)."""
    path = project / R1 / "item-results.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    for row in rows:
        if row.get("status") == "judged":
            row["hypothesis"], row["judgment"]["label"] = "I do not know.", False
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def outside_project(project: Path) -> None:
    """A second project beside this one (``../other``), set up the same way: outside the working folder."""
    other = project.parent / "other"
    shutil.copytree(project, other, symlinks=True)
    (other / ".max_effort_round").write_text("0\n", encoding="utf-8")


def other_upstream(project: Path) -> None:
    """A second upstream checkout, not the one the config names: in the project and beside it (``../upstream``)."""
    shutil.copytree(project / STATE / "LongMemEval", project / "other-upstream")
    shutil.copytree(project / STATE / "LongMemEval", project.parent / "upstream")


def standing_rules(project: Path) -> None:
    """``setup --allow-unattended`` wrote its rules (every session in the project runs the plugin unattended)."""
    write(".claude/settings.local.json", json.dumps({"permissions": {"allow": [
        "Skill(longmemeval-benchmarker:longmemeval-iterate)"]}}))(project)


# --------------------------------------------------------------------------- the table

CASES: list[Case] = [
    # config
    case(CONFIG_S, "config-bad-json", RUN, write(CONFIG, '{"variant": "_s",\n')),
    case(CONFIG_S, "config-empty-file", RUN, write(CONFIG, "")),
    case(CONFIG_S, "config-json-array", RUN, write(CONFIG, "[]\n")),
    case(CONFIG_S, "config-not-utf8", RUN, write(CONFIG, b'{"variant": "\xff_s"}')),
    case(CONFIG_S, "config-concurrency-string", RUN, cfg(concurrency="8")),
    case(CONFIG_S, "config-concurrency-negative", RUN, cfg(concurrency=-1)),
    case(CONFIG_S, "config-maxevals-string", RUN, cfg(maxEvals="all")),
    case(CONFIG_S, "config-unknown-key", RUN, cfg(concurency=8)),
    case(CONFIG_S, "config-variant-unknown", RUN, cfg(variant="_x")),
    case(CONFIG_S, "config-schema-version-future", RUN, cfg(schemaVersion="9.0.0")),
    case(CONFIG_S, "config-newer-minor-with-its-keys", RUN, cfg(schemaVersion="1.1.0", batch=True)),
    case(CONFIG_S, "config-timeout-zero", RUN, cfg(requestTimeoutSeconds=0)),
    case(CONFIG_S, "config-target-options-list", RUN, cfg(targetOptions=["top_k=5"])),
    case(CONFIG_S, "config-error-threshold-negative", RUN, cfg(errorThreshold=-1)),
    case(CONFIG_S, "config-dataset-path-empty", RUN, cfg(datasetPath="")),
    case(CONFIG_S, "config-target-unknown", RUN, cfg(target="nosuch")),
    case(CONFIG_S, "config-target-provider-unknown", PAID_RUN, PAID, cfg(targetProvider="opneai"), server="ok"),
    case(CONFIG_S, "config-judge-provider-unknown", PAID_RUN, PAID, cfg(judgeProvider="gemini"), server="ok"),
    case(CONFIG_S, "config-target-model-empty", PAID_RUN, PAID, cfg(targetModel=""), server="ok"),
    case(CONFIG_S, "config-confirm-cost-negative", PAID_RUN, PAID, cfg(confirmCostUsd=-1), server="ok"),
    case(CONFIG_S, "config-confirm-cost-string", RUN, PAID, cfg(confirmCostUsd="5"), server="ok"),
    case(CONFIG_S, "config-providers-list", PAID_RUN, PAID, cfg(providers=[]), server="ok"),
    case(CONFIG_S, "config-provider-entry-string", PAID_RUN, PAID, cfg(providers={"openai": "http://127.0.0.1:9"}),
         server="ok"),
    case(CONFIG_S, "config-provider-base-url-number", PAID_RUN, PAID, cfg(providers={"openai": {"base_url": 42}}),
         server="ok"),
    case(CONFIG_S, "config-provider-base-url-no-scheme", PAID_RUN, PAID,
         cfg(providers={"openai": {"base_url": "127.0.0.1:9/v1"}}), server="ok"),
    case(CONFIG_S, "config-azure-judge-no-endpoint", PAID_RUN, PAID, cfg(judgeProvider="azure"), server="ok"),
    case(CONFIG_S, "config-longmemeval-root-missing", PAID_RUN, PAID, cfg(longmemeval_root="nowhere/LongMemEval"),
         server="ok"),
    case(CONFIG_S, "config-bad-json-preflight", "preflight.py", write(CONFIG, '{"variant": "_s",\n')),
    case(CONFIG_S, "config-bad-type-dry-run", "run_benchmark.py --dry-run", cfg(concurrency="8")),
    case(CONFIG_S, "config-bad-json-run-status", "run_status.py --latest", write(CONFIG, '{"variant": "_s",\n')),

    # dataset
    case(DATASET_S, "dataset-missing", RUN, remove(DATASET)),
    case(DATASET_S, "dataset-not-json", RUN, write(DATASET, "question_id,question\nq1,hi\n")),
    case(DATASET_S, "dataset-truncated-json", RUN,
         lambda p: (p / DATASET).write_bytes((p / DATASET).read_bytes()[:-2000])),
    case(DATASET_S, "dataset-object-not-list", RUN, items(lambda d: d[0])),
    case(DATASET_S, "dataset-empty-list", RUN, items(lambda d: [])),
    case(DATASET_S, "dataset-list-of-strings", RUN, items(lambda d: [x["question_id"] for x in d])),
    case(DATASET_S, "dataset-item-without-question-id", RUN, items(_drop_field("question_id"))),
    case(DATASET_S, "dataset-duplicate-question-id", RUN, items(lambda d: d + d[:1])),
    case(DATASET_S, "dataset-haystack-not-a-list", RUN, items(_set_field("haystack_sessions", "none"))),
    case(DATASET_S, "dataset-not-utf8", RUN, write(DATASET, b'[{"question_id": "\xff"}]')),
    case(DATASET_S, "dataset-is-directory", RUN, replace_with_dir(DATASET)),
    case(DATASET_S, "dataset-arg-missing", f"{RUN} --dataset nowhere.json"),
    case(DATASET_S, "dataset-arg-directory", f"{RUN} --dataset {STATE}"),
    case(DATASET_S, "dataset-arg-not-json", f"{RUN} --dataset README.md"),
    case(DATASET_S, "dataset-variant-mismatch", f"{RUN} --variant _oracle"),
    case(DATASET_S, "dataset-arg-variant-mismatch", f"{RUN} --variant _s --dataset {ORACLE_NAMED}",
         copy(DATASET, ORACLE_NAMED)),
    case(DATASET_S, "dataset-changed-under-a-resume", f"{RESUME} --run-id {RUN_ID}", items(lambda d: d[:-1])),
    case(DATASET_S, "dataset-hypotheses-missing", "run_benchmark.py --hypotheses nowhere.jsonl --yes"),
    case(DATASET_S, "dataset-hypotheses-not-jsonl", "run_benchmark.py --hypotheses README.md --yes"),
    case(DATASET_S, "setup-dataset-missing", "setup_project.py --project . --skip-venv --dataset nowhere.json"),
    case(DATASET_S, "setup-dataset-not-longmemeval", "setup_project.py --project . --skip-venv --dataset README.md"),
    case(DATASET_S, "setup-dataset-and-sample", f"setup_project.py --project . --skip-venv --sample --dataset {DATASET}"),
    case(DATASET_S, "setup-download-unknown-variant", "setup_project.py --project . --skip-venv --download _x"),
    case(DATASET_S, "fingerprints-missing-file", "fingerprints.py nowhere.json"),

    # arguments
    case(ARGS_S, "setup-background-unknown-variant", "setup_project.py --project . --skip-venv --background --download _x"),
    case(ARGS_S, "setup-background-two-datasets", "setup_project.py --project . --skip-venv --background --sample "
         "--download _s"),
    case(ARGS_S, "setup-wait-with-no-background-setup", "setup_project.py --project . --wait 1"),
    case(ARGS_S, "setup-wait-with-other-options", "setup_project.py --project . --wait 1 --sample"),
    case(ARGS_S, "run-id-empty", f'{RUN} --run-id ""'),
    case(ARGS_S, "run-id-blank", f'{RUN} --run-id " "'),
    case(ARGS_S, "variant-empty", f'{RUN} --variant ""'),
    case(ARGS_S, "target-model-empty", f'{PAID_RUN} --target-model ""', PAID, server="ok"),
    case(ARGS_S, "judge-model-empty", f'{PAID_RUN} --judge-model ""', PAID, server="ok"),
    case(ARGS_S, "dataset-empty", f'{RUN} --dataset ""'),
    case(ARGS_S, "target-empty", f'{RUN} --target ""'),
    case(ARGS_S, "max-zero", "run_benchmark.py --max 0 --no-scorecard"),
    case(ARGS_S, "max-abc", "run_benchmark.py --max abc"),
    case(ARGS_S, "max-negative", "run_benchmark.py --max -1"),
    case(ARGS_S, "max-without-value", "run_benchmark.py --max"),
    case(ARGS_S, "resume-with-another-max", f"{RUN} --run-id {RUN_ID}"),  # r1 covers 3 items, chosen at its start
    case(ARGS_S, "shard-3-of-2", f"{RUN} --shard 3/2"),
    case(ARGS_S, "shard-not-i-of-n", f"{RUN} --shard half"),
    case(ARGS_S, "shard-on-an-unsharded-run", f"{RESUME} --run-id {RUN_ID} --shard 1/2"),
    case(ARGS_S, "target-option-without-equals", f"{RUN} --target-option top_k"),
    case(ARGS_S, "target-option-bad-value", f"{RUN} --target rag --target-option top_k=abc"),
    case(ARGS_S, "target-unknown", f"{RUN} --target nosuch"),
    case(ARGS_S, "target-py-missing", f"{RUN} --target ./nowhere.py"),
    case(ARGS_S, "judge-model-unknown-provider", f"{PAID_RUN} --judge-model gemini:pro", PAID, server="ok"),
    case(ARGS_S, "successor-empty", f'{PAID_RUN} --successor ""', PAID, server="ok"),
    case(ARGS_S, "successor-offline", f"{PAID_RUN} --successor offline:x", PAID, server="ok"),
    case(ARGS_S, "successor-is-the-official-judge", f"{PAID_RUN} --successor openai:gpt-4o", PAID, server="ok"),
    case(ARGS_S, "successor-without-the-official-judge",
         f"{PAID_RUN} --judge-model openai:gpt-4.1 --successor openai:o3-mini", PAID, server="ok"),
    case(CONFIG_S, "config-judge-reasoning-effort-unknown", PAID_RUN, PAID, cfg(judgeReasoningEffort="extreme"),
         server="ok"),
    case(SERVER_S, "official-judge-gone-at-the-probe", PAID_RUN, PAID, server="404:gpt-4o-2024-08-06"),
    case(ARGS_S, "judge-shim-import-archive-header-mismatch", "judge_shim.py import-verdicts edited.jsonl",
         write("edited.jsonl", '{"kind": "longmemeval-verdict-archive", "count": 0, "sha256": "0"}\n')),
    case(ARGS_S, "target-model-no-model", f"{PAID_RUN} --target-model openai:", PAID, server="ok"),
    # no --yes: refused before the cost gate asks for approval (it would exit 5 on the unpriced name)
    case(ARGS_S, "judge-model-with-a-space", f"{RUN} --judge-model 'openai gpt-4o'", PAID, server="ok"),
    case(ARGS_S, "target-model-with-a-space", f"{RUN} --target-model 'gpt 4o mini'", PAID, server="ok"),
    case(ARGS_S, "concurrency-zero", f"{RUN} --concurrency 0"),
    case(ARGS_S, "concurrency-abc", f"{RUN} --concurrency abc"),
    case(ARGS_S, "judge-repeat-zero", f"{RUN} --judge-repeat 0"),
    case(ARGS_S, "max-cost-negative", f"{PAID_RUN} --max-cost -5", PAID, server="ok"),
    case(ARGS_S, "max-cost-abc", f"{PAID_RUN} --max-cost abc", PAID, server="ok"),
    case(ARGS_S, "run-id-with-slash", f"{RUN} --run-id ../r2"),
    case(ARGS_S, "progress-unknown", f"{RUN} --progress fancy"),
    case(ARGS_S, "unknown-flag", "run_benchmark.py --maxx 2"),
    case(ARGS_S, "bare-run-id-run-benchmark", f"run_benchmark.py {RUN_ID}"),
    case(ARGS_S, "bare-run-id-scorecard", f"scorecard.py {RUN_ID}"),
    case(ARGS_S, "bare-run-id-run-status", f"run_status.py {RUN_ID}"),
    case(ARGS_S, "scorecard-args-contradict-the-run", f"scorecard.py {R1} 400 _s wrong-id"),
    case(ARGS_S, "scorecard-variant-contradicts-the-run", f"scorecard.py {R1} 24 _oracle {RUN_ID}"),
    case(ARGS_S, "scorecard-n-total-zero", f"scorecard.py {R1} 0 _s {RUN_ID}"),
    case(ARGS_S, "scorecard-unknown-run", "scorecard.py --run-id nosuch"),
    case(ARGS_S, "scorecard-latest-without-runs", "scorecard.py --latest", remove(RUNS)),
    case(ARGS_S, "run-status-unknown-run", "run_status.py --run-id nosuch"),
    case(ARGS_S, "run-status-wait-abc", f"run_status.py --run-id {RUN_ID} --wait abc"),
    case(ARGS_S, "compare-runs-one-run", f"compare_runs.py {R1}"),
    case(ARGS_S, "compare-runs-missing-dirs", "compare_runs.py nowhere-1 nowhere-2"),
    case(ARGS_S, "judge-shim-import-missing-file", "judge_shim.py import-verdicts nowhere.jsonl"),
    case(ARGS_S, "judge-shim-hyp-file-missing",
         f"judge_shim.py --longmemeval-root {STATE}/LongMemEval --hyp-file nowhere.jsonl --ref-file {DATASET}"),
    case(ARGS_S, "preflight-max-abc", "preflight.py --max abc"),
    case(ARGS_S, "preflight-run-id-empty", 'preflight.py --run-id ""'),

    # environment (paid runs with --yes: the cost gate is not what refuses)
    case(ENV_S, "openai-key-unset", PAID_RUN, PAID, env={"OPENAI_API_KEY": None}, server="ok"),
    case(ENV_S, "openai-key-empty", PAID_RUN, PAID, env={"OPENAI_API_KEY": ""}, server="ok"),
    case(ENV_S, "anthropic-key-unset", PAID_RUN, PAID_ANTHROPIC, env={"ANTHROPIC_API_KEY": None}, server="ok"),
    case(ENV_S, "anthropic-key-empty", PAID_RUN, PAID_ANTHROPIC, env={"ANTHROPIC_API_KEY": ""}, server="ok"),
    case(ENV_S, "judge-key-unset-reader-key-set", PAID_RUN, PAID_ANTHROPIC, env={"OPENAI_API_KEY": None},
         server="ok"),
    case(ENV_S, "openai-key-unset-background", f"{PAID_RUN} --background", PAID, env={"OPENAI_API_KEY": None},
         server="ok"),
    case(ENV_S, "openai-base-url-without-scheme", PAID_RUN, PAID, env={"OPENAI_BASE_URL": "{hostport}/v1"},
         server="ok"),
    case(ENV_S, "anthropic-base-url-without-scheme", PAID_RUN, PAID_ANTHROPIC,
         env={"ANTHROPIC_BASE_URL": "{hostport}"}, server="ok"),
    case(ENV_S, "openai-base-url-unreachable", PAID_RUN, PAID),
    case(ENV_S, "anthropic-base-url-unreachable", PAID_RUN, PAID_ANTHROPIC, env={"ANTHROPIC_BASE_URL": "{closed}"},
         server="ok"),
    *[case(ENV_S, f"system-python-{Path(cmd.split()[0]).stem.replace('_', '-')}", cmd, bare_python=True)
      for cmd, module in ((RUN, "jsonschema"), ("scorecard.py --latest", "jsonschema"),
                          ("run_status.py --latest", "jsonschema"), ("preflight.py", "jsonschema"),
                          ("compare_runs.py --latest", "jsonschema"),
                          ("judge_shim.py export-verdicts --out verdicts.jsonl", "jsonschema"),
                          (f"cluster_failures.py --run-id {RUN_ID}", "jsonschema"),
                          ("loop_target.py use-copy", "jsonschema"),
                          (f"drop_qids.py --run-id {RUN_ID} --failed", "jsonschema"),
                          (f"interop.py export {R1} hyps.jsonl", "jsonschema"),
                          (f"report_html.py {R1}", "jsonschema"),
                          (f"judge_agreement.py --run-id {RUN_ID} --candidate openai:gpt-4.1", "jsonschema"),
                          (f"fingerprints.py {DATASET}", "ijson"), ("selftest_scoring.py", "numpy"))],

    # server answers: the case's fake server answers every request with the fault
    case(SERVER_S, "openai-401-bad-key", PAID_RUN, PAID, server="401"),
    case(SERVER_S, "anthropic-401-bad-key", PAID_RUN, PAID_ANTHROPIC, server="401"),
    case(SERVER_S, "model-not-found-typo", f"{PAID_RUN} --target-model gpt-4o-mnii", PAID, server="404:gpt-4o-mnii"),
    case(SERVER_S, "model-not-found-space", f"{PAID_RUN} --target-model 'openai gpt-4o'", PAID,
         server="404:openai gpt-4o"),
    case(SERVER_S, "judge-model-not-found", f"{PAID_RUN} --judge-model openai:gpt-4o-mnii", PAID,
         server="404:gpt-4o-mnii"),
    # no --yes, an estimate above confirmCostUsd: the probe refuses the model before its cost is put to the user
    case(SERVER_S, "judge-model-not-found-before-the-cost-gate", f"{RUN} --judge-model openai:gpt-4o-mnii", PAID,
         cfg(confirmCostUsd=0), server="404:gpt-4o-mnii"),
    case(SERVER_S, "target-key-rejected-before-the-cost-gate", RUN, PAID, cfg(confirmCostUsd=0), server="401"),
    case(SERVER_S, "openai-401-bad-key-background", f"{PAID_RUN} --background", PAID, server="401"),
    case(SERVER_S, "judge-401-anthropic-reader-ok", PAID_RUN, PAID_ANTHROPIC, server="401:gpt-4o-2024-08-06"),
    case(SERVER_S, "openai-insufficient-quota", PAID_RUN, PAID, server="insufficient_quota"),
    case(SERVER_S, "anthropic-credit-balance", PAID_RUN, PAID_ANTHROPIC, server="credit_balance"),

    # file system
    case(FS_S, "run-dir-is-a-file", f"{RUN} --run-id r2", write(f"{RUNS}/r2", "not a run\n")),
    case(FS_S, "runs-dir-is-a-file", RUN, cfg(runs_dir="README.md")),
    case(FS_S, "runs-dir-under-a-file", RUN, cfg(runs_dir="README.md/runs")),
    case(FS_S, "config-is-a-directory", RUN, replace_with_dir(CONFIG)),
    case(FS_S, "cache-dir-is-a-file", RUN, cfg(cache_dir="README.md")),
    case(FS_S, "project-missing", f"{RUN} --project nowhere"),
    case(FS_S, "project-is-a-file", f"{RUN} --project README.md"),
    case(FS_S, "runs-dir-not-writable", RUN, chmod(RUNS, 0o555), unprivileged=True),
    case(FS_S, "run-dir-not-writable-resume", f"{RESUME} --run-id {RUN_ID}", chmod(R1, 0o555), unprivileged=True),
    case(FS_S, "run-dir-not-writable-scorecard", f"scorecard.py --run-id {RUN_ID}", chmod(R1, 0o555),
         unprivileged=True),
    case(FS_S, "cache-dir-not-writable", RUN, chmod(f"{STATE}/cache", 0o555), unprivileged=True),
    case(FS_S, "dataset-not-readable", RUN, chmod(DATASET, 0o000), unprivileged=True),
    case(FS_S, "setup-project-not-writable", SETUP, remove(CONFIG), chmod(STATE, 0o555), unprivileged=True),
    case(FS_S, "disk-full-run", RUN, max_file_bytes=0),
    case(FS_S, "disk-full-resume", f"{RESUME} --run-id {RUN_ID}", max_file_bytes=0),
    case(FS_S, "disk-full-scorecard", f"scorecard.py --run-id {RUN_ID}", max_file_bytes=0),
    case(FS_S, "disk-full-setup", SETUP, remove(CONFIG), max_file_bytes=0),

    # a loop session: the rules let the agent run these scripts with any argument; the scripts refuse the rest
    case(LOOP_S, "loop-target-command-from-the-command-line",
         f"""{RUN} --target command --target-option 'command=["sh","-c","id > {PWNED}"]'""", started_the_loop,
         env=IN_LOOP),
    case(LOOP_S, "loop-target-command-standing-rules",
         f"""{RUN} --target command --target-option 'command=["sh","-c","id > {PWNED}"]'""", standing_rules,
         env=IN_LOOP),
    case(LOOP_S, "loop-target-option-command-only", f"""{RUN} --target-option 'command=["sh","-c","id"]'""",
         started_the_loop, env=IN_LOOP),
    case(LOOP_S, "loop-target-py-file", f"{RUN} --target evil.py", write("evil.py", EVIL_PY), started_the_loop,
         env=IN_LOOP),
    case(LOOP_S, "loop-target-py-file-dry-run", "run_benchmark.py --dry-run --target evil.py",
         write("evil.py", EVIL_PY), started_the_loop, env=IN_LOOP),
    case(LOOP_S, "loop-target-py-file-with-loop-flag", f"{RUN} --loop --target evil.py", write("evil.py", EVIL_PY),
         env=IN_LOOP),
    case(LOOP_S, "loop-longmemeval-root-from-the-command-line", f"{RUN} --longmemeval-root other-upstream",
         other_upstream, started_the_loop, env=IN_LOOP),
    case(LOOP_S, "loop-run-project-outside", f"{RUN} --project ../other", outside_project, started_the_loop,
         env=IN_LOOP),
    case(LOOP_S, "loop-yes-above-confirm-cost-without-a-budget", PAID_RUN, PAID, cfg(confirmCostUsd=0.000001),
         started_the_loop, env=IN_LOOP, server="ok"),
    case(LOOP_S, "loop-yes-above-the-budget", PAID_RUN, PAID, cfg(confirmCostUsd=0.000001),
         cfg(loop={"budgetUsd": 0.000002}), started_the_loop, env=IN_LOOP, server="ok"),
    case(LOOP_S, "worker-flag-by-hand", f"{RUN} --worker --run-id r9"),
    case(LOOP_S, "loop-setup-project-outside", "setup_project.py --project ../other --skip-venv --sample",
         outside_project, started_the_loop, env=IN_LOOP),
    case(LOOP_S, "loop-setup-index-url", "setup_project.py --project . --skip-venv --index-url "
         "https://packages.example.invalid/simple", started_the_loop, env=IN_LOOP),
    case(LOOP_S, "loop-setup-upstream-url", "setup_project.py --project . --skip-venv --clone-upstream "
         "--upstream-url https://git.example.invalid/LongMemEval.git", standing_rules, env=IN_LOOP),
    case(LOOP_S, "loop-setup-base-url", "setup_project.py --project . --skip-venv --download _s --base-url "
         "https://mirror.example.invalid", started_the_loop, env=IN_LOOP),
    case(LOOP_S, "loop-setup-longmemeval-root-outside", "setup_project.py --project . --skip-venv "
         "--longmemeval-root ../upstream", other_upstream, started_the_loop, env=IN_LOOP),
    case(LOOP_S, "loop-command-project-outside", "rounds.py --project ../other status", outside_project,
         env=IN_LOOP),
    case(LOOP_S, "loop-scorecard-run-dir-outside", f"scorecard.py ../other/{R1} 24 _s {RUN_ID}", outside_project,
         started_the_loop, env=IN_LOOP),
    case(LOOP_S, "loop-command-trigger-set-outside-the-state-folder",
         f"cluster_failures.py --run-id {RUN_ID} --ids 1 --out README.md", r1_answers_wrong, env=IN_LOOP),
    # other people's projects: links out of the project, loops, folders the project does not own (issue 25)
    case(FS_S, "resume-results-linked-outside", f"{RESUME} --run-id {RUN_ID}", link_out(f"{R1}/item-results.jsonl")),
    case(FS_S, "resume-completed-linked-outside", f"{RESUME} --run-id {RUN_ID}",
         link_out(f"{R1}/questions_completed.jsonl")),
    case(FS_S, "resume-lock-linked-outside", f"{RESUME} --run-id {RUN_ID}", link_out(f"{R1}/.lock", "lockfile")),
    case(FS_S, "resume-run-meta-linked-outside", f"{RESUME} --run-id {RUN_ID}", link_out(f"{R1}/run-meta.json")),
    case(FS_S, "shard-folder-linked-outside", f"{RUN} --run-id r3 --shard 1/2",
         link_out(f"{RUNS}/r3/shard-1of2", "shard", folder=True)),
    case(FS_S, "cache-folder-linked-outside", RUN, link_out(f"{STATE}/cache", "cache", folder=True)),
    case(FS_S, "state-folder-linked-outside-setup", SETUP, remove(CONFIG), link_out(f"{STATE}/data", "data",
                                                                                     folder=True)),
    case(FS_S, "gitignore-linked-outside-setup", SETUP, remove(CONFIG), link_out(".gitignore", "dotfile")),
    case(FS_S, "scorecard-charts-linked-outside", f"scorecard.py --run-id {RUN_ID}",
         link_out(f"{R1}/charts", "charts", folder=True), remove(f"{R1}/metrics.json")),
    case(FS_S, "history-linked-outside", "rounds.py status", write(".max_effort_round", "0\n"),
         link_out("history_max_effort.md")),
    case(FS_S, "runs-dir-a-symlink-loop", RUN, link_loop(RUNS)),
    case(FS_S, "dataset-a-symlink-loop", RUN, link_loop(DATASET)),
    case(FS_S, "runs-dir-root", RUN, cfg(runs_dir="/")),
    case(FS_S, "runs-dir-outside-the-project", RUN, cfg(runs_dir="../outside/runs")),
    case(FS_S, "runs-dir-the-project-itself", RUN, cfg(runs_dir=".")),
    case(FS_S, "cache-dir-a-system-folder", RUN, cfg(cache_dir="/tmp")),

    # hostile data: nesting bombs, text that is not Unicode, numbers that are not finite (issue 25)
    case(DATASET_S, "dataset-nesting-bomb", RUN, text_items(_bomb(200_000)), max_memory_bytes=3 << 30),
    case(DATASET_S, "dataset-question-lone-surrogate", RUN, text_items(
        lambda d: json.dumps(d).replace('"question": "', '"question": "\\udfff', 1))),
    case(DATASET_S, "dataset-question-id-with-a-newline", RUN, items(_set_field("question_id", "q1\nerror: fake"))),
    case(DATASET_S, "dataset-question-id-too-long", RUN, items(_set_field("question_id", "q" * 500))),
    case(DATASET_S, "hypotheses-empty-file", "run_benchmark.py --hypotheses hyps.jsonl --yes", write("hyps.jsonl", "")),
    case(DATASET_S, "hypotheses-lone-surrogate", "run_benchmark.py --hypotheses hyps.jsonl --yes",
         write("hyps.jsonl", '{"question_id": "d20b14a8", "hypothesis": "a beagle\\udfff"}\n')),
    case(DATASET_S, "hypotheses-nesting-bomb", "run_benchmark.py --hypotheses hyps.jsonl --yes",
         write("hyps.jsonl", '{"question_id": "d20b14a8", "hypothesis": ' + "[" * 100_000 + "]" * 100_000 + "}\n")),
    case(DATASET_S, "hypotheses-question-id-with-a-newline", "run_benchmark.py --hypotheses hyps.jsonl --yes",
         write("hyps.jsonl", '{"question_id": "q1\\nerror: fake", "hypothesis": "x"}\n')),
    case(CONFIG_S, "config-timeout-nan", PAID_RUN, PAID, config_text('"requestTimeoutSeconds": 5', '"requestTimeoutSeconds": NaN'),
         server="ok"),
    case(CONFIG_S, "config-error-threshold-nan", RUN, config_text('"errorThreshold": 0', '"errorThreshold": NaN')),
    case(CONFIG_S, "config-error-threshold-overflow", RUN, config_text('"errorThreshold": 0', '"errorThreshold": 1e999')),
    case(CONFIG_S, "config-loop-nesting-bomb", RUN,
         config_text('"loop": {}', '"loop": {"x": ' + "[" * 100_000 + "]" * 100_000 + "}")),
    case(CONFIG_S, "config-key-lone-surrogate", RUN, config_text('"loop": {}', '"loop": {"\\ud800": 1}')),
    case(ARGS_S, "max-cost-nan", f"{PAID_RUN} --max-cost nan", PAID, server="ok"),
    case(ARGS_S, "max-cost-infinite", f"{PAID_RUN} --max-cost inf", PAID, server="ok"),
    case(ARGS_S, "run-id-starting-with-a-dash", f"{RUN} --run-id=-rf"),
    case(ARGS_S, "run-id-with-a-newline", f"{RUN} --run-id 'r2\nerror: fake'"),
    case(FS_S, "run-meta-nan", f"{RESUME} --run-id {RUN_ID}", lambda p: (p / R1 / "run-meta.json").write_text(
        (p / R1 / "run-meta.json").read_text().replace('"duration_seconds": ', '"duration_seconds": NaN, "x": ', 1))),
    # a run-meta.json gone or broken: a resume takes nothing from the config alone (issue 38, finding 5)
    case(FS_S, "resume-run-meta-empty", f"{RESUME} --run-id {RUN_ID}", write(f"{R1}/run-meta.json", "")),
    case(FS_S, "resume-run-meta-missing", f"{RESUME} --run-id {RUN_ID}", remove(f"{R1}/run-meta.json")),
    case(FS_S, "resume-run-meta-empty-rows-of-another-reader", f"{RESUME} --run-id {RUN_ID} --target-model "
         "openai:gpt-4o-mini --judge-model openai:gpt-4o", write(f"{R1}/run-meta.json", ""), PAID, server="ok"),
    case(FS_S, "results-line-nesting-bomb", f"{RESUME} --run-id {RUN_ID}", lambda p: (p / R1 / "item-results.jsonl")
         .write_bytes(b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n" + (p / R1 / "item-results.jsonl").read_bytes())),
    case(FS_S, "confirmation-nesting-bomb", "rounds.py status", write(".max_effort_round", "0\n"),
         write(f"{STATE}/confirmation.json", "[" * 100_000 + "]" * 100_000)),
]

CONTROLS: list[Case] = [
    case("control", "offline-run", RUN),
    case("control", "offline-run-with-scorecard", "run_benchmark.py --max 2"),
    case("control", "resume-r1", f"{RESUME} --run-id {RUN_ID}"),
    case("control", "paid-openai-run", PAID_RUN, PAID, server="ok"),
    case("control", "paid-anthropic-run", PAID_RUN, PAID_ANTHROPIC, server="ok"),
    case("control", "scorecard-r1", f"scorecard.py --run-id {RUN_ID}"),
    case("control", "resume-r1-without-its-run-meta-naming-the-models-its-rows-recorded",
         f"{RESUME} --run-id {RUN_ID} --target offline --target-model offline:extractive --judge-model "
         "offline:offline-containment-v1", write(f"{R1}/run-meta.json", "")),
    case("control", "preflight-paid", "preflight.py", PAID, server="ok"),
    case("control", "setup-after-removing-the-config", SETUP, remove(CONFIG)),
    case("control", "setup-in-the-background", f"{SETUP} --background", remove(CONFIG)),
    case("control", "loop-session-offline-run", RUN, started_the_loop, env=IN_LOOP),
    case("control", "loop-session-yes-within-the-budget", PAID_RUN, PAID, cfg(confirmCostUsd=0.000001),
         cfg(loop={"budgetUsd": 1000}), started_the_loop, env=IN_LOOP, server="ok"),
    case("control", "loop-session-paid-run-below-confirm-cost", PAID_RUN, PAID, started_the_loop, env=IN_LOOP,
         server="ok"),
    case("control", "outside-a-loop-session-yes-and-a-py-target", f"{PAID_RUN} --target evil.py", PAID,
         cfg(confirmCostUsd=0.000001), write("evil.py", EVIL_PY), env={"CLAUDE_CODE_SESSION_ID": None},
         server="ok"),
    case("control", "offline-run-into-a-runs-dir-of-the-project", RUN, cfg(runs_dir="my-runs")),
    case("control", "dataset-linked-from-outside-the-project", RUN, lambda p: (
        shutil.move(str(p / DATASET), str(outside_of(p) / "data.json")), (p / DATASET).symlink_to(outside_of(p) / "data.json"))),
]


# --------------------------------------------------------------------------- running a case


@dataclass
class Outcome:
    code: int | None
    """The exit status; None when the case ran past CASE_TIMEOUT_S (it was killed)."""
    stdout: str = ""
    stderr: str = ""
    changed: list[str] = field(default_factory=list)
    outside_changed: list[str] = field(default_factory=list)
    """What changed in the case's ``outside`` folder (links in the project point there): must stay empty."""
    seconds: float = 0.0
    folder: str = ""
    """The case's temporary folder (its project copy and ``outside``)."""
    skipped: str | None = None
    harness_error: str | None = None
    """The test's own machinery failed (a setup, the copy): an error of the test, never an expected failure."""

    def describe(self) -> str:
        code = (f"timed out after {CASE_TIMEOUT_S:.0f} s" if self.code is None
                else f"exit {self.code} after {self.seconds:.1f} s")
        changed = ", ".join(self.changed[:8]) + (f" (+{len(self.changed) - 8} more)" if len(self.changed) > 8 else "")
        outside = ", ".join(self.outside_changed[:8])
        return (f"{code}; changed: {changed or 'nothing'}; outside the project: {outside or 'nothing'}"
                f"\n--- stderr ---\n{self.stderr[-3000:]}"
                f"--- stdout ---\n{self.stdout[-1500:]}")


def tree(root: Path) -> dict[str, tuple[Any, ...]]:
    """Every path under ``root`` with what it is: directories, symlinks (target), files (size, sha256)."""
    entries: dict[str, tuple[Any, ...]] = {}
    _snapshot(str(root), "", entries)
    return entries


def _snapshot(folder: str, prefix: str, entries: dict[str, tuple[Any, ...]]) -> None:
    """``tree`` below ``folder`` (``prefix``: its relative path and a slash). Plain strings and the directory
    entries' own types: the two snapshots of each of the ~250 copies were a large part of the test process's CPU."""
    try:
        with os.scandir(folder) as found:
            listed = list(found)
    except OSError:  # as os.walk: a folder it cannot list (a chmod'ed one, not as root) shows no content
        return
    for entry in listed:
        rel = prefix + entry.name
        if entry.name == "__pycache__" and entry.is_dir():  # a link to a folder too, as os.walk sorts it
            continue
        if entry.is_symlink():
            entries[rel] = ("link", os.readlink(entry.path))
        elif entry.is_dir():
            entries[rel] = ("dir",)
            _snapshot(entry.path, rel + "/", entries)
        elif entry.is_file():
            try:
                with open(entry.path, "rb") as handle:
                    digest = hashlib.sha256(handle.read()).hexdigest()
            except PermissionError:  # a chmod 000 setup, when the tests do not run as root
                digest = f"unreadable, mode {entry.stat().st_mode:o}"
            entries[rel] = ("file", entry.stat().st_size, digest)
        else:
            entries[rel] = ("other", entry.stat(follow_symlinks=False).st_mode)


def tree_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    added = [f"+{p}" for p in sorted(set(after) - set(before))]
    removed = [f"-{p}" for p in sorted(set(before) - set(after))]
    modified = [f"~{p}" for p in sorted(set(before) & set(after)) if before[p] != after[p]]
    return [*added, *removed, *modified]


_CLONE_NEWUSER = 0x10000000
_LIBC = ctypes.CDLL(None, use_errno=True)
"""Resolved here, not in the forked child: the child of a threaded process should only call what is loaded."""


def _unshare_user() -> None:
    """In the child: a new user namespace, where root's right to write into any directory no longer holds."""
    if _LIBC.unshare(_CLONE_NEWUSER) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWUSER) failed")


def _preexec(case_: Case) -> Callable[[], None] | None:
    steps: list[Callable[[], None]] = []
    if case_.max_file_bytes is not None:
        limit = case_.max_file_bytes
        steps.append(lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit)))
    if case_.max_memory_bytes is not None:
        memory = case_.max_memory_bytes
        steps.append(lambda: resource.setrlimit(resource.RLIMIT_AS, (memory, memory)))
    if case_.unprivileged and os.geteuid() == 0:
        steps.append(_unshare_user)
    if not steps:
        return None

    def run() -> None:
        for step in steps:
            step()
    return run


@dataclass(frozen=True)
class Bench:
    """What every case shares: the prepared project, its environment, the bare python, a closed port."""
    base: Path
    env: Mapping[str, str]
    bare_python: str
    closed_port: int
    unprivileged_problem: str | None


def _placeholders(bench: Bench, server: FakeLLMServer | None) -> dict[str, str]:
    closed = f"http://127.0.0.1:{bench.closed_port}"
    port = server.port if server is not None else bench.closed_port
    return {"openai": server.openai_base_url if server else f"{closed}/v1",
            "anthropic": server.anthropic_base_url if server else closed,
            "hostport": f"127.0.0.1:{port}", "closed": closed}


def _stop_background_workers(project: Path) -> None:
    """A ``--background`` case may have started a worker: wait a little for it, then end it (by its pid)."""
    for info_path in project.glob(f"{RUNS}/**/worker.json"):
        try:
            pid = int(json.loads(info_path.read_text(encoding="utf-8"))["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
        else:
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


class _ModelFaultServer(FakeLLMServer):
    """The fake server, with one fault for the requests that name one model (e.g. 404 for ``gpt-4o-mnii``).

    Uses the server's hooks around a request: ``_log`` sees the body, ``_next_fault`` (a call) or ``_probe_fault``
    (the run's start-up probe) picks the fault, all on the request's own thread."""

    def __init__(self, kind: str, model: str) -> None:
        super().__init__()
        self._fault_for = (kind, model)
        self._request_model = threading.local()

    def _log(self, path: str, headers: Mapping[str, str], body: Any, raw: bytes, query: str = "") -> dict[str, Any]:
        entry = super()._log(path, headers, body, raw, query)
        self._request_model.name = body.get("model") if isinstance(body, dict) else None
        return entry

    def _next_fault(self) -> tuple[str, dict[str, Any]] | None:
        return self._model_fault() or super()._next_fault()

    def _probe_fault(self) -> tuple[str, dict[str, Any]] | None:
        return self._model_fault() or super()._probe_fault()

    def _model_fault(self) -> tuple[str, dict[str, Any]] | None:
        kind, model = self._fault_for
        return (kind, {}) if getattr(self._request_model, "name", None) == model else None


def _case_env(bench: Bench, project: Path, bare_python: bool) -> dict[str, str]:
    """The prepared environment for this copy: its venv on PATH, or (a bare python) no venv at all."""
    env = dict(bench.env)
    venv_bin = str(bench.base / ".longmemeval-venv" / "bin")
    path = [p for p in env.get("PATH", "").split(os.pathsep) if p != venv_bin]
    if bare_python:
        env.pop("VIRTUAL_ENV", None)
    else:
        path.insert(0, str(project / ".longmemeval-venv" / "bin"))
        env["VIRTUAL_ENV"] = str(project / ".longmemeval-venv")
    env["PATH"] = os.pathsep.join(path)
    return env


def copy_project(base: Path, project: Path) -> None:
    """``base`` copied to ``project`` as ``shutil.copytree(symlinks=True)`` copies it (links as links; modes and
    file times kept), with what r1 records of its absolute paths (dataset, project, runs dir) naming the copy, as if
    it was made there. One pass on plain strings: the copy is every case's own cost."""
    _copy_folder(str(base), str(project), str(base).encode(), str(project).encode())


def _copy_folder(source: str, dest: str, old: bytes, new: bytes) -> None:
    os.mkdir(dest)
    with os.scandir(source) as found:
        for entry in found:
            target = os.path.join(dest, entry.name)
            if entry.is_symlink():
                os.symlink(os.readlink(entry.path), target)
            elif entry.is_dir():
                _copy_folder(entry.path, target, old, new)
            else:
                with open(entry.path, "rb") as handle:
                    data = handle.read()
                info = entry.stat()
                relocated = old in data and f"{os.sep}{RUNS}{os.sep}" in target
                with open(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as handle:
                    handle.write(data.replace(old, new) if relocated else data)
                os.chmod(target, info.st_mode & 0o7777)
                if not relocated:  # a relocated file is rewritten, as by an editor: its time is now
                    os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns))
    os.chmod(dest, os.stat(source).st_mode & 0o7777)


def run_case(case_: Case, bench: Bench, workdir: Path, forker: Forker | None) -> Outcome:
    """Run one case in its own copy of the project: its command by ``forker`` (tests/script_forker.py), or, when
    None, as a subprocess."""
    try:
        return _run_case(case_, bench, workdir, forker)
    except Exception:  # noqa: BLE001 - reported by the case's own test, not by every test of the session
        return Outcome(code=None, harness_error=traceback.format_exc())


def _run_case(case_: Case, bench: Bench, workdir: Path, forker: Forker | None) -> Outcome:
    if case_.unprivileged and bench.unprivileged_problem:
        return Outcome(code=None, skipped=bench.unprivileged_problem)
    project = workdir / "project"
    copy_project(bench.base, project)
    outside_of(project).mkdir()
    (outside_of(project) / "unrelated.txt").write_bytes(VICTIM)
    server = None
    if case_.server is not None:
        kind, _, model = case_.server.partition(":")
        server = FakeLLMServer() if not model else _ModelFaultServer(kind, model)
        if kind != "ok" and not model:
            server.fault_rate = {kind: 1.0}
        server.start()
    try:
        values = _placeholders(bench, server)
        env = _case_env(bench, project, case_.bare_python)
        env.update(OPENAI_BASE_URL=values["openai"], ANTHROPIC_BASE_URL=values["anthropic"])
        for key, value in case_.env.items():
            if value is None:
                env.pop(key, None)
            else:
                env[key] = value.format(**values)
        for step in case_.setup:
            step(project)
        before, before_outside = tree(project), tree(outside_of(project))
        script, *args = [part.format(**values) for part in shlex.split(case_.command)]
        argv = [str(SCRIPTS / script), *args]
        started = time.monotonic()
        if forker is None:
            python = bench.bare_python if case_.bare_python else str(project / ".longmemeval-venv" / "bin" / "python")
            code, stdout, stderr = _run_subprocess(case_, [python, *argv], project, env)
        else:
            code = forker.run(argv, project, env, workdir / "stdout", workdir / "stderr", CASE_TIMEOUT_S)
            stdout, stderr = (workdir / "stdout").read_text(), (workdir / "stderr").read_text()
        seconds = time.monotonic() - started
        _stop_background_workers(project)
        return Outcome(code=code, stdout=stdout, stderr=stderr, changed=tree_changes(before, tree(project)),
                       outside_changed=tree_changes(before_outside, tree(outside_of(project))), seconds=seconds,
                       folder=str(workdir))
    finally:
        if server is not None:
            server.stop()
        for dirpath, dirnames, filenames in os.walk(project):  # chmod'ed setups: let pytest clean the copy up
            for name in [*dirnames, *filenames]:
                path = os.path.join(dirpath, name)
                mode = os.lstat(path).st_mode
                if not stat.S_ISLNK(mode) and mode & 0o700 != 0o700:
                    os.chmod(path, mode | 0o700)


def _run_subprocess(case_: Case, command: list[str], project: Path, env: Mapping[str, str]
                    ) -> tuple[int | None, str, str]:
    with subprocess.Popen(command, cwd=project, env=env, text=True, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                          preexec_fn=_preexec(case_)) as proc:
        try:
            stdout, stderr = proc.communicate(timeout=CASE_TIMEOUT_S)
            return proc.returncode, stdout, stderr
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            stdout, stderr = proc.communicate()
            return None, stdout, stderr


# --------------------------------------------------------------------------- the shared project


def _base_env(home: Path) -> dict[str, str]:
    """The environment of a user's shell, minus anything real: no real keys, base URLs or HOME."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "ANTHROPIC_", "AZURE_OPENAI_", "LONGMEMEVAL_", "PYTEST_"))}
    env.update(HOME=str(home), LONGMEMEVAL_TIKTOKEN="0", **DUMMY_KEYS)
    return env


def _closed_port() -> socket.socket:
    """A socket bound to a port but never listening: connecting to it is refused at once."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    return sock


def _unprivileged_problem(root: Path) -> str | None:
    """Why the ``unprivileged`` cases cannot run here, or None."""
    if os.geteuid() != 0:
        return None
    try:
        subprocess.run(["true"], preexec_fn=_unshare_user, check=True)
    except (subprocess.SubprocessError, OSError) as err:
        return f"running as root and cannot leave root's write rights (user namespaces: {err})"
    return None


BIG_IMPORTS = ("anthropic", "openai", "matplotlib.pyplot")
"""What the slow cases import: a second or more each to compile."""


def uncached(modules: tuple[str, ...], prefix: str) -> list[str]:
    """The ``modules`` whose bytecode is not under ``prefix`` yet (a first run): usually none, and compiling them
    again anyway cost the set-up ~2.5 s of CPU on its critical path. Found without importing them."""
    if prefix != sys.pycache_prefix:
        return list(modules)
    cold = []
    for name in modules:
        top, *rest = name.split(".")
        source = Path(importlib.util.find_spec(top).origin)
        if rest:
            source = source.parent.joinpath(*rest).with_suffix(".py")
        if not Path(importlib.util.cache_from_source(str(source))).is_file():
            cold.append(name)
    return cold


def make_bench(root: Path, with_forker: bool) -> tuple[Bench, socket.socket, Forker | None]:
    """The project every case copies, a python without our packages, a closed port; and, when ``with_forker``, the
    script forker, started as soon as the project is there (its imports take as long as r1's run)."""
    home = root / "home"
    home.mkdir()
    project, env = prepare_project(root / "prepared", sys.executable, _base_env(home))
    # Bytecode is cached, as on a user's machine, but in the suite's folder outside the checkout (conftest.py):
    # neither the checkout nor the project gets a __pycache__. What it lacks of the big imports is compiled while r1
    # runs (cases start them at once).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = os.environ.get("PYTHONPYCACHEPREFIX") or str(root / "pycache")
    python = str(project / ".longmemeval-venv" / "bin" / "python")
    cold = uncached(BIG_IMPORTS, env["PYTHONPYCACHEPREFIX"])
    warm = subprocess.Popen([sys.executable, "-c", f"import {', '.join(cold)}"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL) if cold else None
    with cf.ThreadPoolExecutor(max_workers=1) as starter:
        starting = starter.submit(Forker, python, SCRIPTS, env) if with_forker else None
        try:
            make_upstream_tree(project / STATE)  # the config's default longmemeval_root: the judge prompt
            done = subprocess.run([python, str(SCRIPTS / "run_benchmark.py"), "--max", "3", "--run-id", RUN_ID,
                                   "--progress", "quiet"], cwd=project, env=env, capture_output=True, text=True,
                                  timeout=120)
            assert done.returncode == 0, f"the offline run r1 of the prepared project failed:\n{done.stderr}"
            bare = root / "bare-python"
            subprocess.run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", "--without-pip",
                            str(bare)], check=True, capture_output=True)
            forker = starting.result() if starting is not None else None
        except BaseException:
            if starting is not None and starting.exception() is None:
                starting.result().stop()
            raise
        finally:
            if warm is not None:
                warm.wait(timeout=120)
    sock = _closed_port()
    bench = Bench(base=project, env=env, bare_python=str(bare / "bin" / "python"), closed_port=sock.getsockname()[1],
                  unprivileged_problem=_unprivileged_problem(root))
    return bench, sock, forker


def _expected_cost(case_: Case) -> int:
    """Longest first, so the pool does not end on one slow case: the runs that load a model SDK are the slow ones."""
    return 2 if case_.server is not None or PAID in case_.setup or PAID_ANTHROPIC in case_.setup else 0


def needs_a_fresh_process(case_: Case) -> bool:
    """What only a process of its own gives: another python, resource limits, a user namespace."""
    return (case_.bare_python or case_.unprivileged or case_.max_file_bytes is not None
            or case_.max_memory_bytes is not None)


SAMPLES = frozenset({shlex.split(c.command)[0]: c.id for c in reversed(CASES) if not needs_a_fresh_process(c)}
                    .values())
"""The first case of each script that could be forked: it runs as a subprocess, and forked too (the twin test)."""


def forked(case_: Case) -> bool:
    """Whether the case's command runs by tests/script_forker.py (the same process, minus Python's start and the
    imports: ~0.4 s of CPU each) rather than as a subprocess: not the controls, not the samples."""
    return case_.section != "control" and case_.id not in SAMPLES and not needs_a_fresh_process(case_)


@dataclass(frozen=True)
class Job:
    case: Case
    forked: bool

    @property
    def key(self) -> str:
        return self.case.id + (" (forked)" if self.forked else "")


def run_all(jobs: list[Job], root: Path, workers: int = WORKERS) -> dict[str, Outcome]:
    """Run ``jobs`` at once (each in its own copy under ``root``); {job key: outcome}."""
    bench, sock, forker = make_bench(root, with_forker=any(job.forked for job in jobs))
    try:
        with cf.ThreadPoolExecutor(max_workers=workers) as pool:
            futures = {job.key: pool.submit(run_case, job.case, bench,
                                            Path(tempfile.mkdtemp(prefix=f"{job.case.id}-", dir=root)),
                                            forker if job.forked else None)
                       for job in sorted(jobs, key=lambda j: (_expected_cost(j.case), not j.forked), reverse=True)}
            return {key: future.result() for key, future in futures.items()}
    finally:
        sock.close()
        if forker is not None:
            forker.stop()


# --------------------------------------------------------------------------- the tests


def _params(cases: list[Case]) -> list[Any]:
    """One param per case; ``today`` makes it a strict xfail of the asserts only (a harness error stays an error)."""
    return [pytest.param(c, id=c.id, marks=[pytest.mark.xfail(strict=True, raises=AssertionError, reason=c.today)]
                         if c.today else []) for c in cases]


def _outcome(outcomes: Mapping[str, Outcome], case_: Case, by_fork: bool | None = None) -> Outcome:
    """The case's outcome: as its test runs it (``forked``), or by ``by_fork`` (the twin test)."""
    outcome = outcomes[Job(case_, forked(case_) if by_fork is None else by_fork).key]
    if outcome.harness_error:
        raise RuntimeError(f"{case_.id}: the test's machinery failed:\n{outcome.harness_error}")
    if outcome.skipped:
        pytest.skip(outcome.skipped)
    return outcome


@pytest.fixture(scope="session")
def outcomes(request, tmp_path_factory) -> dict[str, Outcome]:
    """Every case this session selected, run at once before the first of them is checked (under pytest-xdist, by
    the first worker to get one of them, for all)."""
    selected: dict[str, Job] = {}
    for item in request.session.items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if item.module.__name__ != __name__:
            continue
        if isinstance(params.get("case_"), Case):
            selected.update({job.key: job for job in [Job(params["case_"], forked(params["case_"]))]})
        if isinstance(params.get("twin"), Case):
            selected.update({job.key: job for job in [Job(params["twin"], False), Job(params["twin"], True)]})
    return shared_work.once(tmp_path_factory, "bad-inputs",
                            lambda: run_all(list(selected.values()), tmp_path_factory.mktemp("bad-inputs")),
                            timeout=900)


def test_the_table_is_large_and_its_ids_unique():
    assert len(CASES) >= 60
    ids = [c.id for c in CASES + CONTROLS]
    assert len(ids) == len(set(ids))
    assert {c.section for c in CASES} == {CONFIG_S, DATASET_S, ARGS_S, ENV_S, SERVER_S, FS_S, LOOP_S}
    for c in CASES + CONTROLS:
        assert (SCRIPTS / shlex.split(c.command)[0]).is_file(), c.id


@pytest.mark.parametrize("case_", _params(CASES))
def test_a_bad_input_gets_one_line_exit_2_and_writes_nothing(case_: Case, outcomes):
    outcome = _outcome(outcomes, case_)
    report = f"{case_.section} / {case_.id}: {outcome.describe()}"
    assert "Traceback" not in outcome.stdout + outcome.stderr, report
    assert outcome.code == 2, report
    lines = [line for line in outcome.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), report
    assert outcome.changed == [], report
    assert outcome.outside_changed == [], report


@pytest.mark.parametrize("case_", _params(CONTROLS))
def test_the_same_projects_work_when_nothing_is_wrong(case_: Case, outcomes):
    outcome = _outcome(outcomes, case_)
    report = f"{case_.id}: {outcome.describe()}"
    assert outcome.code == 0, report
    assert "Traceback" not in outcome.stdout + outcome.stderr, report
    assert outcome.outside_changed == [], report


@pytest.mark.parametrize("twin", [pytest.param(c, id=c.id) for c in CASES if c.id in SAMPLES])
def test_a_forked_command_ends_as_its_subprocess_does(twin: Case, outcomes):
    """The samples, each run both ways: the same exit code, output and changes (the case's folder, which differs
    between the two copies, said the same way)."""
    real, by_fork = _outcome(outcomes, twin, by_fork=False), _outcome(outcomes, twin, by_fork=True)
    report = f"{twin.id}:\nas a subprocess: {real.describe()}\nforked: {by_fork.describe()}"
    assert (real.code, real.changed, real.outside_changed) == (by_fork.code, by_fork.changed,
                                                               by_fork.outside_changed), report
    assert [seen(real, real.stderr), seen(real, real.stdout)] == [seen(by_fork, by_fork.stderr),
                                                                  seen(by_fork, by_fork.stdout)], report


def seen(outcome: Outcome, text: str) -> str:
    """``text`` with the case's own folder (a temporary folder per copy) said as ``<case>``."""
    return text.replace(outcome.folder, "<case>") if outcome.folder else text


def test_every_script_of_the_table_runs_as_a_subprocess_in_some_case():
    subprocess_scripts = {shlex.split(c.command)[0] for c in CASES + CONTROLS if not forked(c)}
    assert subprocess_scripts == {shlex.split(c.command)[0] for c in CASES + CONTROLS}
    assert sum(forked(c) for c in CASES) >= len(CASES) // 2  # the point of the forker
