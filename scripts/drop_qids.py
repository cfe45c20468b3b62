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
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import sys
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import checkpoint_io
from clock import utc_now, utc_stamp
import metrics
from checkpoint_io import COMPLETED_FILE, MANIFEST_FILE, RESULTS_FILE
from errors import UserError, run_main
from loop_guard import existing_run_dir


def known_ids(run_dir: Path) -> set[str]:
    """Ids the run covers: its manifest, plus any id that has a row or a mark."""
    ids: set[str] = set()
    manifest = Path(run_dir) / MANIFEST_FILE
    if manifest.exists():
        ids.update(str(i["question_id"]) for i in checkpoint_io.read_json(manifest, schema="manifest")["items"])
    ids.update(checkpoint_io.load_results(run_dir))
    ids.update(checkpoint_io.load_completed(run_dir))
    return ids


def failed_ids(run_dir: Path) -> list[str]:
    """Ids whose last row is wrong or an error (strict: anything not judged correct), in results order."""
    return [qid for qid, row in checkpoint_io.load_results(run_dir).items() if metrics.label_of_row(row) is not True]


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


def _jsonl_dirs(run_dir: Path) -> list[Path]:
    return [Path(run_dir), *sorted(p for p in Path(run_dir).glob(checkpoint_io.SHARD_GLOB) if p.is_dir())]


def _filtered_lines(path: Path, drop: set[str]) -> tuple[bytes, int]:
    """The file's complete lines without those of ``drop`` ids (raw bytes kept), and how many were removed."""
    if not path.exists():
        return b"", 0
    kept: list[bytes] = []
    removed = 0
    for raw in path.read_bytes().splitlines(keepends=True):
        if not raw.endswith(b"\n") or not raw.strip():
            continue  # a torn tail (no newline) is never a complete row
        try:
            qid = json.loads(raw).get("question_id")
        except (json.JSONDecodeError, AttributeError):
            kept.append(raw)  # not ours to judge: the readers report it
            continue
        if qid in drop:
            removed += 1
        else:
            kept.append(raw)
    return b"".join(kept), removed


def rewrite_run(
    run_dir: Path,
    drop: Iterable[str],
    *,
    add_rows: Sequence[Mapping] = (),
    add_completed: Sequence[str] = (),
    label: str,
) -> dict:
    """Remove ``drop`` ids from results and marks (all shards), then append ``add_rows`` / ``add_completed``.

    Holds the RunLock of every folder it rewrites (each ``shard-*``, then the run) from before the first read to
    after the last write, so no row a writer appends can be lost; a held lock is a UserError with nothing changed.
    Shards come first: a running shard holds its own folder's lock with its pid (the run's root it holds shared,
    without one), so the refusal names that pid. Backs both files up under
    ``backups/<label>-<UTC time>/`` first; every file is replaced atomically.
    Returns ``{"backup": path, "rows_removed": n, "marks_removed": n}``.
    """
    run_dir = Path(run_dir)
    drop = set(drop)
    stamp = utc_stamp(precise=True)
    backup = run_dir / "backups" / f"{label}-{stamp}"
    rows_removed = marks_removed = 0
    dirs = _jsonl_dirs(run_dir)
    with contextlib.ExitStack() as locks:
        for d in [*dirs[1:], dirs[0]]:
            locks.enter_context(checkpoint_io.RunLock(d))
        for d in dirs:
            for name in (RESULTS_FILE, COMPLETED_FILE):
                if (d / name).exists():
                    checkpoint_io.repair_tail(d / name)
                    target = backup / d.relative_to(run_dir) / name
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(d / name, target)
        for d in dirs:
            for name in (RESULTS_FILE, COMPLETED_FILE):
                blob, removed = _filtered_lines(d / name, drop)
                if d == run_dir and name == RESULTS_FILE:
                    blob += b"".join(_line(r) for r in add_rows)
                if d == run_dir and name == COMPLETED_FILE:
                    blob += b"".join(_line({"question_id": q, "at": utc_now()}) for q in add_completed)
                if removed or (d == run_dir and (add_rows or add_completed)):
                    checkpoint_io.write_atomic_bytes(d / name, blob)
                if name == RESULTS_FILE:
                    rows_removed += removed
                else:
                    marks_removed += removed
    return {"backup": str(backup), "rows_removed": rows_removed, "marks_removed": marks_removed}


def _line(obj: Mapping) -> bytes:
    return (json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


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
    result = rewrite_run(run_dir, wanted, label="drop")
    result["dropped"] = wanted
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--project", type=Path, default=Path.cwd(), help="project root (default: cwd)")
    parser.add_argument("--run-id", required=True, help="the run to edit (the loop's run id)")
    parser.add_argument("--from-file", type=Path, help="read ids from this file, one per line (# comments allowed)")
    parser.add_argument("--failed", action="store_true", help="drop every id whose last row is wrong or an error")
    parser.add_argument("qids", nargs="*", help="question ids to drop")
    args = parser.parse_args(argv)

    run_dir = existing_run_dir(args.project, args.run_id)
    ids = list(args.qids)
    if args.from_file:
        ids += read_id_file(args.from_file)
    if args.failed:
        ids += failed_ids(run_dir)
    result = drop_qids(run_dir, ids)
    print(json.dumps(result, indent=2))
    print(
        f"dropped {len(result['dropped'])} id(s) ({result['rows_removed']} rows, {result['marks_removed']} marks); "
        f"backup in {result['backup']}; resume the run to re-test them",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
