"""Every schema rejects malformed records with one readable line; versions with an unknown major are refused."""

from __future__ import annotations

import copy
import json

import pytest

from lme.core import schemas
from lme.cli import schemas as schemas_cli
from lme.core.config import default_config
from lme.core.errors import UserError
from helpers_data import error_row, judged_row, make_item
from lme.core.records import QUESTION_TYPES

VALID = {
    "config": default_config(),
    "run-meta": {
        "schemaVersion": "1.0.0",
        "runId": "r1",
        "status": "running",
        "started_at": "2026-11-29T19:00:00Z",
        "finished_at": None,
        "duration_seconds": 0,
        "variant": "_s",
        "dataset": {"path": "d.json", "sha256": "a" * 64, "items": 500},
        "target": {"name": "full-context", "provider": "anthropic", "model": "m", "options": {}},
        "judge": {"provider": "openai", "model": "gpt-4o-2024-08-06", "official": True},
        "plugin_version": "0.1.0",
        "project_git_commit": None,
        "error": None,
        "limiter": [{"at": "x", "limit": 4}],
    },
    "item-result": judged_row("q1"),
    "completed": {"question_id": "q1", "at": "2026-11-29T19:00:00Z"},
    "manifest": {"schemaVersion": "1.0.0", "n_total": 1, "items": [{"question_id": "q1", "question_type": "multi-session"}]},
    "item": make_item("q1"),
}


def _set(obj, path, value):
    target = obj
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return obj


MALFORMED = [
    ("config", ("variant",), "_x", "variant"),
    ("config", ("concurrency",), "eight", "concurrency"),
    ("config", ("colour",), 1, "colour"),
    ("run-meta", ("status",), "done", "status"),
    ("run-meta", ("dataset", "sha256"), "nothex", "dataset.sha256"),
    ("item-result", ("status",), "maybe", "status"),
    ("item-result", ("judgment", "label"), "yes", "judgment.label"),
    ("item-result", ("question_type",), "abstention", "question_type"),
    ("item-result", ("error",), {"stage": "reading", "kind": "x", "message": "m", "attempts": 1}, "error.stage"),
    ("completed", ("question_id",), 7, "question_id"),
    ("manifest", ("items", 0, "question_id"), None, "items[0].question_id"),
    ("item", ("haystack_sessions", 1, 0, "role"), "system", "haystack_sessions[1][0].role"),
    ("item", ("answer",), 2.5, "answer"),
]


@pytest.mark.parametrize("name", sorted(VALID))
def test_valid_examples_pass(name):
    schemas.validate(name, copy.deepcopy(VALID[name]), where="example")
    assert schemas.is_valid(name, VALID[name])


def test_every_shipped_schema_of_this_brief_has_an_example():
    assert set(VALID) <= set(schemas.schema_names())


@pytest.mark.parametrize("name,path,value,field", MALFORMED, ids=[f"{m[0]}:{m[3]}" for m in MALFORMED])
def test_malformed_record_is_rejected_with_one_line_naming_where_and_field(name, path, value, field):
    bad = _set(copy.deepcopy(VALID[name]), path, value)
    with pytest.raises(schemas.SchemaError) as info:
        schemas.validate(name, bad, where="runs/r1/file.jsonl:7")
    text = str(info.value)
    assert "\n" not in text
    assert text.startswith("runs/r1/file.jsonl:7: ")
    assert f"field {field}" in text
    assert isinstance(info.value, UserError)


@pytest.mark.parametrize("name", ["config", "run-meta", "item-result", "manifest", "item"])
def test_missing_required_field_is_named(name):
    bad = copy.deepcopy(VALID[name])
    key = "question_id" if name in ("item", "item-result") else "schemaVersion"
    del bad[key]
    with pytest.raises(schemas.SchemaError, match=f"field {key}: required but missing"):
        schemas.validate(name, bad, where="x")


def test_judged_row_needs_a_judgment_object():
    row = judged_row("q1")
    row["judgment"] = None
    with pytest.raises(schemas.SchemaError, match="judgment"):
        schemas.validate("item-result", row, where="x")


def test_error_row_needs_error_details_with_attempts():
    schemas.validate("item-result", error_row("q1"), where="x")
    row = error_row("q1")
    del row["error"]["attempts"]
    with pytest.raises(schemas.SchemaError, match=r"field error\.attempts: required but missing"):
        schemas.validate("item-result", row, where="x")
    row = error_row("q1")
    row["error"] = None
    with pytest.raises(schemas.SchemaError, match="field error"):
        schemas.validate("item-result", row, where="x")


def test_rows_leave_room_for_feature_data():
    row = judged_row("q1")
    row["target"]["debug"] = {"truncated": True, "layers": [1, 2]}
    row["calls"] = [{"role": "reader", "anything": {"nested": 1}}]
    row["retrieval"] = {"retrieved_session_ids": ["a"], "gold_session_ids": ["a"], "k": 5}
    row["error"] = None
    row["new_feature"] = {"x": 1}
    schemas.validate("item-result", row, where="x")
    cfg = default_config()
    cfg["targetOptions"] = {"top_k": 10}
    cfg["loop"] = {"budget": 3}
    cfg["providers"] = {"openai": {"base_url": "http://127.0.0.1:1"}}
    schemas.validate("config", cfg, where="x")
    assert schemas.is_valid("item-result", row) and schemas.is_valid("config", cfg)


def test_item_schema_question_types_equal_records():
    schema = json.loads((schemas.SCHEMA_DIR / "item.schema.json").read_text())
    assert tuple(schema["properties"]["question_type"]["enum"]) == QUESTION_TYPES
    row_schema = json.loads((schemas.SCHEMA_DIR / "item-result.schema.json").read_text())
    assert tuple(row_schema["properties"]["question_type"]["enum"]) == QUESTION_TYPES


def test_every_schema_file_is_a_valid_draft_2020_12_schema():
    from jsonschema import Draft202012Validator

    for path in schemas.SCHEMA_DIR.glob("*.schema.json"):
        schema = json.loads(path.read_text())
        assert schema.get("$schema", "").endswith("2020-12/schema"), path.name
        Draft202012Validator.check_schema(schema)


def test_unknown_schema_major_is_a_clear_error():
    with pytest.raises(schemas.SchemaError, match="newer version of longmemeval-benchmarker"):
        schemas.check_version({"schemaVersion": "2.0.0"}, where="run-meta.json")
    schemas.check_version({"schemaVersion": "1.7.3"}, where="run-meta.json")


@pytest.mark.parametrize("version", ["1.0", "v1.0.0", 1, None])
def test_malformed_schema_version_is_refused(version):
    with pytest.raises(schemas.SchemaError, match="schemaVersion"):
        schemas.check_version({"schemaVersion": version}, where="x")


def test_unknown_schema_name_is_a_user_error():
    with pytest.raises(UserError, match="unknown schema 'nope'"):
        schemas.validate("nope", {}, where="x")


def test_cli_exits_2_on_an_invalid_jsonl_line(tmp_path, capsys):
    from lme.core.errors import run_main

    path = tmp_path / "questions_completed.jsonl"
    path.write_text('{"question_id": "a"}\n{"question_id": 5}\n')
    assert run_main(schemas_cli.main, ["completed", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:2" in err and "field question_id" in err
    path.write_text('{"question_id": "a"}\n')
    assert run_main(schemas_cli.main, ["completed", str(path)]) == 0


def test_spec_documents_every_schema_and_config_field():
    spec = (schemas.SCHEMA_DIR.parent / "SPEC.md").read_text(encoding="utf-8")
    for name in schemas.schema_names():
        assert f"{name}.schema.json" in spec, name
    for key in default_config():
        assert f"`{key}`" in spec, key
    config_schema = json.loads((schemas.SCHEMA_DIR / "config.schema.json").read_text())
    assert set(config_schema["properties"]) == set(default_config())


WEIRD = (None, "", "x", "_abs", -1, 0, 1, 2.0, 1.5, -0.5, True, False, [], {}, ["x"], {"k": 1}, "a" * 70, 1e308)
"""Values a mutated record gets in place of each of its values."""


def _mutations(obj):
    """Records that differ from ``obj`` in one place: a key deleted, a value replaced, a key added."""
    def paths(node, path=()):
        yield path
        if isinstance(node, dict):
            for key, value in node.items():
                yield from paths(value, path + (key,))
        elif isinstance(node, list):
            for i, value in enumerate(node):
                yield from paths(value, path + (i,))

    for path in list(paths(obj)):
        if path:
            parent = copy.deepcopy(obj)
            target = parent
            for key in path[:-1]:
                target = target[key]
            del target[path[-1]]
            yield parent
            for value in WEIRD:
                yield _set(copy.deepcopy(obj), path, value)
        node = obj
        for key in path:
            node = node[key]
        if isinstance(node, dict):
            extra = copy.deepcopy(obj)
            _set(extra, path + ("unexpected_field",), 1) if path else extra.update(unexpected_field=1)
            yield extra


@pytest.mark.parametrize("name", sorted(VALID) + ["item-result:error"])
def test_the_fast_validator_never_accepts_what_jsonschema_refuses(name):
    """schemas.validate trusts fastjsonschema's yes and asks jsonschema about everything else: on every one-place
    mutation of a valid record, a yes must be jsonschema's yes too (and both accept the valid record)."""
    pytest.importorskip("fastjsonschema")
    schema = name.split(":")[0]
    record = error_row("q1") if name == "item-result:error" else VALID[schema]
    assert schemas._fast_yes(schema, record)
    checked = lenient = 0
    for mutated in _mutations(record):
        checked += 1
        if schemas._fast_yes(schema, mutated) and not schemas._validator(schema).is_valid(mutated):
            lenient += 1
    assert checked > 20 and lenient == 0
