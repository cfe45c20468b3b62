"""The words every report uses for a run's dataset: its name and the line saying what the file is.

One owner, so ``scorecard.md``, ``metrics.json``, ``report.html``, the compare page and the terminal say the same
thing: the shipped sample is named a synthetic sample (never LongMemEval ``_s``), and a file is described by its
item fingerprints (``fingerprints.recognize``, recorded in run-meta's ``dataset.recognition``), falling back to the
whole file's sha256 for runs made before fingerprints were recorded. Standard library only.
"""

from __future__ import annotations

from typing import Any, Mapping

from lme.core.facts import SAMPLE_FILE, published_file


def file_name(path: Any) -> str:
    """The last part of a recorded path (``/`` or ``\\`` separated); empty for none."""
    return str(path or "").replace("\\", "/").rsplit("/", 1)[-1]


def is_sample(path: Any) -> bool:
    """Whether the recorded dataset path is the shipped synthetic sample."""
    return file_name(path) == SAMPLE_FILE


def display_name(variant: Any, path: Any) -> str:
    """The dataset as titles name it: the variant (``_s``), or for the shipped sample what it really is."""
    if is_sample(path):
        return f"synthetic sample in the {variant} schema, not LongMemEval {variant}"
    return str(variant)


def recognition_line(dataset: Mapping[str, Any]) -> str:
    """What the file is, as one line: the fingerprint comparison and the release it was recorded as (``matches the
    cleaned release (_oracle) on 500/500 items (release: cleaned)``); older runs: the published file's name by its
    sha256, else ``unrecognised file``. ``dataset`` is run-meta's ``dataset`` record or metrics.json's."""
    recognition = dataset.get("recognition")
    if isinstance(recognition, Mapping) and recognition.get("summary"):
        return f"{recognition['summary']} (release: {recognition.get('release') or 'unknown'})"
    known = published_file(str(dataset.get("sha256") or ""))
    return f"the published {known} by its sha256" if known else "unrecognised file"
