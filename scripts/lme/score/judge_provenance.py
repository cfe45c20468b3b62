"""Where a run's verdicts came from, for ``metrics.json`` (``verdicts``, ``empty_hypotheses``) and the judge's
comparability notes: the three counts (official judged live, official from the verdict archive, successor), the
endpoint hosts verdicts were made at, each invocation's judge endpoint, a successor's calibration (or
"uncalibrated"), and why a verdict of the official judge is not official (endpoint, request shape, prompt).

A verdict is official by ``verdict_sources.classify``; the run is comparable only if every verdict is
(``references/SPEC.md``, "Judge continuity").
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Mapping, Sequence

from lme.core.endpoint_urls import is_official_endpoint, is_official_host, redact
from lme.core.facts import resolve_judge_model
from lme.core.run_records import ResultRow, RunMeta
from lme.judge import agreement, verdict_archive, verdict_sources
from lme.judge.request_shapes import describe as describe_shape
from lme.score.scorecard_record import EmptyHypotheses, Successor, VerdictSources
from lme.score.scoring_inputs import ScoringInputs


def summary(meta: RunMeta, rows: Sequence[ResultRow], inputs: ScoringInputs) -> VerdictSources:
    """``metrics.json`` ``verdicts``: counts by source, hosts, invocation endpoints, the successor and its
    calibration (from ``inputs``' agreement measurements), and the reasons verdicts of the official model are not
    official."""
    counts: Counter[str] = Counter()
    hosts: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    successors: Counter[tuple[str, str]] = Counter()
    shapes: dict[tuple[str, str], Any] = {}
    templates: set[str] = set()
    unrecorded = 0
    origins = _Origins()
    for row in rows:
        verdict = row.judgment
        if not row.judged or verdict is None or verdict.provider == "offline":
            continue
        host, why = verdict_sources.classify(verdict, meta.endpoints)
        if verdict.endpoint_host is None:
            unrecorded += 1
        hosts[host or "unrecorded"] += 1
        if why == "successor":
            key = (verdict.provider, resolve_judge_model(verdict.requested_model))
            successors[key] += 1
            shapes.setdefault(key, verdict.request_shape)
        if why is None:
            counts["official_archived" if verdict.source == "archive" else "official_live"] += 1
            origins.add(verdict, host)
        elif why == "successor":
            counts["successor"] += 1
        else:
            counts["other"] += 1
            reasons[why] += 1
            if why == "prompt":
                templates.add(str(verdict.template_sha256 or "?")[:12])
    return VerdictSources(
        **{name: counts.get(name, 0) for name in verdict_sources.SOURCES}, endpoints=dict(sorted(hosts.items())),
        without_recorded_endpoint=unrecorded, not_official_reasons=dict(sorted(reasons.items())),
        prompt_templates=tuple(sorted(templates)), invocation_endpoints=tuple(invocation_endpoints(meta)),
        origins=origins.to_dict(),
        successors=tuple(Successor(f"{provider}:{model}", n, shapes.get((provider, model)), agreement.compact(
            inputs.agreement_of(provider, model, shapes.get((provider, model)))))
            for (provider, model), n in sorted(successors.items())))


class _Origins:
    """Where the official verdicts come from: made in this project (judged live, or from an archive line its own
    judge made; by host) or imported from a file (named: its author's claim); and the conflicting ones."""

    def __init__(self) -> None:
        self.live = self.archived = self.conflicts = 0
        self.hosts: Counter[str] = Counter()
        self.files: dict[tuple[Any, Any, Any], list[int]] = {}

    def add(self, verdict: Any, host: str | None) -> None:
        origin = verdict.origin or {}
        self.conflicts += bool(verdict.conflict)
        if verdict.source == "archive" and origin.get("kind") != "made":
            key = (origin.get("file"), origin.get("file_sha256"), origin.get("format"))
            counts = self.files.setdefault(key, [0, 0])
            counts[0] += 1
            counts[1] += verdict.raw is None
            return
        if verdict.source == "archive":
            self.archived += 1
        else:
            self.live += 1
        self.hosts[host or "unrecorded"] += 1

    def to_dict(self) -> dict[str, Any]:
        imported = [{"file": f, "file_sha256": sha, "format": fmt, "verdicts": n, "label_only": label_only}
                    for (f, sha, fmt), (n, label_only) in sorted(self.files.items(), key=lambda kv: str(kv[0][0]))]
        return {"made_here": {"verdicts": self.live + self.archived, "live": self.live, "archived": self.archived,
                              "hosts": dict(sorted(self.hosts.items()))},
                "imported": imported, "conflicts": self.conflicts}


def origins_line(origins: Mapping[str, Any]) -> str | None:
    """``Official verdicts: 12 made in this project (api.openai.com 12), 478 imported from x (478, label only):
    an imported verdict is its author's claim...``; None when the block counts none."""
    made = origins.get("made_here") or {}
    imported = [e for e in origins.get("imported") or () if e.get("verdicts")]
    if not made.get("verdicts") and not imported:
        return None
    parts = []
    if made.get("verdicts"):
        hosts = ", ".join(f"{h} {n}" for h, n in (made.get("hosts") or {}).items())
        parts.append(f"{made['verdicts']} made in this project ({hosts})")
    for entry in imported:
        label_only = f", {entry['label_only']} label only" if entry.get("label_only") else ""
        parts.append(f"{entry['verdicts']} imported from {entry.get('file') or 'a file (not recorded)'}"
                     f"{' (sha256 ' + str(entry['file_sha256'])[:12] + ')' if entry.get('file_sha256') else ''}"
                     f"{label_only}")
    text = "Official verdicts: " + ", ".join(parts) + "."
    if imported:
        text += " An imported verdict is its author's claim: no judge call of this installation made it."
    return text


def conflicts_line(origins: Mapping[str, Any]) -> str | None:
    """The verdicts the archive holds with both labels, and the rule that scored them; None when there are none."""
    n = int(origins.get("conflicts") or 0)
    if not n:
        return None
    return (f"Conflicting official verdicts: {n} item(s) were scored from archived verdicts of both labels for "
            f"their prompt, by the {verdict_archive.CONFLICT_RULE} (counted with the judge's instability).")


def invocation_endpoints(meta: RunMeta) -> list[str]:
    """The distinct judge endpoints the run's invocations recorded (credentials redacted), first one first."""
    provider = meta.judge.provider
    seen = [meta.endpoints.get(provider)] if meta.endpoints.get(provider) else []
    for inv in meta.invocations:
        endpoints = inv.endpoints
        if isinstance(endpoints, Mapping) and endpoints.get(provider):
            seen.append(endpoints[provider])
    return list(dict.fromkeys(str(redact(str(e))) for e in seen))


def describe_calibration(calibration: Mapping[str, Any] | None, request_shape: Any) -> str:
    """``calibrated: agreement ...`` or ``uncalibrated: ...`` for a successor's calibration record (None:
    uncalibrated) and request shape."""
    if calibration:
        return "calibrated: " + agreement.describe(calibration)
    return (f"uncalibrated: no judge_agreement.py measurement with its request shape "
            f"{describe_shape(request_shape)} in this project")


def notes(meta: RunMeta, verdicts: VerdictSources, judged: int) -> list[str]:
    """The comparability notes about where verdicts came from (empty when every verdict is official)."""
    out = []
    for entry in verdicts.successors:
        out.append(f"{entry.verdicts} of {judged} verdict(s) are the successor {entry.judge}'s "
                   f"({describe_calibration(entry.calibration, entry.request_shape)}): a figure that mixes official and successor verdicts is not "
                   "official")
    reasons, hosts = verdicts.not_official_reasons, verdicts.endpoints
    if reasons.get("endpoint"):
        bad = ", ".join(f"{h} ({n})" for h, n in hosts.items() if not _official_somewhere(h))
        out.append(f"{reasons['endpoint']} verdict(s) of {judged} were made at an endpoint that is not the official "
                   f"judge's (api.openai.com or <resource>.openai.azure.com): {bad}")
    if reasons.get("prompt"):
        out.append(f"judge prompt is not upstream's get_anscheck_prompt on {reasons['prompt']} of {judged} judged "
                   f"row(s) (evaluate_qa.py sha256 {', '.join(verdicts.prompt_templates or ['?'])})")
    if reasons.get("archive_without_endpoint"):
        out.append(f"{reasons['archive_without_endpoint']} verdict(s) of {judged} come from archive lines that record "
                   "no endpoint (exported by an older version): not official; export them again from the project "
                   "that judged them (judge_shim.py export-verdicts), whose runs recorded where")
    if reasons.get("shape"):
        out.append(f"{reasons['shape']} verdict(s) of {judged} were not made with upstream's request shape "
                   "(max_tokens 10, temperature 0, n 1)")
    if len(hosts) > 1 and (verdicts.successor or verdicts.other):
        out.append(f"verdicts come from {len(hosts)} endpoints ({', '.join(f'{h} {n}' for h, n in hosts.items())}): "
                   "a run is comparable only when every verdict is official")
    out += _legacy_endpoint_notes(meta, verdicts)
    return out


def _official_somewhere(host: str) -> bool:
    return is_official_host("openai", host) or is_official_host("azure", host)


def _legacy_endpoint_notes(meta: RunMeta, verdicts: VerdictSources) -> list[str]:
    """Rows written before verdicts recorded their host: the run's recorded endpoint decides, parsed (never a
    substring test)."""
    if not verdicts.not_official_reasons.get("endpoint_unrecorded"):
        return []
    provider = meta.judge.provider
    endpoint = meta.endpoints.get(provider)
    if not endpoint or endpoint in ("default", "unknown") or is_official_endpoint(provider, endpoint):
        return []
    shown = redact(endpoint)
    if provider == "azure":
        return [f"judge endpoint is {shown}, not an Azure OpenAI resource (*.openai.azure.com)"]
    if provider == "openai":
        return [f"judge endpoint is {shown}, not api.openai.com"]
    return []


def empty_hypotheses(rows: Sequence[ResultRow]) -> EmptyHypotheses:
    """``metrics.json`` ``empty_hypotheses``: rows whose judged text is empty (upstream judges them; ``'yes' in
    ''`` is false only for the judge's reply, not the answer), with the providers' finish reasons of the reader
    call that gave them (``file`` for a hypotheses file, ``unrecorded`` without a call)."""
    reasons: Counter[str] = Counter()
    judged = 0
    for row in rows:
        if row.hypothesis is None or row.hypothesis.strip():
            continue
        judged += row.judged
        reader = [c for c in row.calls if c.role == "reader"] or list(row.calls)
        if reader:
            reasons[str(reader[-1].stop_reason or "unrecorded")] += 1
        elif (row.target and row.target.name) == "hypotheses":
            reasons["file"] += 1
        else:
            reasons["unrecorded"] += 1
    return EmptyHypotheses(sum(reasons.values()), judged, dict(sorted(reasons.items())))
