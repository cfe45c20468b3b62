"""Which code made a run's rows, and what differs between the code of two runs.

Each row carries the id of the code that made it (``ResultRow.code``); each invocation's run-meta entry holds the
full record (``CodeVersion``: every fingerprinted file and its sha256). From them: a run's versions, how many of its
rows each made and which files changed between them (``summary``: metrics.json's ``code_versions``, a line on the
scorecard and the page, a comparability note when there is more than one), and, for two runs, which files differ
(``change``: the comparison's ``code``, the line ``run_differences`` prints, the loop's decision). Rows made before
rows carried their code count as unknown: nothing here ever calls unknown code the same.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence

from lme.core.run_records import CodeVersion, FileChanges, ResultRow, RunMeta
from lme.score.comparison_record import CodeChange
from lme.score.scorecard_record import CodeVersions, VersionRows
from lme.store import run_store
from lme.store.run_store import RunData


def records(run: RunData) -> dict[str, CodeVersion]:
    """Every recorded version of the run's code by id, in the order its invocations ran them (the run's own
    run-meta, then each shard's: a sharded run's root keeps none)."""
    metas: list[RunMeta] = [run.meta, *run_store.shard_metas(run.path)]
    out: dict[str, CodeVersion] = {}
    for meta in metas:
        for invocation in meta.invocations:
            version = invocation.code_version
            if version is not None and version.id is not None:
                out.setdefault(version.id, version)
    return out


def summary(run: RunData, rows: Iterable[ResultRow]) -> CodeVersions | None:
    """The versions that made ``rows`` (a run's scored rows) with their counts; None when no row and no invocation
    recorded its code (a run made before either did)."""
    known = records(run)
    counts: dict[str | None, int] = {}
    for row in rows:
        counts[row.code] = counts.get(row.code, 0) + 1
    if not counts or (not known and set(counts) == {None}):
        return None
    order = [i for i in known if i in counts] + [i for i in counts if i not in known and i is not None]
    if None in counts:
        order.append(None)
    versions, previous = [], None
    for code_id in order:
        record = known.get(code_id) if code_id is not None else None
        changes = previous.changes_to(record) if previous is not None and record is not None else None
        versions.append(VersionRows(code_id, counts[code_id], None if record is None else len(record.files), changes))
        previous = record or previous
    return CodeVersions(tuple(versions))


def change(a: RunData, b: RunData, ids: Sequence[str]) -> CodeChange | None:
    """What differs between the code that made run ``a``'s and run ``b``'s rows of the items ``ids`` (the items
    a comparison compares); None when neither run recorded any code (runs made before rows carried it)."""
    side_a = summary(a, [a.rows[q] for q in ids if q in a.rows])
    side_b = summary(b, [b.rows[q] for q in ids if q in b.rows])
    if side_a is None and side_b is None:
        return None
    before = () if side_a is None else side_a.versions
    after = () if side_b is None else side_b.versions
    unknown = not before or not after or any(v.id is None for v in (*before, *after))
    ids_a, ids_b = {v.id for v in before}, {v.id for v in after}
    same = None if unknown else (ids_a == ids_b and len(ids_a) == 1)
    files = _files_between(records(a), ids_a, records(b), ids_b)
    return CodeChange(same=same, before=before, after=after, files=files)


def _files_between(known_a: Mapping[str, CodeVersion], ids_a: set, known_b: Mapping[str, CodeVersion],
                   ids_b: set) -> FileChanges:
    """Per path, the contents each side's versions hold: changed when both hold it with other contents."""
    def contents(known: Mapping[str, CodeVersion], ids: set) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for code_id in ids:
            for path, sha in (known[code_id].files.items() if code_id in known else ()):
                out.setdefault(path, set()).add(sha)
        return out

    ca, cb = contents(known_a, ids_a), contents(known_b, ids_b)
    if not ca or not cb:  # a side's files are not recorded: nothing to say about them
        return FileChanges()
    return FileChanges(changed=tuple(sorted(p for p in ca if p in cb and ca[p] != cb[p])),
                       added=tuple(sorted(p for p in cb if p not in ca)),
                       removed=tuple(sorted(p for p in ca if p not in cb)))
