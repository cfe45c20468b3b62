"""run-meta.json's blocks are typed records (JudgeIdentity, DatasetInfo, TargetInfo, Invocation): read by attribute,
and written back byte for byte."""

from __future__ import annotations

import dataclasses
import json

from lme.core.run_records import DatasetInfo, Invocation, JudgeIdentity, RunMeta, TargetInfo
from factories import run_meta


def _meta() -> dict:
    meta = run_meta("r1", 3, target={"name": "rag", "provider": "openai", "model": "gpt-4o", "options": {"k": 5},
                                     "a_new_key": [1]})
    meta["dataset"] = {"sha256": "ab" * 32, "path": "data/x.json", "items": 3, "recognition": {"release": "cleaned"}}
    meta["invocations"] = [{"started_at": "2026-12-01T00:00:00Z", "status": "completed", "calls": 4,
                            "endpoints": {"openai": "api.openai.com"}, "retry_wait_s": 1.5}]
    return meta


def test_run_metas_blocks_are_records_and_the_file_is_written_back_byte_identical():
    raw = _meta()
    meta = RunMeta.from_dict(raw)
    assert isinstance(meta.judge, JudgeIdentity) and meta.judge.official_judge is True
    assert isinstance(meta.dataset, DatasetInfo) and (meta.dataset.items, meta.dataset.release) == (3, None)
    assert meta.dataset.recognition == {"release": "cleaned"}
    assert isinstance(meta.target, TargetInfo) and meta.target.options == {"k": 5}
    (inv,) = meta.invocations
    assert isinstance(inv, Invocation) and (inv.status, inv.calls, inv.endpoints) == ("completed", 4,
                                                                                      {"openai": "api.openai.com"})
    written = meta.to_dict()
    for key in ("dataset", "target", "judge", "invocations"):  # each block as it was read, its key order included
        assert json.dumps(written[key]) == json.dumps(raw[key])
    assert json.dumps(RunMeta.from_dict(written).to_dict()) == json.dumps(written)
    assert RunMeta.from_dict(written) == meta


def test_an_updated_block_keeps_its_unknown_keys_and_appends_a_new_one():
    meta = RunMeta.from_dict(_meta())
    assert meta.target.extra == {"a_new_key": [1]}
    made = meta.with_(judge=meta.judge.updated(official=False))  # what the driver does when a verdict is not official
    assert isinstance(made.judge, JudgeIdentity) and made.judge.official_judge is False
    moved = meta.target.updated(name="other", options={"k": 6})
    assert (moved.name, moved.options, moved.extra) == ("other", {"k": 6}, {"a_new_key": [1]})
    stamped = meta.dataset.updated(file_bytes=10).to_dict()
    assert list(stamped) == [*_meta()["dataset"], "file_bytes"] and stamped["file_bytes"] == 10


def test_a_new_invocation_writes_its_end_keys_only_once_it_has_ended():
    started = Invocation(started_at="t0", pending_before=2, planned_now=2, endpoints={}, code={"id": None})
    assert list(started.to_dict()) == ["started_at", "pending_before", "planned_now", "endpoints", "code"]
    ended = dataclasses.replace(started, finished_at="t1", status="completed", cache=None)
    assert ended.to_dict()["cache"] is None and ended.to_dict()["status"] == "completed"
