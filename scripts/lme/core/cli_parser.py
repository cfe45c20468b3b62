"""``ArgumentParser`` for every entry script: a bad argument is one ``error: ...`` line with a hint, exit 2.

argparse's own ``error`` prints the whole usage block before its message; an agent (or a user) reading the output
then has to find the one line that matters. This parser prints only that line, plus what to do: a bare word where
a run id was meant suggests ``--run-id WORD``; anything else points at ``--help``.

After parsing, a ``--project`` outside the working folder is refused in a loop session (``unattended``): one check
for every entry script. ``loop_command=True`` marks the loop's own commands, which are in a loop session whenever
Claude Code runs them. Standard library only: the commands that run with the system python import it.
"""

from __future__ import annotations

import argparse
import math
import shlex
import sys
from pathlib import Path
from typing import Any, NoReturn, Sequence



def finite_float(text: str) -> float:
    """An argument ``type`` for a number: ``nan``, ``inf`` and ``1e999`` are refused (float() takes them)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


PROJECT_HELP = "project root (default: .)"
"""The help of a ``--project`` that defaults to the working folder, named ``.``."""


def documented_parser(doc: str, *, epilog_from: int | None = 0, **kwargs: Any) -> ArgumentParser:
    """A command's parser that shows its module docstring as written (no rewrapping): the first paragraph is the
    description, the docstring from paragraph ``epilog_from`` on is the epilog (0: all of it; None: no epilog).
    ``kwargs`` go to the parser (``prog``, ``loop_command``)."""
    paragraphs = doc.split("\n\n")
    epilog = None if epilog_from is None else "\n\n".join(paragraphs[epilog_from:])
    return ArgumentParser(description=paragraphs[0], epilog=epilog,
                          formatter_class=argparse.RawDescriptionHelpFormatter, **kwargs)


def add_project_argument(parser: argparse.ArgumentParser, help: str = PROJECT_HELP, *,
                         default: Path | None = Path(".")) -> None:
    """``--project``: the project root, a path (``default``: ``.``; a loop command passes ``Path.cwd()``)."""
    parser.add_argument("--project", type=Path, default=default, help=help)


def loop_command_parser(description: str, *, project_help: str = "project root (default: cwd)",
                        raw_description: bool = True) -> tuple[ArgumentParser, Any]:
    """The loop's command shape, shared by its commands: a loop command's parser with ``--project`` (default: the
    working folder) and required subcommands (``dest="command"``). Returns (parser, subparsers)."""
    kwargs: dict[str, Any] = {"formatter_class": argparse.RawDescriptionHelpFormatter} if raw_description else {}
    parser = ArgumentParser(loop_command=True, description=description, **kwargs)
    add_project_argument(parser, project_help, default=Path.cwd())
    return parser, parser.add_subparsers(dest="command", required=True)


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser with a one-line ``error`` (subparsers made by ``add_subparsers`` are this class too)."""

    _given: list[str] | None = None

    def __init__(self, *args: Any, loop_command: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.loop_command = loop_command

    def parse_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> Any:  # type: ignore[override]
        parsed = super().parse_args(args, namespace)
        from lme.core import unattended  # here: --help and usage errors exit above, without reading any state

        unattended.refuse_project_elsewhere(parsed, loop_command=self.loop_command)
        return parsed

    def parse_known_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> Any:
        self._given = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        line = " ".join(f"{self.prog}: {message}".split())
        self.exit(2, f"error: {line} ({self.hint(message)})\n")

    def _has_option(self, option: str) -> bool:
        return option in self._option_string_actions

    def hint(self, message: str) -> str:
        """What to do about ``message``: ``--run-id WORD`` for a bare word given where a run id goes, else --help."""
        bare = self._bare_words(message)
        split = self._split_value(bare)
        if split is not None:
            return f"a value with spaces is one shell word: quote it, {split}"
        if self._has_option("--run-id") and len(bare) == 1:
            return f"to name a run, pass --run-id {bare[0]}"
        return f"see {self.prog} --help"

    def _split_value(self, bare: list[str]) -> str | None:
        """``--target-option "command=python x.py"`` when the bare words follow an option's value: the shell split a
        value the user meant as one word (None otherwise)."""
        given = self._given or []
        if not bare or bare[0] not in given:
            return None
        i = given.index(bare[0])
        if given[i:i + len(bare)] != bare or i < 1:
            return None
        option, value = (given[i - 2], given[i - 1]) if i >= 2 else ("", "")
        if given[i - 1].startswith("--") and "=" in given[i - 1]:
            option, _, value = given[i - 1].partition("=")
        elif given[i - 1].startswith("-"):
            return None
        action = self._option_string_actions.get(option)
        if action is None or action.nargs not in (None, 1) or action.type not in (None, str):
            return None  # a number (--max 3 r1) is not a value split by the shell
        return f"{option} {shlex.quote(' '.join([value, *bare]))}"

    def _bare_words(self, message: str) -> list[str]:
        if "unrecognized arguments:" in message:
            return [w for w in message.split("unrecognized arguments:", 1)[1].split() if not w.startswith("-")]
        if "--run-id" in message and "required" in message:
            given = self._given or []
            return given if len(given) == 1 and not given[0].startswith("-") else []
        return []
