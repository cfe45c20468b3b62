"""The parser shapes the commands share (lme/core/cli_parser.py): a parser showing its docstring as written, and
``--project``."""

from __future__ import annotations

from pathlib import Path

import pytest

from lme.core import cli_parser

DOC = """Summary line of a command.

Usage:
    tool.py --flag      # kept on its own line

Exit status: 0 done, 2 a user mistake."""


@pytest.mark.parametrize("epilog_from, shown, hidden", [
    (0, ["Summary line of a command.\n\noptions:", "Summary line of a command.\n\nUsage:\n    tool.py --flag"], []),
    (1, ["Usage:\n    tool.py --flag      # kept on its own line\n\nExit status"], []),
    (2, ["\nExit status: 0 done, 2 a user mistake.\n"], ["Usage:"]),
    (None, ["Summary line of a command."], ["Usage:", "Exit status"]),
])
def test_a_documented_parser_shows_its_docstring_from_the_paragraph_asked_for_without_rewrapping(
        epilog_from, shown, hidden):
    text = cli_parser.documented_parser(DOC, epilog_from=epilog_from, prog="tool.py").format_help()
    assert text.startswith("usage: tool.py [-h]\n\nSummary line of a command.\n")
    for part in shown:
        assert part in text
    for part in hidden:
        assert part not in text


def test_a_documented_parser_is_the_one_line_parser():
    parser = cli_parser.documented_parser(DOC, prog="tool.py")
    assert isinstance(parser, cli_parser.ArgumentParser) and not parser.loop_command
    assert cli_parser.documented_parser(DOC, loop_command=True).loop_command


def test_project_is_a_path_defaulting_to_dot_with_the_help_given():
    parser = cli_parser.ArgumentParser(prog="tool.py")
    cli_parser.add_project_argument(parser)
    assert parser.parse_args([]).project == Path(".")
    assert parser.parse_args(["--project", "sub"]).project == Path("sub")
    assert "--project PROJECT  project root (default: .)" in parser.format_help()
    other = cli_parser.ArgumentParser(prog="tool.py")
    cli_parser.add_project_argument(other, "where the runs are", default=None)
    assert other.parse_args([]).project is None and "where the runs are" in other.format_help()


def test_a_loop_command_defaults_its_project_to_the_working_folder():
    parser, sub = cli_parser.loop_command_parser("A loop command.")
    sub.add_parser("step")
    assert parser.parse_args(["step"]).project == Path.cwd()
