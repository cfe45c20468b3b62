"""Keep or revert a fix: compare the pre-fix snapshot with the post-fix run and apply the loop's decision table.

    net = fixes - regressions (strict, per question, snapshot -> run)
    net >= +1              keep
    net in {0, -1}         keep only with --reusable (infrastructure other fixes build on); else revert
    net <= -2              revert, however right the fix feels

A flip on an item whose judge label is unstable (its repeated verdicts disagree, or the project's
judge-stability.jsonl marks that exact prompt flaky) is noise: the decision uses the net without such flips,
and the record and the printed line name them (never hidden).

With --apply, a revert restores the snapshot's rows and completed marks for every re-tested question (under the
run lock, atomically, with a backup), runs ``git revert --no-edit <fix commit>`` on the loop branch, and rewrites
the run's scorecard. Every decision is appended to ``.longmemeval-benchmarks/decisions.jsonl``.

Usage:
    python scripts/decide.py --snapshot v3 --run-id longmemeval-iter --fix-commit abc1234
    python scripts/decide.py --snapshot v3 --run-id longmemeval-iter --fix-commit abc1234 --apply
    python scripts/decide.py --snapshot v3 --run-id longmemeval-iter --reusable --apply --json
"""

from __future__ import annotations

import entry_guard  # first: the venv check and a clean Ctrl-C (see its docstring)

entry_guard.start(__name__)

import argparse
import json
import sys
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any, Mapping, Sequence

import cli_parser
import compare_runs
import fileio
import loop_git
import loop_state
import report_outputs
import run_store
from clock import utc_now
from errors import UserError, run_main
from facts import DECISIONS_FILE
from loop_rules import assert_on_loop_branch
from run_records import ResultRow


def decide(net: int, reusable: bool) -> str:
    """The decision table: ``keep`` or ``revert``."""
    if net >= 1:
        return "keep"
    if net >= -1:
        return "keep" if reusable else "revert"
    return "revert"


def retested_ids(snapshot_rows: Mapping[str, ResultRow], run_rows: Mapping[str, ResultRow]) -> list[str]:
    """Ids whose last row changed since the snapshot (the ones the fix's re-run touched)."""
    ids = list(dict.fromkeys([*snapshot_rows, *run_rows]))
    return [q for q in ids if snapshot_rows.get(q) != run_rows.get(q)]


def readiness_problems(snapshot_rows: Mapping[str, ResultRow], run_rows: Mapping[str, ResultRow]) -> list[str]:
    """Why the run is not ready to be judged against the snapshot: items not re-run yet, or re-run into errors."""
    missing = [q for q in snapshot_rows if q not in run_rows]
    errored = [
        q for q, row in run_rows.items()
        if row.status == "error" and q in snapshot_rows and snapshot_rows[q].judged
    ]
    problems = []
    if missing:
        problems.append(f"{len(missing)} item(s) have no row yet (e.g. {', '.join(missing[:3])})")
    if errored:
        problems.append(f"{len(errored)} re-tested item(s) ended in an error row (e.g. {', '.join(errored[:3])})")
    return problems


def append_decision(project: Path, record: Mapping[str, Any]) -> Path:
    """Append one JSON line to decisions.jsonl, fsynced (the file only grows; a torn last line is cut first)."""
    path = Path(project) / DECISIONS_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    line = (json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")
    fileio.append_jsonl(path, record, line=line)
    return path


def restore_from_snapshot(snapshot_dir: Path, run_dir: Path, ids: Sequence[str]) -> dict:
    """Put the snapshot's last rows and marks for ``ids`` back into the run (ids without a snapshot row vanish)."""
    snap_rows = run_store.load_results(snapshot_dir)
    snap_done = run_store.load_completed(snapshot_dir)
    add_rows = [snap_rows[q] for q in ids if q in snap_rows]
    add_completed = [q for q in ids if q in snap_done and q in snap_rows and snap_rows[q].label is not None]
    return run_store.rewrite_run(run_dir, ids, add_rows=add_rows, add_completed=add_completed, label="revert")


def rescore(project: Path, run_id: str) -> None:
    """Rewrite the run's metrics.json/scorecard.md after its rows changed (scorecard output goes to stderr)."""
    with redirect_stdout(sys.stderr):
        report_outputs.score_project_run(Path(project), run_id, charts=False)


def run_decision(
    project: Path,
    snapshot: str,
    run_id: str,
    *,
    reusable: bool = False,
    fix_commit: str | None = None,
    apply: bool = False,
    allow_errors: bool = False,
) -> dict[str, Any]:
    """Compare, decide, optionally apply, and log. Returns the decision record."""
    project = Path(project)
    round_no = loop_state.parse_snapshot(snapshot)
    snap_dir = loop_state.snapshot_dir(project, round_no)
    if not snap_dir.is_dir():
        raise UserError(f"no snapshot v{round_no} at {snap_dir}", fix="take it with rounds.py snapshot before the fix")
    run_dir = run_store.existing_run_dir(project, run_id)
    snap_rows = run_store.load_results(snap_dir)
    run_rows = run_store.load_results(run_dir)
    problems = readiness_problems(snap_rows, run_rows)
    if problems and not allow_errors:
        raise UserError(
            f"run {run_id} is not ready to judge the fix: {'; '.join(problems)}",
            fix="resume the run (parallel_longmemeval.sh) until every item is judged, or pass --allow-errors",
        )
    comparison = compare_runs.compare(snap_dir, run_dir)
    net = int(comparison["net"])
    flaky = comparison["flaky_flips"]
    decision = decide(int(comparison["net_excluding_flaky"]), reusable)  # a flip of an unstable label is noise
    changed_ids = retested_ids(snap_rows, run_rows)
    record: dict[str, Any] = {
        "at": utc_now(),
        "round": round_no,
        "snapshot": f"v{round_no}",
        "run_id": run_id,
        "fix_commit": fix_commit,
        "reusable": reusable,
        "fixes": comparison["fixes"],
        "regressions": comparison["regressions"],
        "net": net,
        "flaky_flips": flaky,
        "net_excluding_flaky": comparison["net_excluding_flaky"],
        "p_value": comparison["p_value"],
        "per_type_net": {t: b["net"] for t, b in comparison["per_type"].items() if b["n"]},
        "retested": len(changed_ids),
        "decision": decision,
        "applied": False,
        "revert_commit": None,
        "readiness_problems": problems,
    }
    if apply and decision == "revert":
        if not fix_commit:
            raise UserError("a revert needs the fix commit", fix="pass --fix-commit <sha> (git log --oneline)")
        assert_on_loop_branch(project=project)
        record["revert_commit"] = loop_git.revert(fix_commit, project=project)
        restored = restore_from_snapshot(snap_dir, run_dir, changed_ids)
        record["restored_ids"] = changed_ids
        record["backup"] = restored["backup"]
        rescore(project, run_id)
    record["applied"] = bool(apply)
    append_decision(project, record)
    return record


def describe(record: Mapping[str, Any]) -> str:
    verdict = record["decision"].upper()
    line = (
        f"{verdict}: net {record['net']:+d} (fixes {record['fixes']}, regressions {record['regressions']}, "
        f"McNemar p={record['p_value']:.3g}) vs snapshot {record['snapshot']}"
    )
    flaky = record.get("flaky_flips") or {}
    if flaky.get("ids"):
        line += (f"; decided on net {record['net_excluding_flaky']:+d} without {len(flaky['ids'])} flip(s) of "
                 f"unstable judge labels ({', '.join(flaky['ids'])})")
    if record["decision"] == "keep" and record.get("net_excluding_flaky", record["net"]) < 1:
        line += " — kept only because --reusable"
    if record["applied"] and record["decision"] == "revert":
        line += f"; reverted {record['fix_commit']} ({record['revert_commit']}), restored {record['retested']} item(s)"
    elif not record["applied"] and record["decision"] == "revert":
        line += "; run again with --apply --fix-commit <sha> to revert"
    return line


def main(argv: Sequence[str] | None = None) -> int:
    parser = cli_parser.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--project", type=Path, default=Path.cwd(), help="project root (default: cwd)")
    parser.add_argument("--snapshot", required=True, help="the pre-fix snapshot, v<ROUND> (rounds.py snapshot)")
    parser.add_argument("--run-id", required=True, help="the post-fix run (the loop's run id)")
    parser.add_argument("--reusable", action="store_true", help="the fix is infrastructure later fixes reuse: keep at net 0 or -1")
    parser.add_argument("--fix-commit", help="the fix's commit sha (needed to revert)")
    parser.add_argument("--apply", action="store_true", help="carry out a revert: restore snapshot verdicts, git revert")
    parser.add_argument("--allow-errors", action="store_true", help="decide although re-tested items ended in errors (they count as wrong)")
    parser.add_argument("--json", action="store_true", help="print the decision record as JSON")
    args = parser.parse_args(argv)
    record = run_decision(
        args.project, args.snapshot, args.run_id, reusable=args.reusable, fix_commit=args.fix_commit,
        apply=args.apply, allow_errors=args.allow_errors,
    )
    print(json.dumps(record, indent=2, sort_keys=True) if args.json else describe(record))
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
