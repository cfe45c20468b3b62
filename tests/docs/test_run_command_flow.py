"""A newcomer's `/longmemeval-run --variant _oracle --max 20`: the command's own blocks, real SDKs, fake server."""

from __future__ import annotations

import json
import os
import sys

import markdown_harness as harness
from run_project import register_answers
from upstream_standin import make_upstream_tree


def test_run_command_with_variant_and_max_judges_twenty_items_through_the_fake_server(tmp_path, fake_llm, monkeypatch):
    project, env = harness.prepare_project(tmp_path, sys.executable, os.environ,
                                           longmemeval_root=make_upstream_tree(tmp_path / "upstream"))
    cfg_path = project / ".longmemeval-benchmarks" / "config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg.update(target="full-context", targetProvider="openai", targetModel="gpt-4o-mini",
               judgeProvider="openai", judgeModel="gpt-4o")
    cfg_path.write_text(json.dumps(cfg))
    # as if downloaded with /longmemeval-setup --download _oracle: --variant _oracle picks this file
    (project / ".longmemeval-benchmarks" / "data" / "longmemeval_oracle.json").write_bytes(
        (harness.REPO / "data" / "sample" / "longmemeval_sample.json").read_bytes())
    register_answers(fake_llm, correct_share=0.5)
    command = harness.REPO / "commands" / "longmemeval-run.md"
    monkeypatch.setitem(harness.DEFAULT_ARGUMENTS, "commands/longmemeval-run.md", "--variant _oracle --max 20 --run-id newcomer")

    result = harness.run_file(command, project, env)

    assert result.failed is None, result.describe_failure()
    run = project / ".longmemeval-benchmarks" / "runs" / "newcomer"
    rows = [json.loads(x) for x in (run / "item-results.jsonl").read_text().splitlines()]
    assert len(rows) == 20 and all(r["status"] == "judged" for r in rows)
    meta = json.loads((run / "run-meta.json").read_text())
    assert meta["variant"] == "_oracle" and meta["status"] == "completed"
    assert meta["dataset"]["path"].endswith("longmemeval_oracle.json")
    assert len([r for r in fake_llm.requests if r["body"].get("max_tokens") == 10]) == 20
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["judged"] == 20 and metrics["comparable"] is False  # stand-in judge prompt, sample dataset
    assert "WARN judge prompt in" in result.output and "non-official" in result.output  # the stand-in
    assert "Overall accuracy" in result.output
