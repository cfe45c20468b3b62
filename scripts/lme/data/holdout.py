"""The held-out rule for tuning on LongMemEval: which half of the items an item belongs to.

An item is in the DEVELOPMENT half iff the last hex digit of sha256(question_id) is even (0 2 4 6 8 a c e);
the others are the TEST half. Tune (retrieval weights, prompts, rules) on the development half only; report the
test half, never tune on it. The rule needs nothing but the id, so it is the same on every variant and every
copy of the data, whatever the item order.

On the ``_s`` copy (499 items): 208 development and 210 test items among the 418 with retrieval gold.
"""

from __future__ import annotations

import hashlib

DEVELOPMENT = "dev"
TEST = "test"
HALVES = (DEVELOPMENT, TEST)


def is_development(question_id: str) -> bool:
    return hashlib.sha256(question_id.encode("utf-8")).hexdigest()[-1] in "02468ace"


def half_of(question_id: str) -> str:
    """``"dev"`` or ``"test"``."""
    return DEVELOPMENT if is_development(question_id) else TEST
