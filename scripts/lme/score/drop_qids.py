"""Un-complete chosen questions of a run so that a resume re-runs exactly those.

Removes every result row and every completed mark of the named question ids, atomically and under the locks of
the run and of each of its shards (a running writer is refused, named by pid), after copying both files to
``<run>/backups/drop-<UTC time>/``. The next ``run_benchmark.py --run-id R``
re-runs exactly those ids (plus any item that had no judged row already). Unknown ids are refused, all named,
and nothing is written.

Usage:
    python scripts/drop_qids.py --run-id longmemeval-iter 0a995998 gpt4_2655b836
    python scripts/drop_qids.py --run-id longmemeval-iter --from-file trigger_set.txt
    python scripts/drop_qids.py --run-id longmemeval-iter --failed        # every wrong or error item

In the loop (the project has a round counter), ``--from-file`` with a trigger-set file also records which ids are
the cluster's failing items and which the control sample (``trigger_set.py``) in
``.longmemeval-benchmarks/retest.json``, for ``decide.py``.
"""

from __future__ import annotations

from lme.core import entry_guard  # first: the venv check and a clean Ctrl-C (see its docstring)

entry_guard.start(__name__)

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

from lme.core import cli_parser
from lme.core import fileio
from lme.store import run_store
from lme.score import trigger_set
from lme.core.errors import UserError, run_main
from lme.core.facts import ROUND_FILE

def known_ids(run_dir: Path) -> set[str]:
    """Ids the run covers: its manifest, plus any id that has a row or a mark."""
    ids: set[str] = set()
    manifest = run_store.read_manifest(run_dir)
    if manifest is not None:
        ids.update(manifest.question_ids)
    ids.update(run_store.load_results(run_dir))
    ids.update(run_store.load_completed(run_dir))
    return ids


def failed_ids(run_dir: Path) -> list[str]:
    """Ids whose last row is wrong or an error (strict: anything not judged correct), in results order."""
    return [qid for qid, row in run_store.load_results(run_dir).items() if not row.correct]


def loop_round(project: Path) -> int:
    """The loop's round counter (``rounds.py``'s ``.max_effort_round``): read small, never through a link."""
    text = fileio.read_text(Path(project) / ROUND_FILE, max_bytes=64).strip() or "0"
    if not text.isdigit():
        raise UserError(f"{Path(project) / ROUND_FILE} holds {text[:20]!r}, not a round number",
                        fix="restore it from git history")
    return int(text)


def read_id_file(path: Path) -> list[str]:
    """One id per line; blank lines and ``#`` comments are skipped."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as err:
        raise UserError(f"cannot read id file {path}: {err.strerror}", fix="pass a file with one question id per line")
    except UnicodeDecodeError as err:
        raise UserError(
            f"id file {path} is not UTF-8 text (byte {err.start})", fix="pass a text file with one question id per line"
        ) from None
    return [line.split("#", 1)[0].strip() for line in lines if line.split("#", 1)[0].strip()]


def drop_qids(run_dir: Path, ids: Sequence[str]) -> dict:
    """Drop exactly ``ids`` from the run so a resume re-runs them; unknown ids are a UserError naming them all."""
    wanted = list(dict.fromkeys(ids))
    if not wanted:
        raise UserError("no question ids to drop", fix="name ids, or use --from-file / --failed")
    unknown = [q for q in wanted if q not in known_ids(run_dir)]
    if unknown:
        raise UserError(
            f"{len(unknown)} id(s) not in run {Path(run_dir).name}: {', '.join(unknown)}",
            fix="check the ids (nothing was changed)",
        )
    result = run_store.rewrite_run(run_dir, wanted, label="drop")
    result["dropped"] = wanted
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = cli_parser.ArgumentParser(loop_command=True, description=__doc__,
                                       formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--project", type=Path, default=Path.cwd(), help="project root (default: cwd)")
    parser.add_argument("--run-id", required=True, help="the run to edit (the loop's run id)")
    parser.add_argument("--from-file", type=Path, help="read ids from this file, one per line (# comments allowed)")
    parser.add_argument("--failed", action="store_true", help="drop every id whose last row is wrong or an error")
    parser.add_argument("qids", nargs="*", help="question ids to drop")
    args = parser.parse_args(argv)

    run_dir = run_store.existing_run_dir(args.project, args.run_id)
    ids = list(args.qids)
    parts = None
    if args.from_file:
        ids += read_id_file(args.from_file)
        parts = trigger_set.parse(Path(args.from_file).read_text(encoding="utf-8"))
    if args.failed:
        ids += failed_ids(run_dir)
    result = drop_qids(run_dir, ids)
    round_file = Path(args.project) / ROUND_FILE
    if parts is not None and round_file.exists():
        round_no = loop_round(args.project)
        extra = tuple(q for q in result["dropped"] if q not in parts.ids)
        recorded = trigger_set.TriggerSet(parts.failing + extra, parts.control)
        result["retest"] = str(trigger_set.record_retest(args.project, recorded, run_id=args.run_id,
                                                         round_no=round_no))
        print(f"re-test set of round v{round_no}: {len(recorded.failing)} failing + {len(recorded.control)} "
              f"control item(s)" + ("" if recorded.control else
                                    " (no control items: regressions outside the set go unseen; "
                                    "cluster_failures.py --ids N --out adds them)"), file=sys.stderr)
    print(json.dumps(result, indent=2))
    print(
        f"dropped {len(result['dropped'])} id(s) ({result['rows_removed']} rows, {result['marks_removed']} marks); "
        f"backup in {result['backup']}; resume the run to re-test them",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
