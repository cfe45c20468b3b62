"""run-meta.json's blocks are typed records (JudgeIdentity, DatasetInfo, TargetInfo, Invocation): read by attribute,
still readable as their JSON objects by older callers, and written back byte for byte."""

from __future__ import annotations

import dataclasses
import json

from lme.core.run_records import DatasetInfo, Invocation, JudgeIdentity, MetaBlock, RunMeta, TargetInfo
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
    assert isinstance(meta.dataset, DatasetInfo) and (meta.dataset.n_items, meta.dataset.release) == (3, None)
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


def test_a_block_still_reads_as_its_json_object():
    meta = RunMeta.from_dict(_meta())
    assert meta.target.get("a_new_key") == [1] and meta.judge["model"] == meta.judge.model
    assert {**meta.judge, "official": False}["official"] is False and meta.judge == _meta()["judge"]
    made = meta.with_(judge={**meta.judge, "official": False})  # what the driver does when a verdict is not official
    assert isinstance(made.judge, JudgeIdentity) and made.judge.official_judge is False


def test_no_block_field_hides_a_mapping_method():
    for block in (JudgeIdentity, DatasetInfo, TargetInfo, Invocation):
        clash = [f.name for f in dataclasses.fields(block) if hasattr(MetaBlock, f.name)]
        assert clash == [], f"{block.__name__}: {clash} (map the JSON key to another attribute in _ATTRIBUTE)"
