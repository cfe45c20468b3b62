"""The loop's model stack, set before the first spend: a cheap writer (not the reader model), then the cost of a round.

memory-ref's writer runs once per distinct session (about 18,400 calls on a full ``_s`` run); left unset it is the
reader model, and a first round costs about $184 in writer calls with a gpt-4o reader. ``set`` writes
``loop.targetOptions.stack`` in ``.longmemeval-benchmarks/config.json`` from ``references/model-config.md``'s
advice: the writer ``openai:gpt-4o-mini`` unless one is configured, the reader the loop's ``target_model``. It
keeps a writer the user chose, and says when that writer is the reader model.

Usage:
    python scripts/loop_stack.py show
    python scripts/loop_stack.py set [--writer openai:gpt-4o-mini]
"""

from __future__ import annotations

from lme.core import entry_guard  # first: the venv check and a clean Ctrl-C (see its docstring)

entry_guard.start(__name__)

import json
import sys
from pathlib import Path
from typing import Any, Sequence

from lme.core import cli_parser
from lme.core import config_file
from lme.core import fileio
from lme.core import command_names
from lme.core.errors import UserError, run_main
from lme.core.config_file import config_path

CHEAP_WRITER = "openai:gpt-4o-mini"


def read_config(project: Path) -> dict[str, Any]:
    path = config_path(project)
    cfg = config_file.read_object(path, fix="fix the file (or run setup again)", not_object="{path} is not a JSON object",
                                  not_object_fix=f"re-run {command_names.SETUP}")
    if cfg is None:
        raise UserError(f"no {path}", fix=f"run {command_names.SETUP} first")
    return cfg


def reader_of(cfg: dict[str, Any]) -> str:
    loop = cfg.get("loop") or {}
    model = loop.get("target_model") or f"{cfg.get('targetProvider')}:{cfg.get('targetModel')}"
    return model if ":" in model else f"{cfg.get('targetProvider')}:{model}"


def stack_of(cfg: dict[str, Any]) -> dict[str, Any]:
    options = (cfg.get("loop") or {}).get("targetOptions") or {}
    return dict(options.get("stack") or (cfg.get("targetOptions") or {}).get("stack") or {})


def set_stack(project: Path, writer: str | None = None) -> list[str]:
    """Give the loop a writer (kept when configured, unless ``writer`` is given); returns lines to print."""
    if writer is not None and ":" not in writer:
        raise UserError(f"--writer {writer!r} is not provider:model", fix=f"e.g. --writer {CHEAP_WRITER}")
    cfg = read_config(project)
    stack = stack_of(cfg)
    reader = reader_of(cfg)
    chosen = writer or stack.get("writer") or CHEAP_WRITER
    lines = []
    if stack.get("writer") != chosen:
        stack["writer"] = chosen
        loop = cfg.setdefault("loop", {})
        options = loop.setdefault("targetOptions", {})
        options["stack"] = stack
        fileio.write_atomic_text(config_path(project), json.dumps(cfg, indent=2) + "\n")
        lines.append(f"set loop.targetOptions.stack.writer = {chosen} in {config_path(project)}")
    lines.append(f"stack: writer {chosen}, reader {stack.get('reader') or reader}")
    if chosen == (stack.get("reader") or reader) and chosen != CHEAP_WRITER:
        lines.append(f"warning: the writer is the reader model ({chosen}): writer calls are most of a first "
                     f"round's cost; a cheap writer ({CHEAP_WRITER}) is advised (references/model-config.md)")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser, sub = cli_parser.loop_command_parser(__doc__)
    sub.add_parser("show", help="print the loop's stack")
    p_set = sub.add_parser("set", help="give the loop a cheap writer (kept when one is configured)")
    p_set.add_argument("--writer", help=f"the writer as provider:model (default: the configured one, else {CHEAP_WRITER})")
    args = parser.parse_args(argv)
    if args.command == "show":
        cfg = read_config(args.project)
        stack = stack_of(cfg)
        print(f"stack: writer {stack.get('writer') or 'the reader model (' + reader_of(cfg) + ')'}, "
              f"reader {stack.get('reader') or reader_of(cfg)}")
        return 0
    print("\n".join(set_stack(args.project, args.writer)))
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
