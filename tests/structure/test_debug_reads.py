"""The harness reads no target's private ``debug`` keys: what it shows of a pipeline comes from the declared
fields (``target.stages``, ``target.truncation``, ``retrieval``'s detail). The one exception is
``lme/core/old_debug.py``, which reads rows written before that contract."""

from __future__ import annotations

import re
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
READ = re.compile(r"""debug\s*\.\s*get\(|debug\s*\[\s*["']|\[\s*["']debug["']\s*\]\s*(\[|\.get)|debug\s*\.\s*[a-z_]+\s*\.\s*get\(""")
WRITE = re.compile(r"""debug\s*\[\s*["'][^"']+["']\s*\]\s*=[^=]""")
"""The harness may add its own key to a row's debug (``reported_tokens``): a write, not a read."""
ALLOWED = {"lme/core/old_debug.py"}


def test_no_module_of_the_harness_reads_a_key_of_a_targets_debug():
    offenders = []
    for path in sorted([*SCRIPTS.rglob("*.py"), *SCRIPTS.rglob("*.js")]):
        relative = path.relative_to(SCRIPTS).as_posix()
        if relative in ALLOWED:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if READ.search(WRITE.sub("", line)):
                offenders.append(f"{relative}:{number}: {line.strip()}")
    assert offenders == [], "read the declared fields (records.PipelineStage, ItemTruncation, RetrievalDetail):\n" \
        + "\n".join(offenders)
