"""A throwaway user project for run tests and benchmarks: config, a dataset, a stand-in upstream checkout."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "data" / "sample" / "longmemeval_sample.json"


def make_project(root: Path, *, dataset: Path = SAMPLE, **overrides: Any) -> Path:
    """Write ``.longmemeval-benchmarks/config.json`` for a run against the fake server (real SDKs)."""
    from lme.core import config
    from upstream_standin import make_upstream_tree

    root.mkdir(parents=True, exist_ok=True)
    upstream = make_upstream_tree(root / "upstream")
    cfg = config.default_config()
    cfg.update(
        datasetPath=str(dataset),
        variant="_s",
        longmemeval_root=str(upstream),
        target="full-context",
        targetProvider="openai",
        targetModel="gpt-4o-mini",
        judgeProvider="openai",
        judgeModel="gpt-4o",
        concurrency=4,
        maxAttempts=3,
        requestTimeoutSeconds=5,
    )
    cfg.update(overrides)
    config.write_config(root, cfg, force=True)
    return root


def register_answers(server: Any, dataset: Path = SAMPLE, correct_share: float = 0.5) -> dict[str, Any]:
    """Teach the fake server the gold answers; returns {question_id: gold}."""
    items = json.loads(dataset.read_text())
    server.answers = {it["question"]: it["answer"] for it in items}
    server.correct_share = correct_share
    return {it["question_id"]: it["answer"] for it in items}


def run_dir(project: Path, run_id: str) -> Path:
    return project / ".longmemeval-benchmarks" / "runs" / run_id


def expire_recent_probes(project: Path) -> None:
    """The project's last probes long past their 10 minutes (``recent_probes``), and this process's memory of them
    gone: the next run probes again, as a run the day after (a new process) does."""
    from lme.models import provider_probe

    (project / ".longmemeval-benchmarks" / "cache" / "probes.json").unlink()
    provider_probe.forget()


def judged_rows(project: Path, run_id: str) -> list[dict[str, Any]]:
    path = run_dir(project, run_id) / "item-results.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r for r in rows if r["status"] == "judged"]
