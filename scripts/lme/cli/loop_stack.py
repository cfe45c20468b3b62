"""The loop's model stack, set before the first spend: a cheap writer (not the reader model), then the cost of a round.

memory-ref's writer runs once per distinct session (about 18,400 calls on a full ``_s`` run); left unset it is the
reader model, and a first round costs about $184 in writer calls with a gpt-4o reader. ``set`` writes
``loop.targetOptions.stack`` in ``.longmemeval-benchmarks/config.json`` from ``references/model-config.md``'s
advice: the writer ``openai:gpt-4o-mini`` unless one is configured, the reader the loop's ``target_model``. It
keeps a writer the user chose, and says when that writer is the reader model.

The writer is memory-ref's (and its copies'). When the loop's target is your own system (``loop_target.py use
PATH``), ``set`` writes only its model (``loop.target_model``, when unset) and says what it left out; ``--writer``
is refused there.

Usage:
    python scripts/loop_stack.py show
    python scripts/loop_stack.py set [--writer openai:gpt-4o-mini]
"""

from __future__ import annotations

from typing import Sequence

from lme.core import cli_parser
from lme.loop import model_stack
from lme.loop import rules as loop_rules


def main(argv: Sequence[str] | None = None) -> int:
    parser, sub = cli_parser.loop_command_parser(__doc__)
    sub.add_parser("show", help="print the loop's stack")
    p_set = sub.add_parser("set", help="give the loop a cheap writer (kept when one is configured)")
    p_set.add_argument("--writer",
                       help=f"the writer as provider:model (default: the configured one, else {model_stack.CHEAP_WRITER})")
    args = parser.parse_args(argv)
    if args.command == "show":
        cfg = loop_rules.read_project_config(args.project, required=True)
        target, reference = model_stack.loop_target(args.project)
        if not reference:
            print(f"stack: target model {model_stack.reader_of(cfg)} ({target}, your own system: no writer)")
            return 0
        stack = model_stack.stack_of(cfg)
        print(f"stack: writer {stack.get('writer') or 'the reader model (' + model_stack.reader_of(cfg) + ')'}, "
              f"reader {stack.get('reader') or model_stack.reader_of(cfg)}")
        return 0
    print("\n".join(model_stack.set_stack(args.project, args.writer)))
    return 0
