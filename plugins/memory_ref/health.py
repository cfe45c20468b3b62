"""Each stage's own health for one item, from the debug the stages wrote: what a run-level check adds up.

    writer     facts extracted, malformed lines, sessions, calls (``off`` when the writer is off)
    retrieval  sessions ranked and shown to the reader
    bypass     whether the symbolic bypass answered (and why not)
    reader     sessions dropped for the evidence budget (truncation), or skipped (the bypass answered)

``scripts/lme/score/pipeline_health.py`` adds these up over a run and names a stage broken across it (0 facts on every
item, more malformed writer lines than facts, nothing retrieved).
"""

from __future__ import annotations

from typing import Any, Mapping


def item_health(debug: Mapping[str, Any]) -> dict[str, Any]:
    writer = debug.get("writer") or {}
    retrieval = debug.get("retrieval") or {}
    bypass = (debug.get("symbolic") or {}).get("bypass") or {}
    reader = debug.get("reader") or {}
    return {
        "writer": {"off": bool(writer.get("off")), "facts": int(writer.get("facts") or 0),
                   "malformed_lines": int(writer.get("malformed_lines") or 0),
                   "sessions": int(writer.get("sessions") or 0), "calls": int(writer.get("calls") or 0)},
        "retrieval": {"ranked": len(retrieval.get("top") or ()), "shown": int(retrieval.get("shown") or 0)},
        "bypass": {"taken": bool(bypass.get("taken")), "reason": bypass.get("reason")},
        "reader": {"skipped": reader.get("skipped"), "sessions_dropped": int(reader.get("sessions_dropped") or 0)},
    }
