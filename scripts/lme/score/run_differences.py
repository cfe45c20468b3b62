"""What differs between how two runs were made: target, models, options, settings that change answers, code.

The comparison (``run_comparison.compare``) carries these lines as ``differences``; ``scorecard.py --compare`` prints
them in the terminal next to the fixes and regressions, and the diff page and ``compare_runs.py`` show them, so a
reader knows what the flips are flips of. Read from each run's ``run-meta.json``, and for the code from the
comparison's ``code`` (``code_versions.change``: the versions behind each side's compared rows, file by file);
runs made before rows recorded their code fall back to the target's source hash, and are never called the same code.
"""

from __future__ import annotations

from typing import Any, Callable

from lme.core.run_records import RunMeta
from lme.data import dataset_label
from lme.score.comparison_record import CodeChange, Comparison

_DEFAULT = "(default)"


def _model(provider: Any, model: Any) -> str:
    return f"{provider}:{model}"


def _short_sha(value: Any) -> str:
    return str(value)[:12] if value else "unknown"


def _yes_no(value: Any) -> str:
    return "yes" if value else "no"


_SETTINGS: tuple[tuple[str, str, Any, Callable[[Any], str]], ...] = (
    ("judge_repeat", "judge repeats", 1, str),
    ("cache_read", "reads the call cache", True, _yes_no),
    ("batch", "batch", "off", str),
    ("loop", "a loop run", False, _yes_no),
)
"""Run settings that change what a run answers or how it is judged: (key, label, default, format)."""

_HASHES = (("target_source_sha256", "target code sha256"), ("reader_template_sha256", "reader prompt code sha256"),
           ("judge_template_sha256", "judge template sha256"))


def differences(a: RunMeta, b: RunMeta, code: CodeChange | None = None) -> list[str]:
    """One line per thing that differs from run ``a`` (before) to run ``b`` (after), ``label: before -> after``.
    ``code``: what differs between the code behind their compared rows (its line, file by file, replaces the
    target source hash, that code's digest when each run started)."""
    lines: list[str] = []

    def differ(label: str, before: Any, after: Any) -> None:
        if before != after:
            lines.append(f"{label}: {before} -> {after}")

    ta, tb = a.target, b.target
    differ("target", ta.name, tb.name)
    differ("target model", _model(ta.provider, ta.model), _model(tb.provider, tb.model))
    oa, ob = dict(ta.options or {}), dict(tb.options or {})
    for key in sorted(set(oa) | set(ob)):
        differ(f"target option {key}", oa.get(key, _DEFAULT), ob.get(key, _DEFAULT))
    differ("judge", _model(a.judge.provider, a.judge.model), _model(b.judge.provider, b.judge.model))
    differ("variant", a.variant, b.variant)
    differ("dataset", dataset_label.recognition_line(a.dataset.to_dict()),
           dataset_label.recognition_line(b.dataset.to_dict()))
    for key, label, default, fmt in _SETTINGS:
        differ(label, fmt(a.settings.get(key, default)), fmt(b.settings.get(key, default)))
    ha = (a.provenance or {}).get("prompt_hashes") or {}
    hb = (b.provenance or {}).get("prompt_hashes") or {}
    for key, label in _HASHES:
        if key == "target_source_sha256" and code is not None:
            continue
        if ha.get(key) and hb.get(key):
            differ(label, _short_sha(ha.get(key)), _short_sha(hb.get(key)))
    code_line = None if code is None else code.line()
    if code_line:
        lines.append(code_line)
    return lines


def describe_runs(result: Comparison) -> str:
    """The differences as one clause: ``what differs: a; b``, or that the runs were made alike. Only code known
    the same (``Comparison.code.same``) lets it say the code is the same; unknown code is said so."""
    lines, same_code = result.differences, None if result.code is None else result.code.same
    said = any(line.startswith("code: ") for line in lines)
    unknown = "" if same_code is not None or said else "; the code of the compared rows is not all recorded"
    if lines:
        return "what differs: " + "; ".join(lines) + unknown
    return "same target, models, options and code" if same_code else "same target, models and options" + unknown


def summary_line(result: Comparison) -> str:
    """The comparison in one line: fixes, regressions, net, exact McNemar p, and what differs between the runs."""
    a, b = result.run_a.run_id, result.run_b.run_id
    flaky = result.flaky_flips.ids
    unstable = f" ({len(flaky)} on unstable labels; net without them {result.net_excluding_flaky:+d})" if flaky else ""
    outside = result.not_compared.describe()
    return (f"compare {a} (before) -> {b} (after), {result.n_compared} items judged in both: fixes {result.fixes}, "
            f"regressions {result.regressions}, net {result.net:+d}{unstable}, exact McNemar p "
            f"{result.p_value:.4g}" + (f"; not compared: {outside}" if outside else "")
            + f"; {describe_runs(result)}")
