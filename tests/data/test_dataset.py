"""dataset: streaming plain/.xz/.gz files with one-pass hashing, and a clear UserError for each kind of bad file."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from lme.data import dataset
from lme.cli import dataset as dataset_cli
from lme.core.errors import UserError, run_main
from helpers_data import make_item, make_items, write_dataset
from lme.core.records import Question


@pytest.mark.parametrize("compression,name", [(None, "d.json"), ("xz", "d.json.xz"), ("gz", "d.json.gz")])
def test_streams_plain_xz_and_gz_with_hash_of_decompressed_bytes(tmp_path, compression, name):
    items = make_items(5)
    path = write_dataset(tmp_path / name, items, compression=compression)
    assert list(dataset.iter_items(path)) == items
    info = dataset.scan(path)
    assert info.items == 5
    assert info.sha256 == hashlib.sha256(json.dumps(items).encode()).hexdigest()
    assert info.questions == tuple((i["question_id"], i["question_type"]) for i in items)


def test_compression_is_detected_by_magic_bytes_not_suffix(tmp_path):
    items = make_items(2)
    path = write_dataset(tmp_path / "misnamed.json", items, compression="xz")
    assert list(dataset.iter_items(path)) == items


def test_load_questions_limit_and_ids_keep_dataset_order_and_hash_whole_file(tmp_path):
    items = make_items(6)
    path = write_dataset(tmp_path / "d.json", items)
    qs, info = dataset.load_questions(path, ids=["q004", "q001"])
    assert [q.question_id for q in qs] == ["q001", "q004"]
    assert all(isinstance(q, Question) for q in qs)
    assert info.items == 6 and info.sha256 == dataset.scan(path).sha256
    qs, _ = dataset.load_questions(path, limit=2)
    assert [q.question_id for q in qs] == ["q000", "q001"]


def test_unknown_requested_id_is_named(tmp_path):
    path = write_dataset(tmp_path / "d.json", make_items(2))
    with pytest.raises(UserError, match="not in the dataset: nope"):
        dataset.load_questions(path, ids=["nope"])


def test_integer_answer_stays_an_integer(tmp_path):
    path = write_dataset(tmp_path / "d.json", [make_item("q1", answer=3)])
    (q,), _ = dataset.load_questions(path)
    assert q.answer == 3 and isinstance(q.answer, int)


@pytest.mark.parametrize("compression,name", [(None, "d.json"), ("xz", "d.json.xz"), ("gz", "d.json.gz")])
def test_truncated_file_names_file_item_and_fix(tmp_path, compression, name):
    items = make_items(200)
    full = write_dataset(tmp_path / ("full-" + name), items, compression=compression).read_bytes()
    path = tmp_path / name
    path.write_bytes(full[: len(full) * 2 // 3])
    with pytest.raises(UserError) as info:
        list(dataset.iter_items(path))
    text = str(info.value)
    assert str(path) in text and "after item" in text and "re-download" in text and "\n" not in text


def test_invalid_json_names_byte_offset(tmp_path):
    path = tmp_path / "d.json"
    path.write_text('[{"question_id": "a", oops}]')
    with pytest.raises(UserError, match=r"before the first item \(near byte \d+"):
        list(dataset.iter_items(path))


def test_top_level_object_is_refused(tmp_path):
    path = tmp_path / "d.json"
    path.write_text(json.dumps({"items": make_items(1)}))
    with pytest.raises(UserError, match="expected a JSON array"):
        list(dataset.iter_items(path))


@pytest.mark.parametrize("top", ['"a string"', "3", "null"])
def test_a_top_level_scalar_is_refused_in_one_line(tmp_path, top):
    path = tmp_path / "d.json"
    path.write_text(top)
    with pytest.raises(UserError, match="expected a JSON array"):
        list(dataset.iter_items(path))


def test_item_missing_a_field_names_index_id_and_field(tmp_path):
    items = make_items(3)
    del items[1]["question_date"]
    path = write_dataset(tmp_path / "d.json", items)
    with pytest.raises(UserError) as info:
        list(dataset.iter_items(path))
    text = str(info.value)
    assert "item 1 (question_id q001)" in text and "field question_date: required but missing" in text


def test_bad_turn_role_names_the_json_path(tmp_path):
    items = make_items(2)
    items[0]["haystack_sessions"][1][0]["role"] = "system"
    path = write_dataset(tmp_path / "d.json", items)
    with pytest.raises(UserError, match=r"item 0 \(question_id q000\).*haystack_sessions\[1\]\[0\]\.role"):
        list(dataset.iter_items(path))


def test_unparallel_haystack_lists_are_refused(tmp_path):
    items = make_items(1)
    items[0]["haystack_dates"].pop()
    path = write_dataset(tmp_path / "d.json", items)
    with pytest.raises(UserError, match="parallel lists"):
        list(dataset.iter_items(path))


def test_duplicate_question_id_names_both_positions(tmp_path):
    items = make_items(3)
    items[2]["question_id"] = "q000"
    path = write_dataset(tmp_path / "d.json", items)
    with pytest.raises(UserError, match=r"item 2: duplicate question_id q000 \(first seen at item 0\)"):
        list(dataset.iter_items(path))


def test_missing_file_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="not found"):
        dataset.scan(tmp_path / "absent.json")


@pytest.mark.parametrize(
    "name,expected",
    [("s", "_s"), ("_s", "_s"), ("longmemeval_s", "_s"), ("LongMemEval_S_cleaned.json", "_s"), ("m", "_m"),
     ("oracle", "_oracle"), ("_oracle", "_oracle"), ("longmemeval_m", "_m")],
)
def test_resolve_variant_accepts_common_spellings(name, expected):
    assert dataset.resolve_variant(name) == expected


def test_wrong_variant_lists_the_valid_names():
    with pytest.raises(UserError, match=r"unknown LongMemEval variant 'xl'.*_s.*_m.*_oracle"):
        dataset.resolve_variant("xl")


def test_known_official_file_lookup():
    sha = "d6f21ea9d60a0d56f34a05b609c79c88a451d2ae03597821ea3d5a9678c3a442"
    assert dataset.is_known_official(sha) == "longmemeval_s_cleaned.json"
    assert dataset.is_known_official("0" * 64) is None


def test_variant_is_guessed_from_name_then_haystack_size(tmp_path):
    assert dataset.scan(write_dataset(tmp_path / "longmemeval_oracle.json", make_items(1))).variant == "_oracle"
    assert dataset.scan(write_dataset(tmp_path / "mystery.json", make_items(1))).variant == "_oracle"
    big = [make_item("q1", sessions=40)]
    assert dataset.scan(write_dataset(tmp_path / "other.json", big)).variant == "_s"


def test_cli_prints_info_and_exits_2_on_a_bad_file(tmp_path, capsys):
    path = write_dataset(tmp_path / "d.json.gz", make_items(3), compression="gz")
    assert run_main(dataset_cli.main, [str(path)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["items"] == 3 and out["selected"] == 3
    bad = tmp_path / "bad.json"
    bad.write_text("[")
    assert run_main(dataset_cli.main, [str(bad)]) == 2
    assert str(bad) in capsys.readouterr().err


def test_real_oracle_file_streams(shared_data):
    info = dataset.scan(shared_data / "longmemeval_oracle.json")
    assert info.items == 500 and info.variant == "_oracle"
    assert sum(1 for qid, _ in info.questions if "_abs" in qid) == 30


def _mutations():
    def drop(key):
        return lambda i: i.pop(key)

    def setter(fn):
        return fn

    return {
        "missing answer": drop("answer"),
        "float answer": setter(lambda i: i.update(answer=1.5)),
        "bool answer": setter(lambda i: i.update(answer=True)),
        "unknown type": setter(lambda i: i.update(question_type="abstention")),
        "empty id": setter(lambda i: i.update(question_id="")),
        "session not a list": setter(lambda i: i["haystack_sessions"].__setitem__(0, "text")),
        "turn without content": setter(lambda i: i["haystack_sessions"][0][0].pop("content")),
        "has_answer not bool": setter(lambda i: i["haystack_sessions"][0][0].update(has_answer="yes")),
        "date not a string": setter(lambda i: i["haystack_dates"].__setitem__(0, 20230510)),
        "ids not a list": setter(lambda i: i.update(answer_session_ids="answer_x")),
    }


@pytest.mark.parametrize("name", sorted(_mutations()))
def test_fast_item_check_never_accepts_what_the_schema_rejects(name):
    from lme.core import schemas

    item = make_item("q1")
    assert dataset._fast_item_ok(item) and schemas.is_valid("item", item)
    _mutations()[name](item)
    assert not schemas.is_valid("item", item)
    assert not dataset._fast_item_ok(item)


def test_unopenable_file_is_a_user_error(tmp_path, monkeypatch):
    path = write_dataset(tmp_path / "d.json", make_items(1))

    def refuse(_):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(dataset, "_compression", refuse)
    with pytest.raises(UserError, match=rf"cannot open dataset file {path} \(Permission denied\)"):
        list(dataset.iter_items(path))


@pytest.mark.parametrize("name, expected", [
    ("longmemeval_sample.json", None),
    ("longmemeval_s.json", "_s"),
    ("longmemeval_s_cleaned.499of500.json.xz", "_s"),
    ("longmemeval_m_cleaned.json", "_m"),
    ("longmemeval_oracle.json", "_oracle"),
])
def test_the_variant_guessed_from_a_file_name_needs_the_whole_marker(name, expected):
    assert dataset.guess_variant(Path(name)) == expected
