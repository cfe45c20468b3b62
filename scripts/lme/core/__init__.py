"""The core stage, under every other: what the whole way through the data shares.

dataset -> target (Hypothesis) -> judge (Verdict) -> result row -> scorecard: the typed records at those boundaries
(``Question``, ``Hypothesis``, ``CallRecord``, ``Verdict``, ``ResultRow``, ``RunMeta`` and its blocks), the facts,
one-line user errors, time, crash-safe files and the one argument parser. Mostly stdlib only: setup and the hooks
import it on a bare system python."""

from lme import lazy_face

_EXPORTS = {
    "UserError": "lme.core.errors", "run_main": "lme.core.errors", "exit_now": "lme.core.errors",
    "Question": "lme.core.records", "PublicItem": "lme.core.records", "ChatRequest": "lme.core.records",
    "Completion": "lme.core.records", "LLM": "lme.core.records", "TargetContext": "lme.core.records",
    "Hypothesis": "lme.core.records", "CallRecord": "lme.core.records", "Verdict": "lme.core.records",
    "ResultRow": "lme.core.run_records", "RunMeta": "lme.core.run_records", "Manifest": "lme.core.run_records",
    "JudgeIdentity": "lme.core.run_records", "DatasetInfo": "lme.core.run_records",
    "TargetInfo": "lme.core.run_records", "Invocation": "lme.core.run_records",
    "STATE_DIR": "lme.core.facts", "BUILTIN_TARGETS": "lme.core.facts", "SYMBOLIC_FLAGS": "lme.core.facts",
    "PROPOSAL_FILE": "lme.core.facts", "ROUND_FILE": "lme.core.facts", "OFFICIAL_JUDGE_MODEL": "lme.core.facts",
    "is_abstention": "lme.core.facts", "is_offline": "lme.core.facts", "resolve_judge_model": "lme.core.facts",
    "utc_now": "lme.core.clock", "utc_now_iso": "lme.core.clock",
    "ArgumentParser": "lme.core.cli_parser", "loop_command_parser": "lme.core.cli_parser",
    "finite_float": "lme.core.cli_parser",
    "write_atomic_json": "lme.core.fileio", "write_atomic_text": "lme.core.fileio", "make_dirs": "lme.core.fileio",
    "FileLock": "lme.core.fileio",
    "load_config": "lme.core.config",
    "default_config": "lme.core.config_defaults",
    "refuse_outside": "lme.core.unattended",
}
"""Name -> the module that holds it (full dotted path, so a rename is found by grep)."""

__all__ = tuple(_EXPORTS)
__getattr__, __dir__ = lazy_face(__name__, _EXPORTS)
