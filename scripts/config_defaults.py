"""The defaults of ``.longmemeval-benchmarks/config.json``, standard library only.

Kept apart from ``config.py`` (which validates with jsonschema) because ``setup_project.py`` writes the first
config before the venv, and so jsonschema, exists.
"""

from __future__ import annotations

from typing import Any

from records import OFFICIAL_JUDGE_MODEL, OFFICIAL_JUDGE_PROVIDER, SCHEMA_VERSION

STATE_DIR = ".longmemeval-benchmarks"


def default_config() -> dict[str, Any]:
    """Every field with its default; ``datasetPath`` and the target model are placeholders setup replaces."""
    return {
        "schemaVersion": SCHEMA_VERSION,
        "datasetPath": f"{STATE_DIR}/data/longmemeval_s_cleaned.json",
        "variant": "_s",
        "runs_dir": f"{STATE_DIR}/runs",
        "longmemeval_root": f"{STATE_DIR}/LongMemEval",
        "targetProvider": "anthropic",
        "targetModel": "claude-sonnet-4-6",
        "judgeProvider": OFFICIAL_JUDGE_PROVIDER,
        "judgeModel": OFFICIAL_JUDGE_MODEL,
        "maxEvals": 500,
        "target": "full-context",
        "targetOptions": {},
        "concurrency": 8,
        "cacheEnabled": True,
        "cache_dir": f"{STATE_DIR}/cache",
        "errorThreshold": 0,
        "requestTimeoutSeconds": 600,
        "maxAttempts": 8,
        "providers": {},
        "loop": {},
        "contextWindowTokens": None,
        "confirmCostUsd": 5,
    }
