"""Where a run stands, in one line: state, done/total, judged, errors, accuracy so far, dollars, rate, ETA.

Usage:
    python scripts/run_status.py --run-id 3f2a...             # one status line, now
    python scripts/run_status.py --run-id 3f2a... --wait 100  # block up to 100 s, returning when the run ends
    python scripts/run_status.py --latest --json              # the most recently active run, as one JSON object

``--wait`` polls the run's files inside this program (never a shell ``sleep``) and returns as soon as the run
ends; keep it under the caller's own time limit (Claude Code's Bash tool: 120 s by default, so 100).
It only reads the run directory: it never changes a run.

States and exit status (the same code ``run_benchmark.py`` ended with; ``lme/run/exit_codes.py``): ``completed``
0; ``running`` 4; ``failed`` 1 (resumable; prints the resume command); ``blocked`` 3 (API billing or quota);
``interrupted`` 130 (prints the resume command); ``paused`` 6 at the ``--max-cost`` cap (resume with a higher cap),
7 at a cancelled batch, 8 because the memory system's code changed (both: resume to run the rest); ``dead`` 1: run-meta says running but no process writes
the run (killed, machine restarted) or the background worker exited before starting it; prints the resume
command. ``broken`` 1: its run-meta.json cannot be read (empty, not JSON, not a run-meta) or is missing though the
run has rows; says which file and what is wrong, and prints no resume command (a resume checks the run's rows
first: ``run_benchmark.py --run-id``). A user mistake (unknown run id, bad arguments) is one line and exit 2.
"""

from __future__ import annotations

import json
from typing import Sequence

from lme.core import cli_parser
from lme.core.errors import UserError
from lme.run import status as run_status


def main(argv: Sequence[str] | None = None) -> int:
    parser = cli_parser.documented_parser(__doc__, prog="run_status.py")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--run-id", help="the run to look at")
    which.add_argument("--latest", action="store_true", help="the most recently active run")
    parser.add_argument("--wait", type=cli_parser.finite_float, metavar="SECONDS", default=0.0,
                        help="block at most this long while the run is running (polled every second); 0 = now")
    cli_parser.add_project_argument(parser)
    parser.add_argument("--json", action="store_true", help="print the status as one JSON object")
    args = parser.parse_args(argv)
    if args.wait < 0:
        raise UserError(f"--wait {args.wait:g} is negative", fix="give seconds >= 0, e.g. --wait 100")
    project = args.project.resolve()
    root = run_status.find_run(project, args.run_id)
    run_status.wait_for(root, args.wait)
    status = run_status.collect(root, project)
    if args.json:
        print(json.dumps(status.to_dict()))
    else:
        print(run_status.format_line(status))
        if status.error and status.state != "completed":
            print(f"  {status.error}")
        if status.state == "running":
            print("  " + run_status.wait_line(status.run_id))
        for line in status.resume:
            print("  " + line)
    return status.exit_status
