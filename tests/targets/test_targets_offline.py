"""The offline extractive target: no model, no network."""


from lme.targets import generation_driver as gd
from test_targets_common import GOLD, make_raw_item


class ExplodingLLM:
    def complete(self, request):
        raise AssertionError("the offline target must not call a model")

    def embed(self, provider, model, texts):
        raise AssertionError("the offline target must not embed")


def run(item, **options):
    return gd.generate_hypothesis(item, "offline", "extractive", target="offline", llm=ExplodingLLM(),
                                  options=options)


def test_answer_is_the_best_matching_sentence_of_the_best_user_turn():
    out = run(make_raw_item())
    assert out["hypothesis"] == "I just adopted a kitten and named my cat Luna."
    assert out["retrieved_session_ids"][0] == f"answer_{GOLD}_1"
    assert out["tokensIn"] == 0 and out["calls"] == []


def test_question_matching_nothing_gets_the_not_enough_information_answer():
    out = run(make_raw_item(question="Which volcano erupted on Jupiter's moon?"))
    assert out["hypothesis"] == "The information provided is not enough to answer this question."
    assert out["debug"]["abstained"]


def test_low_coverage_threshold_is_an_option():
    item = make_raw_item(question="What is the name of my cat and my dog and my parrot and my fish?")
    assert "Luna" in run(item, min_coverage=0.1)["hypothesis"]
    assert "not enough" in run(item, min_coverage=0.9)["hypothesis"]


def test_long_sentences_are_trimmed_at_a_word_boundary():
    item = make_raw_item()
    item["haystack_sessions"][1][0]["content"] = "My cat is named Luna " + "and she likes naps " * 40
    out = run(item, max_chars=60)
    assert out["hypothesis"].endswith(" ...") and len(out["hypothesis"]) <= 64


def test_every_session_appears_once_in_the_ranking():
    out = run(make_raw_item())
    assert sorted(out["retrieved_session_ids"]) == sorted(make_raw_item()["haystack_session_ids"])


def test_real_oracle_items_get_answers_without_any_model(shared_data):
    from lme.data import dataset

    seen = 0
    for raw in dataset.iter_items(shared_data / "longmemeval_oracle.json"):
        out = run(raw)
        assert out["hypothesis"].strip()
        seen += 1
        if seen == 20:
            break
    assert seen == 20
