"""Paths as a page shows them: relative to the project, else the file's name; never the user's home directory.

A report page is shared, pasted into issues and screenshotted, so it must not carry the absolute paths of the machine
that made it (``/home/alice/work/...``). The terminal may print absolute paths (they are the user's own screen);
the pages go through here.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from lme.judge import stability
from lme.store.run_store import RunData


def shown(path: Any, project: Path | None) -> str:
    """``path`` relative to ``project`` when it lies inside it (as given, or with symlinks resolved); otherwise its
    file name. A relative path is shown as it is; None or empty is an empty string."""
    text = str(path or "")
    if not text:
        return ""
    pure = PureWindowsPath(text) if "\\" in text and "/" not in text else PurePosixPath(text)
    if not pure.is_absolute():
        return pure.as_posix()
    if project is not None:
        for candidate, root in ((Path(text), Path(project)), (Path(text).resolve(), Path(project).resolve())):
            try:
                return candidate.relative_to(root).as_posix() or "."
            except ValueError:
                continue
    return pure.name


def project_of(run: RunData, project: Path | None = None) -> Path:
    """The project the page's paths are relative to: the one given, else the run's own."""
    return Path(project) if project is not None else stability.project_of_run(run.meta, run.path)
