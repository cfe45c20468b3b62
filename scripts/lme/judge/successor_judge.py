"""The successor judge a user names (``--successor PROVIDER:MODEL``, config ``successorJudge``) for the day the
official judge is gone, and the reasoning effort of a reasoning-model judge (config ``judgeReasoningEffort``):
parsed and checked once, for runs and for ``judge_shim.py --hyp-file``.
"""

from __future__ import annotations

from typing import Any

from lme.core import config
from lme.core.errors import UserError
from lme.core.facts import OFFICIAL_JUDGE_MODEL, OFFICIAL_JUDGE_PROVIDER, OFFICIAL_JUDGE_ROUTES, OFFLINE, \
    resolve_judge_model
from lme.judge import request_shapes


def reasoning_effort(value: Any) -> str | None:
    """Config ``judgeReasoningEffort``, checked (``judge_shapes.REASONING_EFFORTS``)."""
    if value is None:
        return None
    request_shapes.shape_for("openai", "o3-mini", str(value))  # a bad value is one line here, not an error per item
    return str(value)


def successor_spec(value: str | None, named: tuple[str, ...], judge_provider: str, judge_model: str, *,
                   explicit: bool = True) -> str | None:
    """``provider:model`` of the successor judge (``--successor`` / ``successorJudge``), upstream's aliases
    resolved; refused in one line when it is offline or the official judge itself. A successor stands in for the
    official judge only: with another judge, ``--successor`` (``explicit``) is refused, the config's is ignored."""
    if not value:
        return None
    if not explicit and not (judge_provider in OFFICIAL_JUDGE_ROUTES and judge_model == OFFICIAL_JUDGE_MODEL):
        return None
    flag = "--successor (or successorJudge in the config)"
    provider, model = config.parse_model_arg(str(value), OFFICIAL_JUDGE_PROVIDER, named)
    model = resolve_judge_model(model)
    if provider == OFFLINE:
        raise UserError(f"{flag} {value}: the offline judge cannot stand in for the official one",
                        fix="name a model, e.g. --successor openai:o3-mini")
    if provider in OFFICIAL_JUDGE_ROUTES and model == OFFICIAL_JUDGE_MODEL:
        raise UserError(f"{flag} {value} is the official judge itself",
                        fix="name another model (measure it first: judge_agreement.py --all --candidate provider:model)")
    if not (judge_provider in OFFICIAL_JUDGE_ROUTES and judge_model == OFFICIAL_JUDGE_MODEL):
        raise UserError(f"{flag} {value} with the judge {judge_provider}:{judge_model}: a successor stands in for "
                        f"the official judge only", fix="drop --successor, or judge with openai:gpt-4o")
    return f"{provider}:{model}"
