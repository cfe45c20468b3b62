"""Before and after in one benchmark run: this checkout's code beside another revision's (default: the ``main`` branch).

``trees(ref, tmp)`` is ``{"before": that revision's tree, "after": this checkout}`` (``before`` left out when there
is no such revision); ``export(ref, dest)`` writes that revision's ``scripts/``, ``references/``, ``plugins/`` and
``data/`` into ``dest`` (``git archive``; nothing of this checkout changes).
``python_env(cache)`` is the environment the benchmarks run both trees' commands in: bytecode written to a cache
folder of the benchmark's own, as an installed plugin runs (this machine's shells set PYTHONDONTWRITEBYTECODE,
which makes every import compile its source again). ``median`` and ``ratio`` format the figures.
"""

from __future__ import annotations

import os
import statistics
import subprocess
from pathlib import Path
from typing import Sequence

REPO = Path(__file__).resolve().parents[2]
PARTS = ("scripts", "references", "plugins", "data")


def export(ref: str, dest: Path) -> Path | None:
    """``ref``'s tree (the parts a run reads) in ``dest``; None when ``ref`` is not a revision of this checkout."""
    try:
        archive = subprocess.run(["git", "-C", str(REPO), "archive", ref, *PARTS], check=True,
                                 capture_output=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    dest.mkdir(parents=True, exist_ok=True)
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def trees(ref: str, tmp: Path) -> dict[str, Path]:
    """The trees to compare: ``before`` (``ref``'s, exported under ``tmp``) when ``ref`` names a revision, and
    ``after`` (this checkout)."""
    before = export(ref, Path(tmp) / "before") if ref else None
    return {**({"before": before} if before is not None else {}), "after": REPO}


def headline(ref: str, found: dict[str, Path]) -> str:
    """``before = <commit and subject>, after = this checkout`` for a benchmark's first line."""
    return f"before = {describe(ref) if 'before' in found else 'none'}, after = this checkout"


def describe(ref: str) -> str:
    try:
        return subprocess.run(["git", "-C", str(REPO), "log", "-1", "--format=%h %s", ref], check=True,
                              capture_output=True, text=True).stdout.strip()[:70]
    except (OSError, subprocess.CalledProcessError):
        return ref


def python_env(cache: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPYCACHEPREFIX=str(cache), LONGMEMEVAL_TIKTOKEN="0", **extra)
    return env


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def ratio(after: float, before: float) -> str:
    return f"{after / before:5.2f}" if before else "  n/a"
