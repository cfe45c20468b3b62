"""The declared debug contract, run end to end with a user's own memory system written here from plugins/README.md
alone ("What it returns": ``stages``, ``truncation``, ``retrieval``), as a Python file and as a command: the rows
carry what it declared (real dropped ids, the evidence among them), the scorecard's pipeline health, the clusters
and the report page read those fields and never its ``debug``, and a malformed value is that item's one-line error
row."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from lme.cli import run_benchmark
from lme.core.errors import run_main
from lme.score import cluster_failures
from lme.store import run_store
from run_project import make_project, run_dir
from factories import scorecard_of
from test_user_system_processes import _stop_workers  # noqa: F401  (the fixture: workers stopped after each test)

OFFLINE = ["--target-model", "offline:mine", "--judge-model", "offline:offline-containment-v1"]

SYSTEM = '''
def generate(item, ctx):
    sessions = item["sessions"]
    answer = "There is not enough information to answer."
    return {
        "hypothesis": answer,
        "retrieved_session_ids": [s["session_id"] for s in reversed(sessions)],
        "retrieval": {"top_k": 2, "granularity": "session"},
        "stages": [{"name": "index", "status": "ok", "detail": f"{len(sessions)} sessions"},
                   {"name": "graph", "status": "failed", "detail": "graph store unreachable"},
                   {"name": "reader", "status": "fallback"}],
        "truncation": {"truncated": True, "dropped_sessions": len(sessions) - 1, "kept_sessions": 1,
                       "dropped_session_ids": [s["session_id"] for s in sessions[:-1]]},
        "debug": {"symbolic": {"bypass": {"taken": True}}, "health": {"writer": {"facts": 0}}},
    }
'''
"""A system that declares its stages (one broken on every item), a cut history and its top_k; its debug holds
keys that look like memory-ref's, which the harness must not read."""

BAD_REPLIES = {
    "status": '{"hypothesis": "x", "stages": [{"name": "index", "status": "great"}]}',
    "key": '{"hypothesis": "x", "truncation": {"truncated": true, "lost": 3}}',
    "count": '{"hypothesis": "x", "retrieval": {"top_k": "five"}}',
}


def as_python(project: Path) -> list[str]:
    (project / "memsys.py").write_text(SYSTEM)
    return ["--target", "memsys.py"]


def as_command(project: Path) -> list[str]:
    script = project / "memsys"
    script.write_text(f"#!{sys.executable}\nimport json, sys\n{SYSTEM}\n"
                      "print(json.dumps(generate(json.load(sys.stdin), {})))\n")
    script.chmod(0o755)
    return ["--target", "./memsys"]


def run(project: Path, run_id: str, *args: str) -> int:
    return run_main(run_benchmark.main, ["--project", str(project), "--progress", "quiet", "--run-id", run_id,
                                         "--max", "6", *OFFLINE, *args])


@pytest.mark.parametrize("form", [as_python, as_command], ids=["python", "command"])
def test_a_users_system_declares_its_stages_truncation_and_top_k_and_every_report_reads_them(tmp_path, form):
    project = make_project(tmp_path / "p")
    assert run(project, "d", *form(project)) == 0
    data = run_store.load_run(run_dir(project, "d"))
    row = next(iter(data.rows.values()))
    assert [(s.name, s.status) for s in row.target.stages] == [("index", "ok"), ("graph", "failed"),
                                                              ("reader", "fallback")]
    trunc = row.target.truncation
    assert trunc.truncated and trunc.dropped_sessions == len(trunc.dropped_session_ids) > 0
    assert not [s for s in trunc.dropped_session_ids if s.startswith("session_")]  # real ids in the row
    assert trunc.dropped_evidence is not None
    assert (row.retrieval.detail.top_k, row.retrieval.detail.granularity) == (2, "session")
    assert row.retrieval.detail.covers_all is False
    card = (run_dir(project, "d") / "scorecard.md").read_text()
    assert "PIPELINE BROKEN: graph: failed on all 6 items (graph store unreachable)" in card
    assert "writer" not in card.split("## ")[0]  # its debug's memory-ref-like keys are never read
    metrics = json.loads((run_dir(project, "d") / "metrics.json").read_text())
    assert metrics["truncation"]["truncated"] == 6 and metrics["retrieval"]["granularity"] == {"session": 6}
    clusters = cluster_failures.cluster_run(run_dir(project, "d"))
    assert {"graph failed", "reader fallback"} <= set(clusters["clusters"][0]["stages"])
    from lme.report import page_data

    data, _ = page_data.page_data(data, scorecard_of(data), project=project)
    shown = data["questions"][0]
    assert shown["stages"][1:] == ["graph: failed — graph store unreachable", "reader: fallback"]
    assert shown["stages"][0].startswith("index: ok — ") and shown["trunc"]["truncated"] is True


@pytest.mark.parametrize("field", sorted(BAD_REPLIES))
def test_a_malformed_declared_field_is_that_items_one_line_error_row(tmp_path, field):
    project = make_project(tmp_path / "p")
    script = project / "memsys"
    script.write_text(f"#!{sys.executable}\nimport sys\nsys.stdin.read()\nprint({BAD_REPLIES[field]!r})\n")
    script.chmod(0o755)
    assert run(project, "bad", "--target", "./memsys", "--error-threshold", "10", "--no-scorecard") != 2
    rows = list(run_store.load_run(run_dir(project, "bad")).rows.values())
    assert rows and all(r.status == "error" and r.error.kind == "target" for r in rows)
    message = rows[0].error.message
    assert "\n" not in message and 'plugins/README.md, "What it returns"' in message
    assert {"status": "stages[0].status must be one of ok, skipped, failed, fallback, got 'great'",
            "key": "truncation has unknown key(s) lost", "count": "retrieval.top_k must be a whole number >= 0, "
            "got 'five'"}[field] in message
