"""Small text helpers shared by the symbolic layers: normalisation, crude stemming, overlap and similarity."""

from __future__ import annotations

import re
from difflib import SequenceMatcher

STOPWORDS = frozenset(
    """a an the and or but of to in on at for with from by about as into over after before during between
    i me my mine we our you your he she it its they them their this that these those is am are was were be been
    being have has had do does did done will would can could should may might must shall just so than then
    there here what which who whom whose when where why how many much any some all each every no not very
    up down out off again further once also too only own same such both few more most other new""".split()
)


def normalise(text: str) -> str:
    """Lower case, punctuation to spaces, single spaces."""
    return " ".join(re.sub(r"[^a-z0-9$%.]+", " ", text.lower()).replace(". ", " ").split()).strip(". ")


def stem(word: str) -> str:
    """A crude suffix stripper, enough to match "attended"/"attend", "bikes"/"bike" and "boxes"/"box"."""
    if len(word) > 5 and word.endswith("ing"):
        word = word[:-3]
    elif len(word) > 4 and word.endswith("ed"):
        word = word[:-2]
    elif len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    elif len(word) > 4 and word.endswith(("sses", "xes", "ches", "shes", "zes")):
        return word[:-2]
    elif len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word[:-1] if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "ls" else word


def content_tokens(text: str) -> list[str]:
    """Stemmed words of ``text`` without stopwords, in order."""
    return [stem(w) for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOPWORDS]


def coverage(needle: str, haystack: str) -> float:
    """Share of ``needle``'s content tokens found in ``haystack`` (0 when the needle has none)."""
    want = set(content_tokens(needle))
    if not want:
        return 0.0
    return len(want & set(content_tokens(haystack))) / len(want)


NEAR_IDENTICAL_RATIO = 0.95


def similarity(a: str, b: str) -> float:
    """Jaccard of stemmed content words, or 1.0 for texts whose characters are near identical (typos), in [0, 1].

    The character ratio alone is not used below ``NEAR_IDENTICAL_RATIO``: "bought a road bike" and "bought a
    mountain bike" share most characters but are different items.
    """
    na, nb = normalise(a), normalise(b)
    if not na or not nb:
        return 0.0
    if na == nb or SequenceMatcher(None, na, nb).ratio() >= NEAR_IDENTICAL_RATIO:
        return 1.0
    ta, tb = set(content_tokens(na)), set(content_tokens(nb))
    return len(ta & tb) / len(ta | tb) if ta | tb else 0.0
