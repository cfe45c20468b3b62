"""The offline judge: no network, no key, never official. A smoke-test judge, not a score to publish.

Rule, in order:

- Abstention items (``'_abs'`` in the id): correct iff the hypothesis says the information is not available, i.e.
  it contains one of ``ABSTENTION_PHRASES`` after normalisation.
- Other items: correct iff the normalised gold answer occurs in the normalised hypothesis as a whole-word span.
  When the gold answer has a qualifying tail (``"7 days. 8 days (counting the last day) is also acceptable"``),
  its head before the first ``.``, ``;`` or ``(`` also counts. Preference rubrics rarely match by containment,
  so offline preference scores are a lower bound.

Normalisation: lower case, curly quotes straightened, number words (zero..ninety-nine) as digits, punctuation
dropped, articles (a, an, the) dropped, whitespace collapsed. ``raw`` says which rule decided and on what text.
"""

from __future__ import annotations

import re
from typing import Any

from lme.core.facts import OFFLINE, OFFLINE_JUDGE_MODEL, is_abstention
from lme.core.records import Verdict

ABSTENTION_PHRASES = (
    "not mentioned", "never mentioned", "didn't mention", "did not mention", "doesn't mention", "does not mention",
    "no mention", "no information", "not enough information", "insufficient information", "no record",
    "not available", "not provided", "not specified", "not stated", "don't know", "do not know",
    "don't have", "do not have", "cannot answer", "can't answer", "unable to answer", "unable to determine",
    "cannot determine", "can't determine", "cannot be determined", "unanswerable", "not possible to",
    "no details", "not in our conversation", "haven't mentioned", "have not mentioned", "not sure",
    "not enough to answer",
)
_UNITS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
          "seventeen eighteen nineteen").split()
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
         "ninety": 90}
_NUMBER_WORDS = {word: n for n, word in enumerate(_UNITS)}
_ARTICLES = {"a", "an", "the"}


def _words_to_digits(words: list[str]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        if word in _TENS:
            value = _TENS[word]
            if i + 1 < len(words) and words[i + 1] in _NUMBER_WORDS and 0 < _NUMBER_WORDS[words[i + 1]] < 10:
                value += _NUMBER_WORDS[words[i + 1]]
                i += 1
            out.append(str(value))
        elif word in _NUMBER_WORDS:
            out.append(str(_NUMBER_WORDS[word]))
        else:
            out.append(word)
        i += 1
    return out


def normalize(text: Any) -> str:
    lowered = str(text).lower().replace("\u2019", "'").replace("\u2018", "'")
    lowered = re.sub(r"(?<=\d),(?=\d{3})", "", lowered)  # 1,000 -> 1000
    words = re.sub(r"[^\w\s]", " ", lowered).split()
    return " ".join(w for w in _words_to_digits(words) if w not in _ARTICLES)


def _contains(haystack: str, needle: str) -> bool:
    return bool(needle) and f" {needle} " in f" {haystack} "


def _gold_candidates(answer: Any) -> list[str]:
    full = str(answer)
    head = re.split(r"[.;(]", full, maxsplit=1)[0]
    candidates = [normalize(full)]
    if normalize(head) and normalize(head) != candidates[0]:
        candidates.append(normalize(head))
    return [c for c in candidates if c]


def decide(question_id: str, answer: Any, hypothesis: str) -> tuple[bool, str]:
    """(label, explanation) by the module's rule."""
    if is_abstention(question_id):
        spoken = " " + str(hypothesis).lower().replace("\u2019", "'") + " "
        hit = next((p for p in ABSTENTION_PHRASES if p in spoken), None)
        if hit:
            return True, f"offline abstention: the hypothesis says it cannot answer ({hit!r})"
        return False, "offline abstention: no 'not available' phrase in the hypothesis"
    hyp = normalize(hypothesis)
    for candidate in _gold_candidates(answer):
        if _contains(hyp, candidate):
            return True, f"offline containment: gold {candidate!r} found in the hypothesis"
    shown = _gold_candidates(answer)
    return False, f"offline containment: gold {shown[0] if shown else ''!r} not found in the hypothesis"


def offline_verdict(question_id: str, question_type: str, question: str, answer: Any, hypothesis: str) -> Verdict:
    """A ``Verdict`` from provider ``offline`` (never official); ``raw`` explains the decision."""
    label, why = decide(question_id, answer, hypothesis)
    return Verdict(
        label=label,
        raw=why,
        provider=OFFLINE,
        model=OFFLINE_JUDGE_MODEL,
        requested_model=OFFLINE_JUDGE_MODEL,
        official=False,
    )


def offline_judge(question_id: str, question_type: str, question: str, answer: Any, hypothesis: str) -> dict[str, Any]:
    return offline_verdict(question_id, question_type, question, answer, hypothesis).to_dict()
