"""Two runs compared, as a record: what ``run_comparison.compare`` returns and the Markdown, the diff page, the
terminal line and the loop's decision read. ``to_dict`` is ``compare_runs.py --json`` (the comparison schema) exactly,
its keys in their order."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from lme.core import codec
from lme.core.codec import Record
from lme.core.run_records import FileChanges, JudgeIdentity
from lme.score.scorecard_record import VersionRows, short_code


@dataclass(frozen=True)
class RunSide(Record):
    """One of the two runs: where it is, its id and status, judge, dataset and size."""

    path: str
    run_id: str
    status: str | None
    judge: JudgeIdentity
    dataset_sha256: str | None
    dataset: str
    """What the dataset file is, as its scorecard says (``dataset_label.recognition_line``)."""
    n_total: int


@dataclass(frozen=True)
class TypeChange(Record):
    """One question type's flips and unchanged items."""

    n: int
    fixes: int
    regressions: int
    net: int
    both_right: int
    both_wrong: int


@dataclass(frozen=True)
class ChangedItem(Record):
    """A question whose strict label flipped (``after`` True: a fix)."""

    question_id: str
    question_type: str
    before: bool
    after: bool
    flaky: bool
    """Its before or after label is unstable (repeated verdicts disagree, or the registry marks it flaky)."""
    before_status: str | None
    """``judged``, ``error`` or ``not_run``."""
    after_status: str | None
    hypothesis_before: str | None
    hypothesis_after: str | None


@dataclass(frozen=True)
class FlakyFlips(Record):
    """The flips on unstable labels (also counted in fixes and regressions)."""

    fixes: int
    regressions: int
    net: int
    ids: tuple[str, ...]


@dataclass(frozen=True)
class LabelAgreement(Record):
    """A judge comparison's agreement: how often judge B gives judge A's label over the items both judged."""

    n: int
    agree: int
    agreement: float | None
    kappa: float | None
    a_yes_b_no: int
    a_no_b_yes: int


@dataclass(frozen=True)
class NotCompared(Record):
    """The items of either run's item set that are not in the comparison's figures, named by why: judged in one
    run only (the other never ran it, or it is not in the other's item set), an error row in one run while the
    other judged it, or judged in neither. Fixes, regressions, McNemar and the per-type changes count only the
    items both runs judged."""

    judged_only_in_a: tuple[str, ...] = ()
    judged_only_in_b: tuple[str, ...] = ()
    error_in_a: tuple[str, ...] = ()
    """An error row in run A; run B judged it."""
    error_in_b: tuple[str, ...] = ()
    """An error row in run B; run A judged it."""
    judged_in_neither: tuple[str, ...] = ()

    @property
    def n(self) -> int:
        return sum(len(ids) for _, ids in self.by_why())

    def by_why(self, before: str = "before", after: str = "after") -> list[tuple[str, tuple[str, ...]]]:
        """``(why, ids)`` per reason that has items: ``judged only in before``, ``an error in after``, ..."""
        whys = (f"judged only in {before}", f"judged only in {after}", f"an error in {before}", f"an error in {after}",
                "judged in neither")
        ids = (self.judged_only_in_a, self.judged_only_in_b, self.error_in_a, self.error_in_b, self.judged_in_neither)
        return [(why, named) for why, named in zip(whys, ids) if named]

    def describe(self, before: str = "before", after: str = "after") -> str:
        """``20 judged only in before, 1 an error in after`` (empty when every item was compared)."""
        return ", ".join(f"{len(ids)} {why}" for why, ids in self.by_why(before, after))

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, **codec.to_dict(self)}


@dataclass(frozen=True)
class CodeChange(Record):
    """The comparison's ``code``: the versions behind each side's compared rows, whether they are the same, and
    the files that differ between the two sides."""

    same: bool | None
    """True: every compared row of both sides came from one and the same version; False: they differ; None: a
    side has rows whose code was not recorded (never called the same)."""
    before: tuple[VersionRows, ...]
    after: tuple[VersionRows, ...]
    files: FileChanges
    """Paths whose content differs between the sides' versions (changed), only after's (added), only before's
    (removed)."""

    def line(self) -> str | None:
        """``code: 1a2b3c4d -> 5e6f7a8b (changed memsys.py)``; None when the code is the same."""
        if self.same:
            return None

        def side(versions: tuple[VersionRows, ...]) -> str:
            if not versions:
                return "not recorded"
            if len(versions) == 1:
                return short_code(versions[0].id)
            return ", ".join(f"{short_code(v.id)} ({v.rows} rows)" for v in versions)

        what = self.files.describe()
        known = "" if self.same is not None else " (a run's rows do not all record their code)"
        return f"code: {side(self.before)} -> {side(self.after)}" + (f" ({what})" if what else "") + known


@dataclass(frozen=True)
class Comparison(Record):
    """Run A (before) against run B (after), question by question, on the items both judged (``n_compared``); the
    others are counted apart, by why (``not_compared``)."""

    schema_version: str = codec.field(key="schemaVersion")
    kind: str
    """``runs``, or ``judge``: the same hypotheses judged by two judges."""
    run_a: RunSide
    run_b: RunSide
    forced: bool
    mismatches: tuple[str, ...]
    differences: tuple[str, ...]
    """What differs between how the runs were made (``run_differences``)."""
    n_compared: int
    only_in_a: tuple[str, ...]
    only_in_b: tuple[str, ...]
    accuracy_a: float | None
    accuracy_b: float | None
    fixes: int
    regressions: int
    net: int
    both_right: int
    both_wrong: int
    p_value: float
    """Exact two-sided McNemar p-value."""
    flaky_flips: FlakyFlips
    net_excluding_flaky: int
    per_type: Mapping[str, TypeChange]
    changed: tuple[ChangedItem, ...]
    judge_agreement: LabelAgreement | None = codec.field(default=None, omit=None)
    not_compared: NotCompared = NotCompared()
    """The items outside the figures, by why (the figures count only items both runs judged)."""
    code: CodeChange | None = None
    """What differs between the code behind each side's compared rows; None when neither run recorded any."""

    @property
    def is_judge_comparison(self) -> bool:
        return self.kind == "judge"
