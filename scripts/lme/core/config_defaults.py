"""The defaults of ``.longmemeval-benchmarks/config.json``, standard library only.

Kept apart from ``config.py`` (which validates with jsonschema) because ``setup_project.py`` writes the first
config before the venv, and so jsonschema, exists.
"""

from __future__ import annotations

from typing import Any

from lme.core.facts import (
    CACHE_DIR,
    DATA_DIR,
    OFFICIAL_JUDGE_MODEL,
    OFFICIAL_JUDGE_PROVIDER,
    RUNS_DIR,
    SCHEMA_VERSIONS,
    UPSTREAM_DIR,
)


def default_config() -> dict[str, Any]:
    """Every field with its default; ``datasetPath`` and the target model are placeholders setup replaces."""
    return {
        "schemaVersion": SCHEMA_VERSIONS["config"],
        "datasetPath": f"{DATA_DIR}/longmemeval_s_cleaned.json",
        "variant": "_s",
        "runs_dir": RUNS_DIR,
        "longmemeval_root": UPSTREAM_DIR,
        "targetProvider": "anthropic",
        "targetModel": "claude-sonnet-4-6",
        "judgeProvider": OFFICIAL_JUDGE_PROVIDER,
        "judgeModel": OFFICIAL_JUDGE_MODEL,
        "successorJudge": None,
        "judgeReasoningEffort": None,
        "maxEvals": 500,
        "target": "full-context",
        "targetOptions": {},
        "concurrency": 8,
        "cacheEnabled": True,
        "cache_dir": CACHE_DIR,
        "errorThreshold": 0,
        "requestTimeoutSeconds": 600,
        "maxAttempts": 8,
        "providers": {},
        "loop": {},
        "contextWindowTokens": None,
        "confirmCostUsd": 5,
        "batch": "off",
        "batchFallback": "resubmit",
        "batchPollSeconds": 10,
    }
