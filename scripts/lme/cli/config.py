"""The project's ``.longmemeval-benchmarks/config.json``: defaults, validated load, atomic write.

Paths inside the config (``datasetPath``, ``runs_dir``, ``longmemeval_root``, ``cache_dir``) are relative to the
project root unless absolute. The schema is ``references/schemas/config.schema.json``.

Usage:
    python scripts/config.py --project .          # prints the validated config as JSON
    python scripts/config.py --project . --defaults
"""

from __future__ import annotations

import argparse
import json
from typing import Sequence

from lme.core import cli_parser
from lme.core.config_defaults import default_config
from lme.core import config


def main(argv: Sequence[str] | None = None) -> int:
    parser = cli_parser.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    cli_parser.add_project_argument(parser, "project root holding .longmemeval-benchmarks/")
    parser.add_argument("--defaults", action="store_true", help="print the default config instead of the project's")
    args = parser.parse_args(argv)
    cfg = default_config() if args.defaults else config.load_config(args.project)
    print(json.dumps(cfg, indent=2))
    return 0
