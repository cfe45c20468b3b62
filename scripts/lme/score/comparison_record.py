"""Two runs compared, as a record: what ``run_comparison.compare`` returns and the Markdown, the diff page, the
terminal line and the loop's decision read. ``to_dict`` is ``compare_runs.py --json`` (the comparison schema) exactly,
its keys in their order."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from lme.core.run_records import FileChanges, JudgeIdentity
from lme.score.scorecard_record import VersionRows, short_code

Json = Mapping[str, Any]


@dataclass(frozen=True)
class RunSide:
    """One of the two runs: where it is, its id and status, judge, dataset and size."""

    path: str
    run_id: str
    status: str | None
    judge: JudgeIdentity
    dataset_sha256: str | None
    dataset: str
    """What the dataset file is, as its scorecard says (``dataset_label.recognition_line``)."""
    n_total: int

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "run_id": self.run_id, "status": self.status, "judge": self.judge.to_dict(),
                "dataset_sha256": self.dataset_sha256, "dataset": self.dataset, "n_total": self.n_total}

    @classmethod
    def from_dict(cls, d: Json) -> "RunSide":
        return cls(d["path"], d["run_id"], d.get("status"), JudgeIdentity.from_dict(d["judge"]), d.get("dataset_sha256"),
                   str(d.get("dataset") or ""), d["n_total"])


@dataclass(frozen=True)
class TypeChange:
    """One question type's flips and unchanged items."""

    n: int
    fixes: int
    regressions: int
    net: int
    both_right: int
    both_wrong: int

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "fixes": self.fixes, "regressions": self.regressions, "net": self.net,
                "both_right": self.both_right, "both_wrong": self.both_wrong}

    @classmethod
    def from_dict(cls, d: Json) -> "TypeChange":
        return cls(d["n"], d["fixes"], d["regressions"], d["net"], d["both_right"], d["both_wrong"])


@dataclass(frozen=True)
class ChangedItem:
    """A question whose strict label flipped (``after`` True: a fix)."""

    question_id: str
    question_type: str
    before: bool
    after: bool
    flaky: bool | None
    """Its before or after label is unstable (repeated verdicts disagree, or the registry marks it flaky); None in a
    comparison made before flips were marked."""
    before_status: str | None
    """``judged``, ``error`` or ``not_run``."""
    after_status: str | None
    hypothesis_before: str | None
    hypothesis_after: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"question_id": self.question_id, "question_type": self.question_type, "before": self.before,
                "after": self.after, "flaky": self.flaky, "before_status": self.before_status,
                "after_status": self.after_status, "hypothesis_before": self.hypothesis_before,
                "hypothesis_after": self.hypothesis_after}

    @classmethod
    def from_dict(cls, d: Json) -> "ChangedItem":
        return cls(d["question_id"], d["question_type"], d["before"], d["after"], d.get("flaky"),
                   d.get("before_status"), d.get("after_status"), d.get("hypothesis_before"),
                   d.get("hypothesis_after"))


@dataclass(frozen=True)
class FlakyFlips:
    """The flips on unstable labels (also counted in fixes and regressions)."""

    fixes: int
    regressions: int
    net: int
    ids: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"fixes": self.fixes, "regressions": self.regressions, "net": self.net, "ids": list(self.ids)}

    @classmethod
    def from_dict(cls, d: Json) -> "FlakyFlips":
        return cls(d["fixes"], d["regressions"], d["net"], tuple(d.get("ids") or ()))


@dataclass(frozen=True)
class LabelAgreement:
    """A judge comparison's agreement: how often judge B gives judge A's label over the items both judged."""

    n: int
    agree: int
    agreement: float | None
    kappa: float | None
    a_yes_b_no: int
    a_no_b_yes: int

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "agree": self.agree, "agreement": self.agreement, "kappa": self.kappa,
                "a_yes_b_no": self.a_yes_b_no, "a_no_b_yes": self.a_no_b_yes}

    @classmethod
    def from_dict(cls, d: Json) -> "LabelAgreement":
        return cls(d["n"], d["agree"], d["agreement"], d["kappa"], d["a_yes_b_no"], d["a_no_b_yes"])


@dataclass(frozen=True)
class NotCompared:
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

    _KEYS = ("judged_only_in_a", "judged_only_in_b", "error_in_a", "error_in_b", "judged_in_neither")

    @property
    def n(self) -> int:
        return sum(len(getattr(self, k)) for k in self._KEYS)

    def describe(self, before: str = "before", after: str = "after") -> str:
        """``20 judged only in before, 1 an error in after`` (empty when every item was compared)."""
        words = {"judged_only_in_a": f"judged only in {before}", "judged_only_in_b": f"judged only in {after}",
                 "error_in_a": f"an error in {before}", "error_in_b": f"an error in {after}",
                 "judged_in_neither": "judged in neither"}
        return ", ".join(f"{len(getattr(self, k))} {words[k]}" for k in self._KEYS if getattr(self, k))

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, **{k: list(getattr(self, k)) for k in self._KEYS}}

    @classmethod
    def from_dict(cls, d: Json) -> "NotCompared":
        return cls(*(tuple(str(q) for q in d.get(k) or ()) for k in cls._KEYS))


@dataclass(frozen=True)
class CodeChange:
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

    def to_dict(self) -> dict[str, Any]:
        return {"same": self.same, "before": [v.to_dict() for v in self.before],
                "after": [v.to_dict() for v in self.after], "files": self.files.to_dict()}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "CodeChange":
        return cls(same=d.get("same") if isinstance(d.get("same"), bool) else None,
                   before=tuple(VersionRows.from_dict(v) for v in d.get("before") or ()),
                   after=tuple(VersionRows.from_dict(v) for v in d.get("after") or ()),
                   files=FileChanges.from_dict(d.get("files") or {}))


@dataclass(frozen=True)
class Comparison:
    """Run A (before) against run B (after), question by question, on the items both judged (``n_compared``); the
    others are counted apart, by why (``not_compared``)."""

    schema_version: str
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
    judge_agreement: LabelAgreement | None = None
    not_compared: NotCompared = NotCompared()
    """The items outside the figures, by why (the figures count only items both runs judged)."""
    code: CodeChange | None = None
    """What differs between the code behind each side's compared rows; None when neither run recorded any."""

    @property
    def is_judge_comparison(self) -> bool:
        return self.kind == "judge"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "schemaVersion": self.schema_version, "kind": self.kind, "run_a": self.run_a.to_dict(),
            "run_b": self.run_b.to_dict(), "forced": self.forced, "mismatches": list(self.mismatches),
            "differences": list(self.differences), "n_compared": self.n_compared, "only_in_a": list(self.only_in_a),
            "only_in_b": list(self.only_in_b), "accuracy_a": self.accuracy_a, "accuracy_b": self.accuracy_b,
            "fixes": self.fixes, "regressions": self.regressions, "net": self.net, "both_right": self.both_right,
            "both_wrong": self.both_wrong, "p_value": self.p_value, "flaky_flips": self.flaky_flips.to_dict(),
            "net_excluding_flaky": self.net_excluding_flaky,
            "per_type": {t: c.to_dict() for t, c in self.per_type.items()},
            "changed": [c.to_dict() for c in self.changed]}
        if self.judge_agreement is not None:
            out["judge_agreement"] = self.judge_agreement.to_dict()
        out["not_compared"] = self.not_compared.to_dict()
        out["code"] = None if self.code is None else self.code.to_dict()
        return out

    @classmethod
    def from_dict(cls, d: Json) -> "Comparison":
        agreement, not_compared, code = d.get("judge_agreement"), d.get("not_compared"), d.get("code")
        return cls(
            schema_version=d["schemaVersion"], kind=d.get("kind", "runs"), run_a=RunSide.from_dict(d["run_a"]),
            run_b=RunSide.from_dict(d["run_b"]), forced=d["forced"], mismatches=tuple(d["mismatches"]),
            differences=tuple(d.get("differences") or ()), n_compared=d["n_compared"],
            only_in_a=tuple(d["only_in_a"]), only_in_b=tuple(d["only_in_b"]), accuracy_a=d["accuracy_a"],
            accuracy_b=d["accuracy_b"], fixes=d["fixes"], regressions=d["regressions"], net=d["net"],
            both_right=d["both_right"], both_wrong=d["both_wrong"], p_value=d["p_value"],
            flaky_flips=FlakyFlips.from_dict(d["flaky_flips"]), net_excluding_flaky=d["net_excluding_flaky"],
            per_type={t: TypeChange.from_dict(c) for t, c in d["per_type"].items()},
            changed=tuple(ChangedItem.from_dict(c) for c in d["changed"]),
            judge_agreement=None if agreement is None else LabelAgreement.from_dict(agreement),
            not_compared=NotCompared.from_dict(not_compared) if isinstance(not_compared, Mapping) else NotCompared(),
            code=CodeChange.from_dict(code) if isinstance(code, Mapping) else None)
