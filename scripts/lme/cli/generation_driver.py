"""Turn one LongMemEval item into a hypothesis with a target (the memory system under test).

Usage (debug one item; from a project, with its venv's python)::

    .longmemeval-venv/bin/python "$PLUGIN/scripts/generation_driver.py" \\
        --dataset "$PLUGIN/data/sample/longmemeval_sample.json" \\
        --question-id d20b14a8 --target oracle --target-model openai:gpt-4o --target-option mode=con

prints the hypothesis JSON (``Hypothesis.to_dict()`` plus ``"target"``) on stdout.

A target is a built-in name (``plugins/``) or the path to your own system: a ``.py`` file defining
``generate(item: dict, ctx: dict) -> dict`` or an executable that reads an item on stdin (plugins/README.md). A
``.py`` file that imports ``Hypothesis`` from the toolkit, or a package folder, is a toolkit target
(``generate(item: PublicItem, ctx: TargetContext) -> Hypothesis``), loaded as the built-in ones are.

Gold never reaches a target: it receives ``Question.public()`` (no answer, no evidence ids, no ``has_answer``,
sessions renamed ``session_001`` ...). The one exception is by design and happens HERE, not in the target:
for ``oracle`` the driver keeps only the evidence sessions (``answer_session_ids``) before building the public
item, so the oracle target is the plain reader over the sessions it is given. The ``hypotheses`` target (answers
read from a file written before the run) is looked up by question id, also here: no model sees the id.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Sequence

from lme.core import cli_parser
from lme.core.facts import BUILTIN_TARGETS
from lme.targets import parse_option, target_path
from lme.core import config
from lme.targets import generation_driver


def main(argv: Sequence[str] | None = None) -> int:
    parser = cli_parser.ArgumentParser(description="Generate one hypothesis with a target and print it as JSON.")
    parser.add_argument("--dataset", required=True, type=Path, help="LongMemEval file (.json, .json.xz, .json.gz)")
    parser.add_argument("--question-id", required=True, help="question_id of the item to answer")
    parser.add_argument("--target", default="full-context",
                        help=f"target name ({', '.join(BUILTIN_TARGETS)}) or the path to your system (a .py file "
                             "defining generate(item, ctx), or an executable)")
    parser.add_argument("--target-model", default="offline:extractive",
                        help="provider:model for the target's calls, e.g. anthropic:claude-sonnet-4-6")
    parser.add_argument("--target-option", action="append", default=[], metavar="K=V",
                        help="target option (repeatable); V is parsed as JSON when possible")
    parser.add_argument("--cache-dir", default=None, help="directory the target may use for on-disk caches")
    args = parser.parse_args(argv)
    target_path(args.target)  # a bad target name fails before the dataset is read

    provider, model = config.parse_model_arg(args.target_model, "openai")
    options = dict(parse_option(o) for o in args.target_option)
    if isinstance(options.get("command"), str) and args.target == "command":
        options["command"] = shlex.split(options["command"])
    q = generation_driver.find_item(args.dataset, args.question_id)
    result = generation_driver.generate_hypothesis(q, provider, model, target=args.target, options=options,
                                                   cache_dir=args.cache_dir)
    print(json.dumps(result, ensure_ascii=False, indent=2))
    return 0
