"""The dataset in the project's data folder: the shipped sample copied in, a LongMemEval file the user has checked
and used where it is (linked into the data folder when it lives elsewhere), a file with no official checksum
verified by its item fingerprints. Standard library only (setup runs before the venv)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO, Any

from lme.core import fileio
from lme.core.errors import UserError
from lme.core.facts import DATA_DIR, SAMPLE_FILE
from lme.core.project_folder import project_relative
from lme.core.setup_steps import Report
from lme.data import fingerprints, item_hash

SAMPLE_DATASET = Path(__file__).resolve().parents[3] / "data" / "sample" / SAMPLE_FILE
"""The synthetic sample the plugin ships (``devtools/sample_data.py`` writes it)."""


def install_sample(project: Path, report: Report) -> tuple[Path, int]:
    """Copy the shipped sample dataset into the project (byte-identical; skipped when already there)."""
    if not SAMPLE_DATASET.exists():
        raise UserError(f"the plugin's sample dataset is missing ({SAMPLE_DATASET})",
                        fix="reinstall the plugin or run python3 scripts/sample_data.py")
    target = project / DATA_DIR / SAMPLE_DATASET.name
    items = len(json.loads(SAMPLE_DATASET.read_text(encoding="utf-8")))
    if target.exists() and fileio.sha256_file(target, follow_symlinks=True) == fileio.sha256_file(SAMPLE_DATASET, follow_symlinks=True):
        report.add("dataset", f"sample already at {target}; nothing to do")
        return target, items
    fileio.make_dirs(target.parent)
    fileio.write_atomic_bytes(target, SAMPLE_DATASET.read_bytes())
    report.add("dataset", f"copied the {items}-item sample to {target}")
    return target, items


def _open_dataset(path: Path) -> IO[str]:
    if path.name.endswith(".xz"):
        import lzma
        return lzma.open(path, "rt", encoding="utf-8")
    if path.name.endswith(".gz"):
        import gzip
        return gzip.open(path, "rt", encoding="utf-8")
    return path.open(encoding="utf-8")


def check_local_dataset(path: Path, what: str = "--dataset", fix: str | None = None) -> dict[str, Any]:
    """``--dataset PATH``, checked before anything is written: a LongMemEval file (a JSON list of items with
    question_id, question, answer, haystack_sessions); returns its fingerprint record (``fingerprints.recognize``)."""
    path = path.expanduser()
    if not path.is_file():
        raise UserError(f"--dataset {path}: no such file" if not path.exists() else f"--dataset {path} is not a file",
                        fix="pass the path of a LongMemEval .json file, e.g. longmemeval_s_cleaned.json")
    try:
        with _open_dataset(path) as fh:
            data = json.load(fh)
    except (OSError, ValueError, EOFError) as err:
        raise UserError(f"{what} {path} is not a readable JSON file ({type(err).__name__}: {err})",
                        fix=fix or "pass a LongMemEval .json (or .json.xz/.json.gz) file") from None
    needed = ("question_id", "question", "answer", "haystack_sessions")
    if not isinstance(data, list) or not data or not all(isinstance(x, dict) and all(k in x for k in needed)
                                                         for x in data):
        raise UserError(f"{what} {path} is not a LongMemEval file (a JSON list of items with "
                        f"{', '.join(needed)})", fix=fix or "pass longmemeval_s_cleaned.json, _m or _oracle")
    hashes = {str(item["question_id"]): item_hash.item_sha256(item) for item in data}
    if len(hashes) != len(data):
        raise UserError(f"{what} {path} repeats question ids ({len(data) - len(hashes)} duplicates)",
                        fix=fix or "pass an unmodified LongMemEval file")
    return fingerprints.recognize_file(path, hashes, fileio.sha256_file(path, follow_symlinks=True))


def verify_by_fingerprints(path: Path, variant: str, release: str, *, digest: str | None = None) -> str:
    """A file with no official checksum (``_oracle``), checked item by item against the shipped fingerprints of
    that variant; without such a set (``_m``) only its sha256 is reported. UserError when it does not match."""
    if not any(ref.get("variant") == variant and ref.get("release") == release
               for ref in fingerprints.reference_sets()):
        return f"sha256 {digest or fileio.sha256_file(path, follow_symlinks=True)}; no official checksum or fingerprints known"
    record = check_local_dataset(path, "the dataset", "delete it and re-run to download it again")
    if record.get("variant") != variant or record.get("release") != release:
        raise UserError(f"{path} is not the {release} {variant} file: {record.get('summary')}",
                        fix="delete it and re-run to download it again")
    return f"fingerprints verified: {record.get('summary')}"


def adopt_dataset(project: Path, path: Path, record: dict[str, Any], report: Report) -> tuple[Path, str | None]:
    """Use the checked file: inside the project as it is, elsewhere through a link in ``data/`` (never a second
    copy of a 2.7 GB file). Returns (the path the config names, the variant its fingerprints say)."""
    path = path.expanduser().resolve()
    inside = project_relative(project, path) != str(path)
    target = path
    if not inside:
        target = project / DATA_DIR / path.name
        if target.is_symlink() and target.resolve() == path:
            pass
        elif target.exists() or target.is_symlink():
            raise UserError(f"{target} exists and is not a link to {path}",
                            fix="move it away, or pass --dataset that file")
        else:
            fileio.make_dirs(target.parent)
            target.symlink_to(path)
    variant = record.get("variant")
    report.add("dataset", f"{'using' if inside else 'linked'} {path}{'' if inside else f' as {target}'}: "
                          f"{record.get('summary') or 'not a known LongMemEval release'}")
    return target, variant
