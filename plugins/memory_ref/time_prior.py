"""Time-aware ranking: a bonus for sessions dated inside the windows the question names.

"What did I do two weeks ago?" resolves (``temporal``) to a window around the question date minus 14 days. A
session dated in that window, widened by ``BEFORE_DAYS`` before it and ``AFTER_DAYS`` after it (people mention an
event a few days after it happened), gets the bonus. A window that would cover more than ``MAX_COVER`` of the
sessions says nothing about which one is meant ("in the past few months") and gives no bonus.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Sequence

from . import temporal

BEFORE_DAYS = 3
AFTER_DAYS = 7
MAX_COVER = 0.5


def window_bonus(session_dates: Sequence[str], windows: Sequence[temporal.Resolved], *,
                 before_days: int = BEFORE_DAYS, after_days: int = AFTER_DAYS, max_cover: float = MAX_COVER
                 ) -> list[float]:
    """1.0 for each session inside a telling window, else 0.0 (all 0.0 when no window tells anything)."""
    days = [temporal.parse_date(d) for d in session_dates]
    bonus = [0.0] * len(days)
    for window in windows:
        start = window.start - timedelta(days=before_days)
        end = window.end + timedelta(days=after_days)
        inside = [1.0 if day is not None and start <= day <= end else 0.0 for day in days]
        if 0 < sum(inside) <= max_cover * len(days):
            bonus = [max(a, b) for a, b in zip(bonus, inside)]
    return bonus
