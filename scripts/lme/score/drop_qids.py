"""Un-complete chosen questions of a run so that a resume re-runs exactly those.

The command (its parser, ``main()`` and help text) is ``lme/cli/drop_qids.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from lme.core import fileio
from lme.store import run_store
from lme.core.errors import UserError
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
    known = known_ids(run_dir)  # once: each call loads every row of the run
    unknown = [q for q in wanted if q not in known]
    if unknown:
        raise UserError(
            f"{len(unknown)} id(s) not in run {Path(run_dir).name}: {', '.join(unknown)}",
            fix="check the ids (nothing was changed)",
        )
    result = run_store.rewrite_run(run_dir, wanted, label="drop")
    result["dropped"] = wanted
    return result
