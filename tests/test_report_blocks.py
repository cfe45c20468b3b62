"""The report command's and skill's scorecard block: a failing --print-latest-id stops the block with its exit code.

(The happy paths of these blocks are run in tests/test_scorecard.py.)
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = {"command": REPO / "commands" / "longmemeval-report.md", "skill": REPO / "skills" / "report" / "SKILL.md"}


def _scorecard_block(doc: Path) -> str:
    blocks = re.findall(r"```bash\n(.*?)```", doc.read_text(encoding="utf-8"), flags=re.S)
    (block,) = [b for b in blocks if "--print-latest-id" in b]
    return block.replace("$ARGUMENTS", "")


@pytest.mark.parametrize("doc", sorted(DOCS))
def test_a_broken_config_fails_the_block_with_the_error_only(tmp_path, doc):
    project = tmp_path / "proj"
    shim = project / ".longmemeval-venv" / "bin" / "python"
    shim.parent.mkdir(parents=True)
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    shim.chmod(0o755)
    state = project / ".longmemeval-benchmarks"
    (state / "runs").mkdir(parents=True)
    (state / "config.json").write_text("{broken")
    done = subprocess.run(["bash", "-c", _scorecard_block(DOCS[doc])], cwd=project, capture_output=True, text=True,
                          timeout=120, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
                                            "CLAUDE_PLUGIN_ROOT": str(REPO)})
    assert done.returncode == 2
    assert "config.json" in done.stderr and done.stderr.count("error:") == 1
    assert "no runs yet" not in done.stdout
