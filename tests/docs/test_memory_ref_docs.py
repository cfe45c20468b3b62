"""references/model-config.md stays true to memory-ref: every option documented, the bash block runs as written."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "references" / "model-config.md"
sys.path.insert(0, str(REPO / "plugins"))

from memory_ref import stack  # noqa: E402


def test_every_option_and_role_is_documented_with_its_default():
    text = DOC.read_text()
    settings = stack.load_settings({}, "openai", "gpt-4o", "/c")
    for name in ("symbolic_temporal", "symbolic_resolver", "symbolic_bypass", "bypass_counts", "use_writer",
                 "top_k", "adaptive_k", "min_k", "retriever", "granularity", "rerank_candidates", "writer_parallel", "max_evidence_chars", "facts_cache"):
        row = re.search(rf"^\| `{name}` \| `?([^`|]+)`? \|", text, re.M)
        assert row, name
        default = getattr(settings, name)
        if name != "facts_cache":
            assert row.group(1).strip() == json.dumps(default).strip('"'), name
    for role in stack.ROLES + ("judge",):
        assert f"| `{role}` |" in text
    assert {f.name for f in dataclasses.fields(stack.Settings)} >= {"writer", "reader", "embed", "rerank"}


def bash_block() -> str:
    return re.search(r"```bash\n(.*?)```", DOC.read_text(), re.S).group(1)


def test_bash_block_refuses_without_a_config_and_merges_into_an_existing_one(tmp_path):
    missing = subprocess.run(["bash", "-c", bash_block()], cwd=tmp_path, capture_output=True, text=True)
    assert missing.returncode != 0 and "run the project setup first" in missing.stderr
    config = tmp_path / ".longmemeval-benchmarks" / "config.json"
    config.parent.mkdir()
    config.write_text(json.dumps({"targetProvider": "openai", "targetModel": "gpt-4o"}))
    done = subprocess.run(["bash", "-c", bash_block()], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    merged = json.loads(config.read_text())
    assert merged["target"] == "memory-ref" and merged["targetProvider"] == "openai"
    parsed = stack.load_settings(merged["targetOptions"], "openai", "gpt-4o", None)
    assert parsed.writer == stack.Role("openai", "gpt-4o-mini") and parsed.embed is None
