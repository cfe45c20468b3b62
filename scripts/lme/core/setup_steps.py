"""What setup's steps share: the summary each step reports into, how a step runs a command, a failed command's
output in one line. Standard library only (setup runs before the venv exists)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from typing import Callable

Runner = Callable[..., subprocess.CompletedProcess[str]]
"""How a step runs a command: ``subprocess.run``, or a test's fake."""


@dataclass
class Report:
    """What setup did, step by step, for the summary printed at the end."""

    lines: list[str] = field(default_factory=list)

    def add(self, step: str, text: str) -> None:
        self.lines.append(f"{step:9} {text}")


def output_tail(text: str | None, limit: int = 300) -> str:
    """The end of a failed command's output, on one line, for the error line that names it."""
    text = " ".join((text or "").split())
    return text[-limit:] if text else "no output"
