"""Print the iteration loop's configuration, or check a planned loop run against its hard rules (``lme/loop/rules.py``).

The rules (``lme/loop/rules.py``, which a ``--loop`` run is handed by run_benchmark.py): the full question set
every round, the official judge (after the day it retires, the user's calibrated successor for every item), the
three symbolic layers on (memory-ref and its copies only: another target gets no symbolic option), the work tree
on the loop branch, the configured target.
The settings are the ``loop`` object of ``.longmemeval-benchmarks/config.json`` over ``rules.LOOP_DEFAULTS``
(``references/iteration-rules.md`` documents each key).

Usage (prints the loop configuration, or the problems for a planned run):
    python scripts/loop_guard.py config [--project P]
    python scripts/loop_guard.py check [--project P] [--max N] [--n-total N]
    python scripts/loop_guard.py symbolic [--project P]    # check_setup.sh's lines for the symbolic layers
    python scripts/loop_guard.py target --n-total 500          # the loop's target: 475 of 500
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Sequence

from lme.core import cli_parser
from lme.core.errors import UserError
from lme.core.facts import SYMBOLIC_FLAGS


def main(argv: Sequence[str] | None = None) -> int:
    parser = cli_parser.ArgumentParser(loop_command=True, description=__doc__,
                                       formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p_cfg = sub.add_parser("config", help="print the loop configuration (config loop object + defaults) as JSON")
    p_cfg.add_argument("--project", type=Path, default=Path.cwd(), help="project root (default: cwd)")
    p_chk = sub.add_parser("check", help="check the configured loop run against the hard rules")
    p_chk.add_argument("--project", type=Path, default=Path.cwd(), help="project root (default: cwd)")
    p_chk.add_argument("--max", type=int, default=None, help="the --max the run would use (default: all)")
    p_chk.add_argument("--n-total", type=int, default=500, help="questions in the dataset file (default 500)")
    p_sym = sub.add_parser("symbolic", help="one ok/FAIL line per symbolic layer (memory-ref and its copies only)")
    p_sym.add_argument("--project", type=Path, default=Path.cwd(), help="project root (default: cwd)")
    p_tgt = sub.add_parser("target", help="print the strict-correct count that ends the loop for N items")
    p_tgt.add_argument("--n-total", type=int, required=True, help="items in the full set (e.g. 500)")
    args = parser.parse_args(argv)
    from lme.core import config  # after parsing: --help and usage errors need neither the config nor the loop
    from lme.loop import rules
    from lme.loop.rules import LoopRunRequest, check_loop_run, loop_config, loop_judge, target_correct

    if args.command == "target":
        if args.n_total < 1:
            raise UserError(f"--n-total {args.n_total} must be >= 1", fix="pass the dataset's size, e.g. 500")
        needed = target_correct(args.n_total)
        print(f"{needed} of {args.n_total} strict correct ({needed / args.n_total:.1%}; ceil(0.95 * n_total))")
        return 0
    if args.command == "symbolic":
        lines = rules.symbolic_setup(args.project)
        print("\n".join(lines))
        return 1 if any(line.startswith("FAIL") for line in lines) else 0
    cfg = loop_config(args.project)
    if args.command == "config":
        print(json.dumps(cfg, indent=2, sort_keys=True))
        return 0
    provider, model = config.parse_model_arg(str(cfg["judge"]), "")  # a bare name: no provider, not the loop's judge
    judge = loop_judge(args.project)  # after the day: the user's calibrated successor, for every item
    planned = LoopRunRequest(n_total=args.n_total, max_items=args.max, judge_provider=provider, judge_model=model,
                             symbolic={k: cfg["targetOptions"].get(k) for k in SYMBOLIC_FLAGS}, target=cfg["target"],
                             successor=judge.successor, successor_only=judge.kind == "successor")
    problems = check_loop_run(planned, args.project)
    for p in problems:
        print(f"FAIL {p}")
    if not problems:
        print("ok   the loop run meets every hard rule")
    return 1 if problems else 0
