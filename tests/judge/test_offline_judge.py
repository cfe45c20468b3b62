"""The offline containment judge: normalised containment, abstention phrases, never official."""

from __future__ import annotations

import pytest

from lme.judge.offline_judge import OFFLINE_JUDGE_MODEL, normalize, offline_judge
from lme.core.records import Verdict
from helpers_data import judge_json


def label(qid: str, answer, hypothesis: str) -> bool:
    return offline_judge(qid, "multi-session", "Q?", answer, hypothesis)["label"]


@pytest.mark.parametrize(
    ("answer", "hypothesis", "expected"),
    [
        ("Level 3", "You parked on level 3.", True),
        ("The Great Gatsby", "you were reading great gatsby", True),
        (3, "You went three times.", True),
        ("three", "3 times", True),
        ("twenty-five", "You are 25 now.", True),
        ("$1,200", "It cost 1200 dollars", True),
        ("red", "It is reddish", False),
        ("Level 3", "Level 30", False),
        ("7 days. 8 days (including the last day) is also acceptable.", "It took 7 days", True),
        ("Paris", "I don't know.", False),
    ],
)
def test_containment_after_normalisation(answer, hypothesis, expected):
    assert label("q1", answer, hypothesis) is expected


@pytest.mark.parametrize(
    ("hypothesis", "expected"),
    [
        ("You never mentioned your dog's name.", True),
        ("I don\u2019t know, that wasn't in our chats.", True),
        ("There is no information about that.", True),
        ("Your dog is called Rex.", False),
    ],
)
def test_abstention_items_need_a_not_available_answer(hypothesis, expected):
    assert label("q1_abs", "The user never said the dog's name.", hypothesis) is expected


def test_abstention_is_decided_by_the_id():
    # the gold explanation is contained, but for an _abs item only a refusal to answer counts
    assert label("q1_abs", "Rex", "Rex") is False
    assert label("q1", "Rex", "Rex") is True


def test_verdict_is_offline_never_official_and_explains_itself():
    verdict = offline_judge("q1", "temporal-reasoning", "Q?", "18", "18 days")
    assert Verdict.from_dict(verdict).to_dict() == verdict
    assert verdict["provider"] == "offline" and verdict["model"] == OFFLINE_JUDGE_MODEL
    assert verdict["official"] is False
    assert "'18'" in verdict["raw"] and "found" in verdict["raw"]


def test_normalize_drops_articles_punctuation_and_case():
    assert normalize("The  Eiffel-Tower, in an hour!") == "eiffel tower in hour"


def test_judge_shim_routes_offline_provider_here_without_a_checkout():
    verdict = judge_json("multi-session", "Q?", "blue", "It is blue.", None, provider="offline",
                               question_id="q1")
    assert verdict["provider"] == "offline" and verdict["label"] is True


def test_on_real_items_gold_is_accepted_and_i_dont_know_only_for_abstention(shared_data):
    import json

    items = json.loads((shared_data / "longmemeval_oracle.json").read_text(encoding="utf-8"))
    for item in items:
        qid, answer = item["question_id"], item["answer"]
        idk = offline_judge(qid, item["question_type"], item["question"], answer, "I don't know.")["label"]
        assert idk is ("_abs" in qid), qid
        if "_abs" not in qid:
            assert offline_judge(qid, item["question_type"], item["question"], answer, f"So: {answer}")["label"], qid


def test_the_offline_answerers_own_abstention_is_credited_on_abs_items():
    """The offline target and the offline judge must agree on what an abstention looks like."""
    import importlib.util

    from lme.targets.generation_driver import target_path

    spec = importlib.util.spec_from_file_location("offline_target_for_test", target_path("offline"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    verdict = offline_judge("q1_abs", "multi-session", "Where?", "You never said.", module.NOT_ENOUGH)
    assert verdict["label"] is True
