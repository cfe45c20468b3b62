"""The facts of the protocol and of the toolkit's layout, each defined once. Standard library only.

Everything imports its facts from here, ``setup_project.py`` included (it runs before the venv exists): the
question types and the abstention rule, the official judge and its alias, which provider is offline, the dataset
variants, releases, file names and the shas we know, the upstream checkout we pin, the retrieval k-list, the
target names, and the names of the state directories and files.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from lme.core.errors import UserError

SCHEMA_VERSION = "1.0.0"
"""The version every kind of file started at (and the one files that carried none are read as). What a file is
written at today is its kind's entry in ``SCHEMA_VERSIONS``."""

SCHEMA_VERSIONS: dict[str, str] = {
    "config": "1.1.0",
    "run-meta": "1.1.0",
    "manifest": "1.0.0",
    "item-result": "2.0.0",
    "completed": "1.0.0",
    "prompt-store": "1.0.0",
    "metrics": "1.1.0",
    "comparison": "1.1.0",
    "verdict-archive": "1.2.0",
    "judge-stability": "1.0.0",
    "judge-agreement": "1.1.0",
    "judge-day": "1.0.0",
    "noise-floor": "1.0.0",
    "loop-session": "1.0.0",
    "loop-decision": "1.0.0",
    "loop-history": "1.0.0",
    "loop-confirmation": "1.0.0",
    "loop-retest": "1.0.0",
    "loop-snapshot": "1.0.0",
    "run-worker": "1.0.0",
    "run-pacing": "1.0.0",
    "target-api-record": "1.0.0",
}
"""The ``schemaVersion`` each kind of file (or JSONL line) is written at, a version per kind (``references/SPEC.md``,
"Versions"): a field added that older readers may ignore raises the minor; a field removed, renamed or given a new
meaning raises the major. An older file is brought up to date where it is read, by the kind's numbered steps in
``lme/core/migrations.py``; ``tests/core/test_migrations.py`` holds each kind's steps to reach this version."""


def schema_version(kind: str) -> str:
    """The ``schemaVersion`` a file of ``kind`` (a key of ``SCHEMA_VERSIONS``) is written at."""
    return SCHEMA_VERSIONS[kind]

# --------------------------------------------------------------------------- the protocol

QUESTION_TYPES: tuple[str, ...] = (
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "multi-session",
    "temporal-reasoning",
    "knowledge-update",
)
OFFICIAL_SET_SIZE = 500
"""Items in every official LongMemEval variant (_s, _m, _oracle)."""


def is_abstention(question_id: str) -> bool:
    """Upstream's rule, and the only one: an item is an abstention item iff its id contains ``_abs``."""
    return "_abs" in question_id


QUESTION_ID_MAX = 200
"""Characters of a question id (upstream's are at most 17)."""
_LINE_BREAKING = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
"""Control characters and line separators: an id holding one could print as two lines (the schemas' pattern)."""


def id_problem(text: str, max_chars: int = QUESTION_ID_MAX) -> str | None:
    """Why ``text`` cannot be an id we print (empty, too long, a control character), or None."""
    if not text:
        return "is empty"
    if len(text) > max_chars:
        return f"is {len(text)} characters long (at most {max_chars})"
    found = _LINE_BREAKING.search(text)
    if found is not None:
        return f"holds the control character {ascii(found.group())} (ids are printed: one must stay one line)"
    return None


OFFICIAL_JUDGE_PROVIDER = "openai"
OFFICIAL_JUDGE_MODEL = "gpt-4o-2024-08-06"
OFFICIAL_JUDGE_ROUTES: tuple[str, ...] = (OFFICIAL_JUDGE_PROVIDER, "azure")
"""Providers that serve the official snapshot: OpenAI itself, and Azure OpenAI (a deployment of the same snapshot)."""
JUDGE_MODEL_ALIASES = {"gpt-4o": OFFICIAL_JUDGE_MODEL, "gpt-4o-mini": "gpt-4o-mini-2024-07-18"}
"""Upstream's ``model_zoo`` for the judge: ``gpt-4o`` is the snapshot ``gpt-4o-2024-08-06``."""


def resolve_judge_model(model: str) -> str:
    """A judge model with upstream's alias resolved (``gpt-4o`` -> ``gpt-4o-2024-08-06``)."""
    return JUDGE_MODEL_ALIASES.get(model, model)


def is_official_judge(provider: str | None, model: str | None) -> bool:
    """The official judge: the snapshot ``gpt-4o-2024-08-06`` through OpenAI or Azure OpenAI."""
    return provider in OFFICIAL_JUDGE_ROUTES and model == OFFICIAL_JUDGE_MODEL


OFFICIAL_JUDGE_SHUTDOWN = "2027-01-14"
"""The day OpenAI shuts the official snapshot down on its API (its deprecations page); the model list's
``shutdown_date`` says so where it carries one."""
_DATED = re.compile(r"^-(\d{4}-\d{2}-\d{2}|\d{8})$")


def returned_model_matches(requested: str | None, returned: str | None) -> bool:
    """A judge reply names the model that was asked for: the same id, or a dated snapshot of it
    (``o3-mini`` -> ``o3-mini-2025-01-31``). The official snapshot must come back exactly as itself: a reply
    naming ``gpt-4o-2024-11-20`` or ``gpt-5.1`` (an alias moved, an Azure auto-upgrade) is another judge."""
    if not requested or not returned:
        return False
    if returned == requested:
        return True
    if requested == OFFICIAL_JUDGE_MODEL:
        return False
    return returned.startswith(requested) and bool(_DATED.match(returned[len(requested):]))


UPSTREAM_URL = "https://github.com/xiaowu0162/LongMemEval"
UPSTREAM_COMMIT = "9e0b455f4ef0e2ab8f2e582289761153549043fc"
"""The upstream commit setup pins its checkout to."""
JUDGE_TEMPLATE_RELPATH = PurePosixPath("src/evaluation/evaluate_qa.py")
"""Where the judge prompt lives in an upstream checkout."""
JUDGE_PROMPT_FUNCTION = "get_anscheck_prompt"
UPSTREAM_FUNCTION_SHA256 = frozenset({
    # get_anscheck_prompt at xiaowu0162/LongMemEval d6dc8b5 (2024-11-24; unchanged through 9e0b455), CRLF -> LF
    "90413115ed06dd07135f9d9ed53b14238776029eeb1a32a87ccbfbc0e2730482",
})
"""sha256 of upstream's prompt function source: what makes a judge prompt upstream's."""

# --------------------------------------------------------------------------- offline

OFFLINE = "offline"
"""The provider of the offline target and the offline judge: no network, no keys, never official."""
OFFLINE_TARGET_MODEL = "extractive"
OFFLINE_JUDGE_MODEL = "offline-containment-v1"


def is_offline(provider: str | None) -> bool:
    """True for the provider that makes no model call (the offline target, the offline judge, a hypotheses file)."""
    return provider == OFFLINE


# --------------------------------------------------------------------------- the dataset

VARIANT_ALIASES: dict[str, str] = {
    "_s": "_s", "s": "_s", "longmemeval_s": "_s", "longmemeval_s_cleaned": "_s",
    "_m": "_m", "m": "_m", "longmemeval_m": "_m", "longmemeval_m_cleaned": "_m",
    "_oracle": "_oracle", "oracle": "_oracle", "longmemeval_oracle": "_oracle",
}
"""Every spelling of a variant -> ``_s``, ``_m`` or ``_oracle``."""
VARIANTS: tuple[str, ...] = ("_s", "_m", "_oracle")
_VARIANT_FIX = "use one of: _s (s, longmemeval_s), _m (m, longmemeval_m), _oracle (oracle, longmemeval_oracle)"


def resolve_variant(name: str, *, unknown: str = "unknown LongMemEval variant", fix: str = _VARIANT_FIX) -> str:
    """``s`` / ``_s`` / ``longmemeval_s`` / ``longmemeval_s_cleaned.json`` ... -> ``_s``; likewise ``_m`` and
    ``_oracle``. Any other name is one UserError line (``unknown`` and ``fix``: each command keeps its words)."""
    key = str(name).strip().lower()
    for suffix in (".json.xz", ".json.gz", ".json"):
        if key.endswith(suffix):
            key = key[: -len(suffix)]
    if key in VARIANT_ALIASES:
        return VARIANT_ALIASES[key]
    raise UserError(f"{unknown} {name!r}", fix=fix)

RELEASES = {"cleaned": "xiaowu0162/longmemeval-cleaned", "original": "xiaowu0162/longmemeval"}
"""Hugging Face dataset repositories of the two releases."""
FILES = {
    "cleaned": {"_s": "longmemeval_s_cleaned.json", "_m": "longmemeval_m_cleaned.json",
                "_oracle": "longmemeval_oracle.json"},
    "original": {"_s": "longmemeval_s.json", "_m": "longmemeval_m.json", "_oracle": "longmemeval_oracle.json"},
}
"""The file of each variant in each release."""
KNOWN_SHA256 = {
    ("cleaned", "longmemeval_s_cleaned.json"): "d6f21ea9d60a0d56f34a05b609c79c88a451d2ae03597821ea3d5a9678c3a442",
}
"""sha256 of files as published upstream (Hugging Face xiaowu0162/longmemeval-cleaned); see the protocol notes."""


def published_file(sha256: str) -> str | None:
    """The name of the published file whose (decompressed) bytes have ``sha256`` (``KNOWN_SHA256``), or None."""
    return next((name for (_release, name), sha in KNOWN_SHA256.items() if sha == sha256.lower()), None)


SAMPLE_FILE = "longmemeval_sample.json"
"""The shipped synthetic sample (``data/sample/``): LongMemEval's schema, not its questions."""

# --------------------------------------------------------------------------- targets and retrieval

BUILTIN_TARGETS: dict[str, str] = {
    "full-context": "plugins/full_context.py",
    "oracle": "plugins/oracle.py",
    "rag": "plugins/rag.py",
    "offline": "plugins/offline.py",
    "command": "plugins/command.py",
    "python": "plugins/python_file.py",
    "memory-ref": "plugins/memory_ref/__init__.py",
    "hypotheses": "plugins/hypotheses.py",
}
"""The built-in targets, by name, and their files relative to the plugin root."""
ORACLE_TARGET = "oracle"
"""The one target that sees only the evidence sessions (the driver picks them)."""
HYPOTHESES_TARGET = "hypotheses"
"""Answers read from a file (``run_benchmark.py --hypotheses FILE``), the one target looked up by question id."""
USER_SYSTEM_TARGETS: tuple[str, ...] = ("python", "command")
"""The built-in adapters that run a user's own memory system, whose model calls its own code makes."""


def is_user_system(target: str) -> bool:
    """``target`` is a user's own system (its calls are its own code's): the ``python`` or ``command`` adapter, or a
    target given as a path (any name that is not a built-in target). A run gives such a target the target
    endpoint (``lme.models.target_endpoint``)."""
    return target in USER_SYSTEM_TARGETS or target not in BUILTIN_TARGETS


SYMBOLIC_FLAGS: tuple[str, ...] = ("symbolic_resolver", "symbolic_temporal", "symbolic_bypass")
"""memory-ref's three symbolic layers (target options; the loop keeps them on)."""
RETRIEVAL_KS: tuple[int, ...] = (1, 3, 5, 10, 30, 50)
"""The k of upstream's retrieval evaluation; metrics.json has every one."""

# --------------------------------------------------------------------------- state on disk

STATE_DIR = ".longmemeval-benchmarks"
"""A project's state: config, runs, cache, data, the loop's files, the judge registries."""
VENV_DIR = ".longmemeval-venv"
CONFIG_FILE = "config.json"
RUNS_DIR = f"{STATE_DIR}/runs"
CACHE_DIR = f"{STATE_DIR}/cache"
DATA_DIR = f"{STATE_DIR}/data"
UPSTREAM_DIR = f"{STATE_DIR}/LongMemEval"
STABILITY_REGISTRY = "judge-stability.jsonl"
VERDICT_ARCHIVE = "verdicts.jsonl"
AGREEMENT_REGISTRY = "judge-agreement.jsonl"
"""The judge's registries, in ``STATE_DIR``."""

HISTORY_FILE = "history_max_effort.md"
"""The loop's own log (project root). Never ``history.md``: that one belongs to the canonical stack."""
ROUND_FILE = ".max_effort_round"
SNAPSHOTS_DIR = f"{STATE_DIR}/snapshots"
DECISIONS_FILE = f"{STATE_DIR}/decisions.jsonl"
CONFIRMATION_FILE = f"{STATE_DIR}/confirmation.json"
TRIGGER_SET_FILE = f"{STATE_DIR}/trigger_set.txt"
PROPOSAL_FILE = f"{STATE_DIR}/proposal.md"
LOOP_SESSION_FILE = f"{STATE_DIR}/loop-session.json"
RETEST_FILE = f"{STATE_DIR}/retest.json"
NOISE_FLOOR_FILE = f"{STATE_DIR}/noise-floor.json"
HISTORY_RECORDS = f"{STATE_DIR}/history.jsonl"
JUDGE_DAY_FILE = f"{STATE_DIR}/judge-day.json"
"""The loop's files, relative to the project root."""
