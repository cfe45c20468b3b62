"""The rules of a run's state: a new run's manifest and run-meta, and when a run may be resumed or get a shard.

The files themselves are ``run_store``'s; ``run_benchmark`` drives items through them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from lme.core.clock import utc_now
from lme.core.endpoint_urls import redact
from lme.data import dataset
from lme.data import dataset_scans
from lme.data import fingerprints
from lme.run import meta_recovery
from lme.run import provenance
from lme.models import providers
from lme.store import run_store
from lme.core.errors import UserError
from lme.core.facts import OFFLINE, is_official_judge, is_offline
from lme.core.run_records import CodeVersion, DatasetInfo, JudgeIdentity, Manifest, RunMeta, TargetInfo, counts_of
from lme.run.settings import RunSettings, moved_target


# --------------------------------------------------------------------------- run-meta and manifest


def build_manifest(settings: RunSettings, on_item: Callable[[dict], None] | None = None
                   ) -> tuple[Manifest, dict[str, Any]]:
    """One streaming pass: the ids and types in dataset order, plus the dataset's sha256 and count (or the scan a
    run already made of this very file: ``dataset_scans``, unless ``on_item`` must see every item of the pass)."""
    known = None if on_item is not None else dataset_scans.load(settings.cache_dir, settings.dataset_path)
    if known is not None:
        return Manifest.from_dict(known[0]), known[1]
    info = dataset.scan(Path(settings.dataset_path), on_item)
    manifest = Manifest.of(info.questions)
    described = {"path": settings.dataset_path, "sha256": info.sha256, "items": info.items, **_file_stamp(settings),
                 **describe_content(settings.dataset_path, info)}
    return manifest, described


def describe_content(path: str, info: dataset.DatasetScan) -> dict[str, Any]:
    """What the file's items are: the release they match (by fingerprint) and the duplicated sessions (#54)."""
    recognition = fingerprints.recognize_file(path, info.item_sha256, info.sha256)
    return {"release": recognition["release"], "recognition": recognition,
            "duplicate_sessions": {q: list(s) for q, s in sorted(info.duplicate_sessions.items())}}


def _file_stamp(settings: RunSettings) -> dict[str, int]:
    """Size and mtime of the dataset file: a resume re-hashes the file only when these changed."""
    st = Path(settings.dataset_path).stat()
    return {"file_bytes": st.st_size, "file_mtime_ns": st.st_mtime_ns}


def _stored_settings_conflicts(meta: RunMeta, settings: RunSettings, ds: dict[str, Any]) -> list[str]:
    """A resumed run must keep what makes its rows comparable: dataset, target, judge."""
    problems = []
    target, judge = meta.target, meta.judge
    if meta.dataset.sha256 != ds["sha256"]:
        problems.append(f"dataset sha256 {ds['sha256'][:12]} != the run's {str(meta.dataset.sha256)[:12]}")
    if (target.name, target.provider, target.model) != (
        settings.target, settings.target_provider, settings.target_model
    ):
        problems.append(
            f"target {settings.target} {settings.target_provider}:{settings.target_model} != the run's "
            f"{target.name} {target.provider}:{target.model}"
        )
    if dict(target.options or {}) != dict(settings.target_options):
        problems.append(f"target options {dict(settings.target_options)} != the run's {target.options}")
    if (judge.provider, judge.model) != (settings.judge_provider, settings.judge_model):
        problems.append(
            f"judge {settings.judge_provider}:{settings.judge_model} != the run's "
            f"{judge.provider}:{judge.model}"
        )
    stored_template = (meta.provenance.get("prompt_hashes") or {}).get("judge_template_sha256")
    if not is_offline(settings.judge_provider) and stored_template:
        current = provenance.judge_template_sha256(settings.longmemeval_root)
        if current != stored_template:
            problems.append(f"judge prompt file {provenance.judge_template_path(settings.longmemeval_root)} "
                            f"(sha256 {str(current)[:12]}) is not the one the run used ({stored_template[:12]})")
    return problems


def _shard_layout_conflicts(root: Path, shard: tuple[int, int] | None) -> list[str]:
    """A run is sharded (every writer with --shard i/n, one n) or not; the two never mix."""
    shard_dirs = [p.name for p in run_store.shard_dirs(root)]
    if shard is None:
        return [f"the run is sharded ({', '.join(shard_dirs)}): resume each shard with --shard i/n"] if shard_dirs else []
    problems = []
    if run_store.has_rows(root):
        problems.append("the run was started without --shard: resume it without --shard")
    other_n = {d for d in shard_dirs if not d.endswith(f"of{shard[1]}")}
    if other_n:
        problems.append(f"the run is sharded differently ({', '.join(sorted(other_n))}): use the same n")
    return problems


def new_meta(run_id: str, settings: RunSettings, ds: dict[str, Any], code: CodeVersion | None = None) -> RunMeta:
    """A new run's run-meta; ``code``: the fingerprint of its target's code (``code_version``), whose digest is the
    provenance's ``target_source_sha256``."""
    prov = provenance.describe(Path(settings.project), code, settings.longmemeval_root)
    return RunMeta(
        runId=run_id,
        status="running",
        started_at=utc_now(),
        finished_at=None,
        duration_seconds=0.0,
        variant=settings.variant,
        dataset=DatasetInfo.from_dict(ds),
        target=TargetInfo(name=settings.target, provider=settings.target_provider, model=settings.target_model,
                          options=dict(settings.target_options)),
        judge=JudgeIdentity(provider=settings.judge_provider, model=settings.judge_model,
                            official=is_official_judge(settings.judge_provider, settings.judge_model)),
        plugin_version=prov["plugin_version"],
        project_git_commit=prov["project_git_commit"],
        error=None,
        provenance=prov,
        endpoints=endpoints(settings),
        settings=recorded_settings(settings),
        shard=None if settings.shard is None else f"{settings.shard[0]}/{settings.shard[1]}",
        invocations=(),
    )


def endpoints(settings: RunSettings) -> dict[str, str]:
    """Where each provider's calls go, as the SDK client resolves it: the config's base_url, else the SDK's
    environment variable, else the SDK's default host (``https://api.openai.com/v1/``), credentials redacted. No
    call is made. Every invocation records its own (a resume through a proxy says so); a successor's provider too.

    Recorded because a judge behind a proxy or another host is not the official judge, whatever it is called.
    """
    settings_for_sdk = providers.ProviderSettings(base_urls=dict(settings.base_urls), azure=dict(settings.azure))
    out = {}
    successor = settings.successor
    named = {settings.target_provider, settings.judge_provider, *([successor[0]] if successor else [])}
    for provider in sorted(named - {OFFLINE}):
        out[provider] = providers.shown_base_url(provider, settings_for_sdk) or "unknown"
    return out


def recorded_settings(settings: RunSettings) -> dict[str, Any]:
    """``settings.to_dict()`` as run-meta keeps it: base URLs and the Azure endpoint without credentials (a resume
    takes them from the config, never from here)."""
    d = settings.to_dict()
    d["base_urls"] = {name: redact(url) for name, url in d["base_urls"].items()}
    if d["azure"].get("endpoint"):
        d["azure"] = {**d["azure"], "endpoint": redact(d["azure"]["endpoint"])}
    d.pop("official_judge_gone", None)  # this invocation's finding, in its invocations entry
    d.pop("max_given", None)  # how this invocation was asked, not how the run was made
    return d


LoopCheck = Callable[[RunSettings, int], "list[str]"]
"""The loop's hard rules for a ``--loop`` run (``lme.loop.rules.check_settings``): the settings and the dataset's
question count in, the problems out. The command hands it over; the run stage never imports the loop."""


def open_run(settings: RunSettings, run_id: str, root: Path, work: Path,
             scanned: tuple[Manifest, dict[str, Any]] | None,
             loop_check: LoopCheck | None = None, code: CodeVersion | None = None) -> tuple[RunMeta, Manifest]:
    """Load or create run-meta and the manifest; refuse a resume whose dataset, target, options or judge changed.
    ``code``: the invocation's code fingerprint (a new run's meta records its digest).

    A shard also checks the run's root meta, which the first shard writes, so shards of one run agree.
    """
    meta, manifest = check_run(settings, run_id, root, work, scanned, loop_check, code)
    meta_recovery.keep_broken(work)  # a broken run-meta the resume may replace (its rows allowed it): kept aside
    if not run_store.has_meta(root) or not run_store.manifest_path(root).exists():
        run_store.write_manifest(root, manifest)  # a new run's item set (a start that crashed may have left one)
    return meta, manifest


def check_run(settings: RunSettings, run_id: str, root: Path, work: Path,
              scanned: tuple[Manifest, dict[str, Any]] | None,
              loop_check: LoopCheck | None = None, code: CodeVersion | None = None) -> tuple[RunMeta, Manifest]:
    """``open_run``'s refusals and the (meta, manifest) it would use, writing nothing: a caller that starts the
    run in another process (``--background``) runs them first, so a mistake is refused where the user sees it.
    A ``--loop`` run is refused without its ``loop_check`` (fail closed)."""
    run_store.refuse_links(root)  # a planted link: one line, before any lock or read
    for _ in run_store.iter_rows(root):  # a corrupt log too (validated lines are remembered: the next read is cheap)
        pass
    layout = _shard_layout_conflicts(root, settings.shard)
    if layout:
        raise UserError(f"cannot write run {run_id} this way: " + "; ".join(layout))
    meta_recovery.check(settings, run_id, code)  # no readable run-meta: only the settings its rows recorded
    meta_dir = meta_recovery.meta_dir(settings, root)  # a new shard: the run's own settings are in the root meta
    meta = None if meta_recovery.lost_meta(meta_dir) else _target_moved(run_store.read_meta(meta_dir), settings)
    manifest, ds = _run_items(settings, meta, root, scanned)
    new_shard = meta_dir != work  # its meta is made new; the root's settings must still be the run's
    conflicts = [] if meta is None else _stored_settings_conflicts(meta, settings, ds)
    if conflicts and new_shard:
        raise UserError(f"cannot add a shard to run {run_id}: " + "; ".join(conflicts),
                        fix="use the run's own settings for every shard")
    if conflicts:
        raise UserError(f"cannot resume run {run_id}: " + "; ".join(conflicts),
                        fix="resume with the run's own settings, or start a new run (omit --run-id)")
    meta = new_meta(run_id, settings, ds, code) if meta is None or new_shard else _followed(meta, settings, ds)
    refuse_another_item_set(settings, run_id, manifest, ds)
    if settings.loop:
        loop_guard_check(settings, int(ds.get("items") or manifest.n_total), loop_check)
    return meta, manifest


_MOVABLE = ("project", "dataset_path", "longmemeval_root", "runs_dir", "cache_dir")
"""Recorded settings that say where files are, not what the run is: a resume records where they are now."""


def _followed(meta: RunMeta, settings: RunSettings, ds: dict[str, Any]) -> RunMeta:
    """A resumed run's meta with its files where this resume found them (a moved project, a dataset given again by
    ``--dataset``): the same content, its sha256 checked above."""
    if meta.dataset.path == ds.get("path") and meta.project == settings.project:
        return meta
    now = recorded_settings(settings)
    return meta.with_(dataset=meta.dataset.updated(path=ds["path"], **_file_stamp(settings)),
                      settings={**meta.settings, **{k: now[k] for k in _MOVABLE if k in meta.settings}})


def _target_moved(meta: RunMeta, settings: RunSettings) -> RunMeta:
    """The run's target as this resume resolves it: its files inside a moved project at their new place."""
    name, options = moved_target(meta.target.name, meta.target.options or {}, meta.project, Path(settings.project))
    if (name, options) == (meta.target.name, dict(meta.target.options or {})):
        return meta
    return meta.with_(target=meta.target.updated(name=name, options=options))


def _run_items(settings: RunSettings, meta: RunMeta | None, root: Path,
               scanned: tuple[Manifest, dict[str, Any]] | None) -> tuple[Manifest, dict[str, Any]]:
    """The run's item set (its manifest) and what its dataset file is. A new run covers the first ``max_evals``
    items of the dataset, chosen once; a resume keeps its stored manifest (the dataset is scanned again only when
    the file's size or mtime changed, to check its sha256)."""
    stored = {} if meta is None else meta.dataset.to_dict()
    unchanged = stored.get("path") == settings.dataset_path and all(
        stored.get(k) == v for k, v in _file_stamp(settings).items()
    )
    kept = meta is not None or next(iter(run_store.iter_rows(root)), None) is not None  # rows: its items were chosen
    manifest = run_store.read_manifest(root) if kept and run_store.manifest_path(root).exists() else None
    if manifest is not None and unchanged:
        return manifest, dict(stored)
    scan, ds = scanned or build_manifest(settings)
    if manifest is None:  # a new run (or one whose manifest is gone: the whole file, as it was written then)
        manifest = scan.first(settings.max_evals) if meta is None else scan
    return manifest, ds


def item_set_conflict(settings: RunSettings, manifest: Manifest, dataset_items: int | None) -> str | None:
    """Why an explicit ``--max`` on a resume names another item set than the run's own (None: it does not, or
    none was given). A run's items are chosen once, when it starts, so every resume finishes exactly them."""
    if not settings.max_given:
        return None
    wanted = min(settings.max_evals, dataset_items or manifest.n_total)
    if wanted == manifest.n_total:
        return None
    return (f"--max {settings.max_evals} would make it {wanted} items, but the run covers the {manifest.n_total} "
            "chosen when it started (a run's items are fixed then; a resume finishes them)")


def refuse_another_item_set(settings: RunSettings, run_id: str, manifest: Manifest, ds: dict[str, Any]) -> None:
    problem = item_set_conflict(settings, manifest, int(ds.get("items") or 0) or None)
    if problem:
        raise UserError(f"cannot resume run {run_id}: {problem}",
                        fix=f"drop --max to finish this run's items, or start a new run (omit --run-id) with "
                            f"--max {settings.max_evals}")


def check_resume_max(settings: RunSettings, run_id: str | None) -> None:
    """``refuse_another_item_set`` for ``run_id`` when it names an existing run, before anything else runs
    (the dry run, the cost gate): reads its run-meta and manifest only."""
    if not run_id or not settings.max_given:
        return
    root = run_store.run_dir_for(Path(settings.runs_dir), run_store.validate_run_id(run_id))
    meta_dir = root if run_store.has_meta(root) else run_store.shard_dir(root, settings.shard)
    if meta_recovery.lost_meta(meta_dir) or not run_store.manifest_path(root).exists():
        return  # no readable run-meta: the resume's own check (meta_recovery) speaks first
    meta = run_store.read_meta(meta_dir)
    refuse_another_item_set(settings, run_id, run_store.read_manifest(root), meta.dataset.to_dict())


def needs_scan(settings: RunSettings, run_id: str | None) -> bool:
    """A run that ``run_driver.execute`` would start by scanning the dataset: a new run on a file with no stored
    scan (``dataset_scans``)."""
    if run_id and run_store.run_dir_for(Path(settings.runs_dir), run_store.validate_run_id(run_id)).exists():
        return False
    return dataset_scans.load(settings.cache_dir, settings.dataset_path) is None


def scan_new_run(settings: RunSettings, on_item: Callable[[dict], None] | None = None
                 ) -> tuple[Manifest, dict[str, Any]]:
    """Validate the whole dataset before a new run's directory exists: a bad file leaves nothing behind.
    ``on_item``: see ``build_manifest``."""
    manifest, ds = build_manifest(settings, on_item)
    if manifest.n_total == 0:
        raise UserError(f"dataset {settings.dataset_path} has no items", fix="point datasetPath at a LongMemEval file")
    return manifest, ds


def loop_guard_check(settings: RunSettings, dataset_items: int, loop_check: LoopCheck | None) -> None:
    """The loop's rules on the run: ``dataset_items``, the dataset's size (a run's item set may be fewer)."""
    problems = ["the loop's rules were not handed to this run"] if loop_check is None else \
        loop_check(settings, dataset_items)
    if problems:
        raise UserError("loop mode refuses this run: " + "; ".join(problems), fix="see references/iteration-rules.md")


def update_root_meta(root: Path, manifest: Manifest) -> None:
    """With shards, the root run-meta summarises the shards' metas: the worst status, counts over all shards."""
    with run_store.RunLock(root, name=run_store.META_LOCK_FILE, wait=True):
        metas = run_store.shard_metas(root)
        if not metas:
            return
        order = {"failed": 0, "interrupted": 1, "paused": 2, "running": 3, "completed": 4}
        completed = run_store.load_completed(root)
        summary = metas[0].with_(
            status=min((m.status for m in metas), key=lambda s: order[s]),
            shard=None,
            shards={m.shard: m.status for m in metas},
            duration_seconds=max(float(m.duration_seconds or 0) for m in metas),
            error="; ".join(m.error for m in metas if m.error) or None,
            invocations=(),
            counts=counts_of(manifest, manifest.question_ids, completed),
        )
        run_store.write_meta(root, summary)
