"""A run's state on disk: the manifest, run-meta, and the rules for resuming a run or adding a shard to it.

Everything here reads or writes files under ``runs/<runId>/``; ``run_benchmark`` drives items through it.
"""

from __future__ import annotations

import zlib
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import checkpoint_io
import dataset
import run_settings
from errors import UserError
from records import SCHEMA_VERSION, is_official_judge
from run_settings import RunSettings


def utcnow() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def official_judge(provider: str, model: str) -> bool:
    return is_official_judge(provider, model)


def in_shard(question_id: str, shard: tuple[int, int] | None) -> bool:
    """Deterministic, process-independent assignment of an item to shard i of n (crc32 of the id)."""
    if shard is None:
        return True
    i, n = shard
    return zlib.crc32(question_id.encode("utf-8")) % n == i - 1


def shard_dir(root: Path, shard: tuple[int, int] | None) -> Path:
    return root if shard is None else root / f"shard-{shard[0]}of{shard[1]}"


# --------------------------------------------------------------------------- run-meta and manifest


def build_manifest(settings: RunSettings) -> tuple[dict[str, Any], dict[str, Any]]:
    """One streaming pass: the ids and types in dataset order, plus the dataset's sha256 and count (or the scan a
    run already made of this very file: ``dataset_scans``)."""
    import dataset_scans

    known = dataset_scans.load(settings.cache_dir, settings.dataset_path)
    if known is not None:
        return known
    info = dataset.scan(Path(settings.dataset_path))
    items = [{"question_id": qid, "question_type": qtype} for qid, qtype in info.questions]
    manifest = {"schemaVersion": SCHEMA_VERSION, "n_total": len(items), "items": items}
    described = {"path": settings.dataset_path, "sha256": info.sha256, "items": info.items, **_file_stamp(settings),
                 **describe_content(settings.dataset_path, info)}
    return manifest, described


def describe_content(path: str, info: dataset.DatasetInfo) -> dict[str, Any]:
    """What the file's items are: the release they match (by fingerprint) and the duplicated sessions (#54)."""
    import fingerprints

    recognition = fingerprints.recognize_file(path, info.item_sha256, info.sha256)
    return {"release": recognition["release"], "recognition": recognition,
            "duplicate_sessions": {q: list(s) for q, s in sorted(info.duplicate_sessions.items())}}


def _file_stamp(settings: RunSettings) -> dict[str, int]:
    """Size and mtime of the dataset file: a resume re-hashes the file only when these changed."""
    st = Path(settings.dataset_path).stat()
    return {"file_bytes": st.st_size, "file_mtime_ns": st.st_mtime_ns}


def _stored_settings_conflicts(meta: dict[str, Any], settings: RunSettings, ds: dict[str, Any]) -> list[str]:
    """A resumed run must keep what makes its rows comparable: dataset, target, judge."""
    problems = []
    if meta["dataset"]["sha256"] != ds["sha256"]:
        problems.append(f"dataset sha256 {ds['sha256'][:12]} != the run's {meta['dataset']['sha256'][:12]}")
    if (meta["target"]["name"], meta["target"]["provider"], meta["target"]["model"]) != (
        settings.target, settings.target_provider, settings.target_model
    ):
        problems.append(
            f"target {settings.target} {settings.target_provider}:{settings.target_model} != the run's "
            f"{meta['target']['name']} {meta['target']['provider']}:{meta['target']['model']}"
        )
    if dict(meta["target"].get("options") or {}) != dict(settings.target_options):
        problems.append(f"target options {dict(settings.target_options)} != the run's {meta['target'].get('options')}")
    if (meta["judge"]["provider"], meta["judge"]["model"]) != (settings.judge_provider, settings.judge_model):
        problems.append(
            f"judge {settings.judge_provider}:{settings.judge_model} != the run's "
            f"{meta['judge']['provider']}:{meta['judge']['model']}"
        )
    stored_template = ((meta.get("provenance") or {}).get("prompt_hashes") or {}).get("judge_template_sha256")
    if settings.judge_provider != "offline" and stored_template:
        import provenance

        current = provenance.judge_template_sha256(settings.longmemeval_root)
        if current != stored_template:
            problems.append(f"judge prompt file {provenance.judge_template_path(settings.longmemeval_root)} "
                            f"(sha256 {str(current)[:12]}) is not the one the run used ({stored_template[:12]})")
    return problems


def _shard_layout_conflicts(root: Path, shard: tuple[int, int] | None) -> list[str]:
    """A run is sharded (every writer with --shard i/n, one n) or not; the two never mix."""
    shard_dirs = sorted(p.name for p in root.glob("shard-*of*") if p.is_dir())
    if shard is None:
        return [f"the run is sharded ({', '.join(shard_dirs)}): resume each shard with --shard i/n"] if shard_dirs else []
    problems = []
    if (root / checkpoint_io.RESULTS_FILE).exists():
        problems.append("the run was started without --shard: resume it without --shard")
    other_n = {d for d in shard_dirs if not d.endswith(f"of{shard[1]}")}
    if other_n:
        problems.append(f"the run is sharded differently ({', '.join(sorted(other_n))}): use the same n")
    return problems


def new_meta(run_id: str, settings: RunSettings, ds: dict[str, Any]) -> dict[str, Any]:
    import provenance

    prov = provenance.describe(Path(settings.project), settings.target, settings.longmemeval_root)
    return {
        "schemaVersion": SCHEMA_VERSION,
        "runId": run_id,
        "status": "running",
        "started_at": utcnow(),
        "finished_at": None,
        "duration_seconds": 0.0,
        "variant": settings.variant,
        "dataset": ds,
        "target": {
            "name": settings.target,
            "provider": settings.target_provider,
            "model": settings.target_model,
            "options": dict(settings.target_options),
        },
        "judge": {
            "provider": settings.judge_provider,
            "model": settings.judge_model,
            "official": official_judge(settings.judge_provider, settings.judge_model),
        },
        "plugin_version": prov["plugin_version"],
        "project_git_commit": prov["project_git_commit"],
        "error": None,
        "provenance": prov,
        "endpoints": endpoints(settings),
        "settings": settings.to_dict(),
        "shard": None if settings.shard is None else f"{settings.shard[0]}/{settings.shard[1]}",
        "invocations": [],
    }


def endpoints(settings: RunSettings) -> dict[str, str]:
    """Where each provider's calls go, as the SDK client resolves it: the config's base_url, else the SDK's
    environment variable, else the SDK's default host (``https://api.openai.com/v1/``). No call is made.

    Recorded because a judge behind a proxy or another host is not the official judge, whatever it is called.
    """
    import providers

    settings_for_sdk = providers.ProviderSettings(base_urls=dict(settings.base_urls), azure=dict(settings.azure))
    out = {}
    for provider in sorted({settings.target_provider, settings.judge_provider} - {"offline"}):
        out[provider] = providers.resolved_base_url(provider, settings_for_sdk) or "unknown"
    return out


def open_run(settings: RunSettings, run_id: str, root: Path, work: Path,
             scanned: tuple[dict[str, Any], dict[str, Any]] | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """Load or create run-meta and the manifest; refuse a resume whose dataset, target, options or judge changed.

    A shard also checks the run's root meta, which the first shard writes, so shards of one run agree.
    """
    meta, manifest = check_run(settings, run_id, root, work, scanned)
    manifest_path = root / "manifest.json"
    if not manifest_path.exists():
        checkpoint_io.write_atomic_json(manifest_path, manifest)
    return meta, manifest


def check_run(settings: RunSettings, run_id: str, root: Path, work: Path,
              scanned: tuple[dict[str, Any], dict[str, Any]] | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """``open_run``'s refusals and the (meta, manifest) it would use, writing nothing: a caller that starts the
    run in another process (``--background``) runs them first, so a mistake is refused where the user sees it."""
    layout = _shard_layout_conflicts(root, settings.shard)
    if layout:
        raise UserError(f"cannot write run {run_id} this way: " + "; ".join(layout))
    meta_path = work / "run-meta.json"
    manifest_path = root / "manifest.json"
    if not meta_path.exists() and settings.shard is not None and (root / "run-meta.json").exists():
        meta_path = root / "run-meta.json"  # this shard is new: the run's own settings are in the root meta
    meta = checkpoint_io.read_json(meta_path, schema="run-meta") if meta_path.exists() else None
    stored = (meta or {}).get("dataset", {})
    unchanged = stored.get("path") == settings.dataset_path and all(
        stored.get(k) == v for k, v in _file_stamp(settings).items()
    )
    if meta is not None and manifest_path.exists() and unchanged:
        manifest = checkpoint_io.read_json(manifest_path, schema="manifest")
        ds = dict(meta["dataset"])
    else:
        manifest, ds = scanned or build_manifest(settings)
    if meta is None or meta_path != work / "run-meta.json":
        fresh = new_meta(run_id, settings, ds)
        if meta is not None:
            conflicts = _stored_settings_conflicts(meta, settings, ds)
            if conflicts:
                raise UserError(f"cannot add a shard to run {run_id}: " + "; ".join(conflicts),
                                fix="use the run's own settings for every shard")
        meta = fresh
    else:
        conflicts = _stored_settings_conflicts(meta, settings, ds)
        if conflicts:
            raise UserError(
                f"cannot resume run {run_id}: " + "; ".join(conflicts),
                fix="resume with the run's own settings, or start a new run (omit --run-id)",
            )
    if settings.loop:
        loop_guard_check(settings, manifest)
    return meta, manifest


def scan_new_run(settings: RunSettings) -> tuple[dict[str, Any], dict[str, Any]]:
    """Validate the whole dataset before a new run's directory exists: a bad file leaves nothing behind."""
    manifest, ds = build_manifest(settings)
    if manifest["n_total"] == 0:
        raise UserError(f"dataset {settings.dataset_path} has no items", fix="point datasetPath at a LongMemEval file")
    return manifest, ds


def loop_guard_check(settings: RunSettings, manifest: dict[str, Any]) -> None:
    import loop_guard

    problems = loop_guard.check_loop_run(
        {
            "n_total": manifest["n_total"],
            "max": settings.max_evals,
            "judge_provider": settings.judge_provider,
            "judge_model": settings.judge_model,
            "symbolic": {f: bool(settings.target_options.get(f, True)) for f in run_settings.SYMBOLIC_FLAGS},
            "target": settings.target,
        },
        Path(settings.project),
    )
    if problems:
        raise UserError("loop mode refuses this run: " + "; ".join(problems), fix="see references/iteration-rules.md")


def update_root_meta(root: Path, manifest: dict[str, Any]) -> None:
    """With shards, the root run-meta summarises the shards' metas: the worst status, counts over all shards."""
    with checkpoint_io.RunLock(root, name=".meta.lock", wait=True):
        metas = [checkpoint_io.read_json(p, schema="run-meta") for p in sorted(root.glob("shard-*/run-meta.json"))]
        if not metas:
            return
        order = {"failed": 0, "interrupted": 1, "paused": 2, "running": 3, "completed": 4}
        completed = checkpoint_io.load_completed(root)
        summary = dict(metas[0])
        summary.update(
            status=min((m["status"] for m in metas), key=lambda s: order[s]),
            shard=None,
            shards={m["shard"]: m["status"] for m in metas},
            duration_seconds=max(float(m.get("duration_seconds") or 0) for m in metas),
            error="; ".join(m["error"] for m in metas if m.get("error")) or None,
            invocations=[],
            counts={
                "n_total": manifest["n_total"],
                "planned": manifest["n_total"],
                "completed": sum(1 for it in manifest["items"] if it["question_id"] in completed),
                "pending": sum(1 for it in manifest["items"] if it["question_id"] not in completed),
            },
        )
        checkpoint_io.write_atomic_json(root / "run-meta.json", summary)
