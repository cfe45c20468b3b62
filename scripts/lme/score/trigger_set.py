"""A round's fair re-test set: the cluster's failing items plus a seeded control sample of currently-correct items.

Re-running only failing items regresses to the mean: on a system whose labels flip at random, some of them come
back right whatever the fix did, and a fix that breaks passing items is never seen. So the trigger set also holds
a control sample of items judged correct now, drawn from the failing items' own question types (for each type,
at least as many as it has failing items; ``ratio`` 1.0 = as many), ordered by sha256(seed:question id) so the
same round draws the same sample.

The file (``.longmemeval-benchmarks/trigger_set.txt``) stays one id per line, so ``drop_qids.py --from-file``
reads it as before; its ``# failing`` and ``# control`` comment lines say which part an id belongs to. A file
without them (written by hand) is all ``failing``. ``drop_qids.py`` records both parts in
``.longmemeval-benchmarks/retest.json``; ``decide.py`` reads that record to count fixes among failing items and
regressions among control items.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from lme.core import bounded_json
from lme.core import fileio
from lme.core.errors import UserError
from lme.core.facts import RETEST_FILE, ROUND_FILE, SCHEMA_VERSIONS
from lme.core.run_records import ResultRow

FAILING_HEADER = "# failing"
CONTROL_HEADER = "# control"


@dataclass(frozen=True)
class TriggerSet:
    failing: tuple[str, ...]
    control: tuple[str, ...] = ()
    seed: str = ""
    ratio: float = 1.0
    source: str = ""
    """What the failing part is (e.g. ``cluster 1 (temporal-reasoning / temporal_arithmetic)``)."""
    shortfall: Mapping[str, int] = field(default_factory=dict)
    """Per type, how many control items were wanted but no correct item of that type was left."""

    @property
    def ids(self) -> list[str]:
        return list(dict.fromkeys([*self.failing, *self.control]))

    def to_dict(self) -> dict[str, Any]:
        return {"failing": list(self.failing), "control": list(self.control), "seed": self.seed,
                "ratio": self.ratio, "source": self.source, "shortfall": dict(self.shortfall)}


def round_seed(project: Path) -> str:
    """``v<round>`` from the project's round counter (``v0`` before the loop's first round)."""
    try:
        return f"v{int(fileio.read_text(Path(project) / ROUND_FILE, max_bytes=64).strip())}"
    except (OSError, ValueError, UserError):
        return "v0"


def _order(seed: str, qid: str) -> str:
    return hashlib.sha256(f"{seed}:{qid}".encode("utf-8")).hexdigest()


def control_sample(rows: Mapping[str, ResultRow], types: Mapping[str, str], failing: Sequence[str], *,
                   ratio: float = 1.0, seed: str = "v0",
                   exclude: Sequence[str] = ()) -> tuple[list[str], dict[str, int]]:
    """Currently-correct ids of the failing items' types: ``ceil(failing of type * ratio)`` per type, seeded.

    Returns (control ids, shortfall per type). ``exclude`` (e.g. gold reported wrong) is never drawn.
    """
    if not ratio >= 1.0:
        raise UserError(f"--control-ratio {ratio} is below 1",
                        fix="a fair re-test needs at least as many control items as failing ones: 1.0 or more")
    wanted: dict[str, int] = {}
    for qid in failing:
        qtype = types.get(qid) or (rows[qid].question_type if qid in rows else "")
        wanted[qtype] = wanted.get(qtype, 0) + 1
    skip = set(failing) | set(exclude)
    control: list[str] = []
    shortfall: dict[str, int] = {}
    for qtype, count in wanted.items():
        need = math.ceil(count * ratio)
        pool = sorted((q for q, t in types.items() if t == qtype and q not in skip and q in rows and rows[q].correct),
                      key=lambda q: _order(seed, q))
        control += pool[:need]
        if len(pool) < need:
            shortfall[qtype] = need - len(pool)
    return control, shortfall


def render(trigger: TriggerSet) -> str:
    """The trigger-set file: both parts under their comment headers, one id per line."""
    lines = [f"# trigger set: {trigger.source or 'hand-picked'}; {len(trigger.failing)} failing + "
             f"{len(trigger.control)} control (seed {trigger.seed or '-'}, control ratio {trigger.ratio:g})"]
    for qtype, short in sorted(trigger.shortfall.items()):
        lines.append(f"# control short by {short} for {qtype}: no more correct items of that type")
    lines.append(f"{FAILING_HEADER} ({trigger.source or 'items the fix should change'})")
    lines += list(trigger.failing)
    lines.append(f"{CONTROL_HEADER} (currently correct, same question types: a fix must not break them)")
    lines += list(trigger.control)
    return "\n".join(lines) + "\n"


def write(path: Path, trigger: TriggerSet) -> None:
    """The trigger-set file, atomically (whole or unchanged)."""
    path = Path(path)
    fileio.make_dirs(path.parent)
    fileio.write_atomic_text(path, render(trigger))


def parse(text: str) -> TriggerSet:
    """Both parts of a trigger-set file; ids before any header (a hand-written list) are ``failing``."""
    failing: list[str] = []
    control: list[str] = []
    part = failing
    for raw in text.splitlines():
        stripped = raw.strip()
        if stripped.startswith(CONTROL_HEADER):
            part = control
            continue
        if stripped.startswith(FAILING_HEADER):
            part = failing
            continue
        qid = stripped.split("#", 1)[0].strip()
        if qid:
            part.append(qid)
    control = [q for q in dict.fromkeys(control) if q not in failing]
    return TriggerSet(tuple(dict.fromkeys(failing)), tuple(control))


def record_retest(project: Path, trigger: TriggerSet, *, run_id: str, round_no: int | None) -> Path:
    """``retest.json``: which ids a round re-tests, in which part (decide.py reads it)."""
    path = Path(project) / RETEST_FILE
    fileio.write_atomic_json(path, {"schemaVersion": SCHEMA_VERSIONS["loop-retest"], "round": round_no,
                                    "run_id": run_id, **trigger.to_dict()})
    return path


def read_retest(project: Path, round_no: int) -> dict[str, Any] | None:
    """The re-test record of ``round_no`` (None: none recorded, or it belongs to another round)."""
    record = fileio.peek_json(Path(project) / RETEST_FILE, limits=bounded_json.STATE)
    return record if isinstance(record, dict) and record.get("round") == round_no else None
