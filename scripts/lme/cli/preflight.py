"""Check that a run can start: config, dataset, upstream judge checkout, API keys, runs dir, the official judge's
countdown (its entry in the model list: the one read made, free). Calls no model.

Usage:
    python scripts/preflight.py [--project .] [run_benchmark arguments...]

Prints one line per check (``ok`` / ``FAIL`` with the fix) and exits 2 when any check fails. It accepts the same
arguments as run_benchmark.py, so the command and skill can pass the user's arguments to both unchanged.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from lme.core import cli_parser
from lme.data import dataset_label
from lme.core.errors import UserError
from lme.core import config
from lme.run import settings
from lme.run import preflight


def main(argv: Sequence[str] | None = None) -> int:
    parser = cli_parser.ArgumentParser(prog="preflight.py", description="Check that a LongMemEval run can start.")
    settings.add_arguments(parser)
    args = parser.parse_args(argv)
    project = Path(args.project).resolve()
    cfg = config.load_config(project)
    print(f"ok   config {config.config_path(project)}")
    resolved = settings.resolve(cfg, args, project)
    failed = 0
    for passed, message in preflight.checks(resolved):
        print(f"{'WARN' if passed is None else 'ok  ' if passed else 'FAIL'} {message}")
        failed += passed is False
    print(
        f"target {resolved.target} ({resolved.target_provider}:{resolved.target_model}), judge "
        f"{resolved.judge_provider}:{resolved.judge_model}, concurrency {resolved.concurrency}, "
        f"dataset {dataset_label.display_name(resolved.variant, resolved.dataset_path)}"
    )
    if failed:
        raise UserError(f"{failed} pre-flight check(s) failed (see the FAIL lines above)")
    return 0
