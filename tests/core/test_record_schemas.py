"""The schemas in ``references/schemas/`` name the keys the records write: a field added to a record (or a key
to a schema) without the other fails here. The keys come from the records' declared JSON form (``codec.keys``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lme.core import codec
from lme.core.records import ItemTruncation, PipelineStage, Verdict
from lme.core.run_records import CodeVersion, ManifestItem, ResultRow, RowCost, RowError, RowTarget, TargetInfo
from lme.core.run_records import JudgeIdentity, Manifest
from lme.score.metrics import Figures, TaskAveraged
from lme.score.scorecard_record import (Cost, EstimateCalibration, EstimatedFigure, JudgeStability, Latency,
                                        RegistryChange, Retrieval, SourceEstimate, SourceSpread, Truncation,
                                        VersionRows)
from lme.core.run_records import FileChanges

SCHEMAS = Path(__file__).resolve().parents[2] / "references" / "schemas"

# (schema, JSON pointer of the object schema, record)
PAIRS = [
    ("item-result", "", ResultRow),
    ("item-result", "/properties/judgment", Verdict),
    ("item-result", "/properties/target", RowTarget),
    ("item-result", "/properties/target/properties/stages/items", PipelineStage),
    ("item-result", "/properties/target/properties/truncation", ItemTruncation),
    ("item-result", "/properties/cost", RowCost),
    ("item-result", "/properties/error", RowError),
    ("run-meta", "/$defs/code", CodeVersion),
    ("run-meta", "/properties/target", TargetInfo),
    ("run-meta", "/properties/judge", JudgeIdentity),
    ("manifest", "", Manifest),
    ("manifest", "/properties/items/items", ManifestItem),
    ("metrics", "/$defs/fileChanges", FileChanges),
    ("metrics", "/$defs/codeVersion", VersionRows),
    ("metrics", "/$defs/block", Figures),
    ("metrics", "/$defs/taskAveraged", TaskAveraged),
    ("metrics", "/$defs/latency", Latency),
    ("metrics", "/$defs/estimatedFigure", EstimatedFigure),
    ("metrics", "/properties/excluding_gold_errors/properties/registry_change", RegistryChange),
    ("metrics", "/properties/cost", Cost),
    ("metrics", "/properties/retrieval/oneOf/1", Retrieval),
    ("metrics", "/properties/truncation/oneOf/1", Truncation),
    ("metrics", "/properties/judge_stability", JudgeStability),
    ("metrics", "/properties/official_estimate/properties/calibration/items", EstimateCalibration),
    ("metrics", "/properties/official_estimate/properties/by_source", SourceSpread),
    ("metrics", "/properties/official_estimate/properties/by_source/properties/sources/items", SourceEstimate),
]


def at(schema: dict, pointer: str) -> dict:
    for part in filter(None, pointer.split("/")):
        schema = schema[int(part)] if isinstance(schema, list) else schema[part]
    return schema


@pytest.mark.parametrize("name, pointer, record", PAIRS, ids=[f"{n}{p}:{r.__name__}" for n, p, r in PAIRS])
def test_a_schemas_keys_are_the_keys_its_record_writes(name, pointer, record):
    schema = at(json.loads((SCHEMAS / f"{name}.schema.json").read_text()), pointer)
    assert sorted(schema["properties"]) == sorted(codec.keys(record))
