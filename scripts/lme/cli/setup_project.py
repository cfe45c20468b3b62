"""Set up a project for LongMemEval runs: venv, config, dataset, upstream checkout. Standard library only.

It runs before the venv exists, with any python3 >= 3.10. Every step is idempotent: a second run with the same
options has nothing to do and says so. Nothing in an existing config.json changes without --force-config (then
the file is rewritten from the defaults plus this run's choices, and the old one kept as config.json.bak).

Usage:
    python3 scripts/setup_project.py --sample                 # offline demo: sample data, no keys, no network
    python3 scripts/setup_project.py --download _s --clone-upstream
    python3 scripts/setup_project.py --download _oracle --offline   # prints what to fetch by hand
    python3 scripts/setup_project.py --background --sample    # detached; follows it up to 100 s (exit 4: still running)
    python3 scripts/setup_project.py --wait 100               # follow a background setup again
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

SCRIPTS = Path(__file__).resolve().parents[2]
REPO = SCRIPTS.parent
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))

from lme.core import cli_parser  # noqa: E402  (stdlib-only sibling)
from lme.core import command_names  # noqa: E402  (stdlib-only sibling)
from lme.core import project_ignore  # noqa: E402  (stdlib-only sibling)
from lme.core import unattended  # noqa: E402  (stdlib-only sibling)
from lme.core.errors import UserError, run_main  # noqa: E402  (stdlib-only sibling)
from lme.core.facts import (  # noqa: E402  (stdlib-only sibling)
    CONFIG_FILE,
    FILES,
    JUDGE_PROMPT_FUNCTION,
    JUDGE_TEMPLATE_RELPATH,
    KNOWN_SHA256,
    OFFLINE,
    OFFLINE_JUDGE_MODEL,
    OFFLINE_TARGET_MODEL,
    RELEASES,
    SAMPLE_FILE,
    STATE_DIR,
    UPSTREAM_COMMIT,
    UPSTREAM_URL,
    VENV_DIR,
    is_offline,
    resolve_variant,
)
from lme.core.config_defaults import default_config as defaults  # noqa: E402  (stdlib-only sibling)
from lme.cli import claude_settings  # noqa: E402  (stdlib-only sibling)
from lme.cli import setup_job  # noqa: E402  (stdlib-only sibling)
from lme.core import config_file  # noqa: E402  (stdlib-only sibling)
from lme.core import fileio  # noqa: E402  (stdlib-only sibling)
from lme.core.fileio import write_atomic_json  # noqa: E402  (stdlib-only sibling)

REQUIREMENTS = SCRIPTS / "requirements.txt"
SAMPLE_DATASET = REPO / "data" / "sample" / SAMPLE_FILE
VENV_MARKER = ".longmemeval-requirements.sha256"

DEFAULT_BASE_URL = "https://huggingface.co"
JUDGE_FILE = Path(JUDGE_TEMPLATE_RELPATH)
JUDGE_FUNCTION = f"def {JUDGE_PROMPT_FUNCTION}("

SAMPLE_SETTINGS = {
    "variant": "_s",
    "target": "offline",
    "targetProvider": OFFLINE,
    "targetModel": OFFLINE_TARGET_MODEL,
    "judgeProvider": OFFLINE,
    "judgeModel": OFFLINE_JUDGE_MODEL,
}

Runner = Callable[..., "subprocess.CompletedProcess[str]"]


@dataclass
class Report:
    """What setup did, step by step, for the summary printed at the end."""

    lines: list[str] = field(default_factory=list)

    def add(self, step: str, text: str) -> None:
        self.lines.append(f"{step:9} {text}")


# --------------------------------------------------------------------------- small helpers

VARIANT_WORDS = {"unknown": "unknown dataset variant", "fix": "use one of _s, _m, _oracle"}
"""``facts.resolve_variant``'s refusal in setup's words."""


def write_json_atomic(path: Path, obj: Any) -> None:
    """``fileio.write_atomic_json``, its folder made first."""
    fileio.make_dirs(path.parent)
    try:
        write_atomic_json(path, obj)
    except OSError as err:  # name the file being written, not a temporary name
        if err.filename != str(path):
            raise OSError(err.errno, err.strerror, str(path)) from err
        raise


def project_relative(project: Path, path: Path) -> str:
    """Config paths are relative to the project root when the file lives inside it."""
    try:
        return path.resolve().relative_to(project.resolve()).as_posix()
    except ValueError:
        return str(path.resolve())


def check_project_writable(project: Path) -> None:
    probe = project
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        raise UserError(f"project path {project} is not a directory (its ancestor {probe} is a file)",
                        fix="pass --project a directory")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise UserError(f"cannot write to project directory {probe}", fix="pass --project a directory you own")


def check_state_paths(project: Path) -> None:
    """Refuse, before anything is written, a file where setup needs a folder (or a folder where it needs a file)."""
    for folder in (project / STATE_DIR, project / STATE_DIR / "data", project / VENV_DIR):
        if folder.exists() and not folder.is_dir():
            raise UserError(f"{folder} is a file, but setup needs a folder there",
                            fix="move or delete that file and re-run")
    for file in (project / STATE_DIR / CONFIG_FILE, project / STATE_DIR / ".gitignore"):
        if file.is_dir():
            raise UserError(f"{file} is a folder, but setup needs a file there",
                            fix="move or delete that folder and re-run")
    for path in (project / STATE_DIR, project / STATE_DIR / "data", project / STATE_DIR / CONFIG_FILE,
                 project / STATE_DIR / ".gitignore", project / ".gitignore", project / VENV_DIR):
        fileio.check_no_symlinks(path, include_self=True)  # setup writes there: never through a link


def check_http_url(url: str, flag: str) -> str:
    parsed = urllib.parse.urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise UserError(f"{flag} must be an http(s) URL, got {url!r}", fix=f"e.g. {flag} {DEFAULT_BASE_URL}")
    return url.rstrip("/")


def check_git_url(url: str) -> None:
    """http(s)/ssh/git/file URLs, scp-like ``user@host:path``, or a local repository path."""
    parsed = urllib.parse.urlparse(url)
    if parsed.scheme in ("http", "https", "ssh", "git", "file") and (parsed.netloc or parsed.scheme == "file"):
        return
    if re.match(r"^[\w.-]+@[\w.-]+:", url) or Path(url).expanduser().exists():
        return
    raise UserError(f"--upstream-url {url!r} is not a git URL or an existing local repository",
                    fix=f"use the default {UPSTREAM_URL} or a path to a clone")


# --------------------------------------------------------------------------- venv


def venv_python(venv: Path) -> Path | None:
    """The venv's interpreter in either layout (POSIX ``bin/python``, Windows ``Scripts/python.exe``)."""
    for candidate in (venv / "bin" / "python", venv / "Scripts" / "python.exe"):
        if candidate.exists():
            return candidate
    return None


def requirements_digest(requirements: Path) -> str:
    return fileio.sha256_file(requirements, follow_symlinks=True)


def ensure_venv(project: Path, report: Report, *, requirements: Path = REQUIREMENTS, index_url: str | None = None,
                offline: bool = False, runner: Runner = subprocess.run) -> None:
    """Create ``.longmemeval-venv`` and install the requirements, unless the marker says that is done."""
    venv = project / VENV_DIR
    marker = venv / VENV_MARKER
    digest = requirements_digest(requirements)
    python = venv_python(venv)
    if python and marker.exists() and marker.read_text(encoding="utf-8").strip() == digest:
        report.add("venv", f"ready: {venv} is up to date; nothing to do")
        return
    manual = (f"python3 -m venv {venv} && {venv}/bin/python -m pip install -r {requirements}")
    if offline:
        report.add("venv", f"skipped (--offline); later run: {manual}")
        return
    if python is None:
        print(f"creating {venv} ...", file=sys.stderr)
        done = runner([sys.executable, "-m", "venv", str(venv)], capture_output=True, text=True)
        python = venv_python(venv)
        if done.returncode != 0 or python is None:
            raise UserError(f"could not create the venv at {venv}: {_tail(done.stderr)}",
                            fix="install your python's venv module (e.g. apt install python3-venv) and re-run")
        created = "created"
    else:
        created = "updated"
    command = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q", "-r", str(requirements)]
    if index_url:
        command += ["--index-url", index_url]
    print(f"installing {requirements.name} into {venv} (a few minutes the first time) ...", file=sys.stderr)
    done = runner(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise UserError(f"pip could not install {requirements} into {venv}: {_tail(done.stderr)}",
                        fix=f"check the network or pass --index-url; by hand: {manual}")
    fileio.write_atomic_text(marker, digest + "\n")
    report.add("venv", f"ready: {created} {venv} and installed {requirements.name}; scripts run with {python}")


def _tail(text: str | None, limit: int = 300) -> str:
    text = " ".join((text or "").split())
    return text[-limit:] if text else "no output"


# --------------------------------------------------------------------------- config


def default_config() -> dict[str, Any]:
    """The toolkit's defaults (``config_defaults.py``: standard library only, like this script)."""
    return defaults()


@dataclass(frozen=True)
class ConfigPlan:
    config: dict[str, Any]
    added: tuple[str, ...]
    """Keys that were missing and got a value."""
    kept: tuple[tuple[str, Any, Any], ...]
    """(key, kept value, value this run wanted) for each user value left alone."""
    changed: bool


def plan_config(existing: dict[str, Any] | None, defaults: dict[str, Any], wanted: dict[str, Any],
                *, force: bool) -> ConfigPlan:
    """Decide the new config: fresh -> defaults + wanted; existing -> only fill missing keys unless forced."""
    if existing is None or force:
        fresh = {**defaults, **wanted}
        return ConfigPlan(fresh, tuple(fresh), (), existing != fresh)
    merged = dict(existing)
    added = []
    for key, value in {**defaults, **wanted}.items():
        if key not in merged:
            merged[key] = value
            added.append(key)
    kept = tuple((k, existing[k], v) for k, v in wanted.items() if k in existing and existing[k] != v)
    return ConfigPlan(merged, tuple(added), kept, bool(added))


def load_existing_config(path: Path) -> dict[str, Any] | None:
    return config_file.read_object(path, fix="fix it by hand, or re-run with --force-config to rewrite it from the defaults",
                                   not_object="{path} must hold a JSON object",
                                   not_object_fix="re-run with --force-config to rewrite it")


def apply_config(project: Path, wanted: dict[str, Any], report: Report, *, force: bool) -> dict[str, Any]:
    path = project / STATE_DIR / CONFIG_FILE
    existing = None
    try:
        existing = load_existing_config(path)
    except UserError:
        if not force:
            raise
    plan = plan_config(existing, default_config(), wanted, force=force)
    if existing is None and not path.exists():
        write_json_atomic(path, plan.config)
        report.add("config", f"wrote {path}")
    elif force:
        if plan.changed:
            fileio.copy_file(path, path.with_name("config.json.bak"))
            write_json_atomic(path, plan.config)
            report.add("config", f"rewrote {path} (--force-config; previous copy in config.json.bak)")
        else:
            report.add("config", f"{path} already holds these values; nothing to do")
    elif plan.changed:
        write_json_atomic(path, plan.config)
        report.add("config", f"added missing keys to {path}: {', '.join(plan.added)}")
    else:
        report.add("config", f"{path} exists and is complete; left untouched")
    for key, kept, want in plan.kept:
        report.add("config", f"kept your {key}={json.dumps(kept)} (this run would set {json.dumps(want)}; "
                             "re-run with --force-config to apply)")
    return plan.config


def write_state_gitignore(project: Path) -> None:
    path = project / STATE_DIR / ".gitignore"
    if not os.path.lexists(path):
        fileio.make_dirs(path.parent)
        fileio.write_atomic_text(path, "# large or machine-specific: never commit\ndata/\ncache/\nLongMemEval/\n")


# --------------------------------------------------------------------------- sample data


def install_sample(project: Path, report: Report) -> tuple[Path, int]:
    """Copy the shipped sample dataset into the project (byte-identical; skipped when already there)."""
    if not SAMPLE_DATASET.exists():
        raise UserError(f"the plugin's sample dataset is missing ({SAMPLE_DATASET})",
                        fix="reinstall the plugin or run python3 scripts/sample_data.py")
    target = project / STATE_DIR / "data" / SAMPLE_DATASET.name
    items = len(json.loads(SAMPLE_DATASET.read_text(encoding="utf-8")))
    if target.exists() and fileio.sha256_file(target, follow_symlinks=True) == fileio.sha256_file(SAMPLE_DATASET, follow_symlinks=True):
        report.add("dataset", f"sample already at {target}; nothing to do")
        return target, items
    fileio.make_dirs(target.parent)
    fileio.write_atomic_bytes(target, SAMPLE_DATASET.read_bytes())
    report.add("dataset", f"copied the {items}-item sample to {target}")
    return target, items


# --------------------------------------------------------------------------- download


def dataset_url(base_url: str, release: str, file_name: str) -> str:
    return f"{base_url}/datasets/{RELEASES[release]}/resolve/main/{file_name}"


HAVE_THE_FILE = "or, if you have the file, pass --dataset PATH instead of --download"
"""The easiest way out of a failed download for someone who already has the file; every download error names it."""


def _offline_help(url: str, target: Path) -> str:
    return (f"download {url} into {target.parent}/ yourself, then re-run this command: it verifies and uses "
            f"the file there; {HAVE_THE_FILE}")


def download(url: str, target: Path, *, expected_sha256: str | None, attempts: int = 4,
             retry_wait: float = 1.0, timeout: float = 60.0) -> str:
    """Fetch ``url`` into ``target`` via ``target.part`` with HTTP Range resume; verify; rename. Returns sha256.

    A connection that drops mid-file is retried (resuming) up to ``attempts`` times in this call; a later run
    resumes from the ``.part`` left behind. A sha256 mismatch deletes the ``.part`` (its bytes cannot be trusted).
    """
    import http.client  # here, not at the top: with ssl and email ~30 ms, and most setups download nothing
    import urllib.error

    part = target.with_name(target.name + ".part")
    fileio.make_dirs(target.parent)
    last_error: Exception | None = None
    for attempt in range(1, attempts + 1):
        try:
            if _fetch_into(url, part, timeout=timeout):
                break
            last_error = ConnectionError("connection closed before the end of the file")
        except urllib.error.HTTPError as err:
            if err.code in (401, 403, 404):
                raise UserError(f"{url} answered HTTP {err.code}", fix=_offline_help(url, target)) from err
            last_error = err
        except urllib.error.URLError as err:
            if attempt == 1 and not _got_bytes(part):  # never connected: offline, DNS, refused
                raise UserError(f"cannot reach {url} ({err.reason})", fix=_offline_help(url, target)) from err
            last_error = err
        except (OSError, http.client.HTTPException) as err:  # dropped mid-file, timeouts
            last_error = err
        if attempt < attempts:
            print(f"download interrupted ({last_error}); resuming (attempt {attempt + 1} of {attempts}) ...",
                  file=sys.stderr)
            time.sleep(retry_wait * attempt)
    else:
        raise UserError(f"download of {url} kept failing ({last_error}); the partial file {part} is kept",
                        fix=f"re-run the same command to resume; {HAVE_THE_FILE}")
    digest = fileio.sha256_file(part, follow_symlinks=True)
    if expected_sha256 and digest != expected_sha256:
        part.unlink()
        raise UserError(f"{url} downloaded with sha256 {digest}, expected {expected_sha256}; deleted {part}",
                        fix=f"re-run to download it again (if it repeats, the upstream file changed: report it); "
                            f"{HAVE_THE_FILE}")
    os.replace(part, target)
    return digest


def _got_bytes(part: Path) -> bool:
    return part.exists() and part.stat().st_size > 0


def _fetch_into(url: str, part: Path, *, timeout: float) -> bool:
    """One request: append to ``part`` from its current size. True when the whole file is there."""
    import urllib.error
    import urllib.request  # here, as in download()

    have = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(url, headers={"User-Agent": "longmemeval-benchmarker-setup"})
    if have:
        request.add_header("Range", f"bytes={have}-")
    try:
        response = urllib.request.urlopen(request, timeout=timeout)  # noqa: S310 - http(s) checked by caller
    except urllib.error.HTTPError as err:
        if err.code == 416 and have:  # nothing left past what we have: the part is complete
            return True
        raise
    with response:
        if have and response.status == 206:
            mode = "ab"
            total = _total_from_content_range(response.headers.get("Content-Range"), have)
        else:
            mode, have = "wb", 0
            length = response.headers.get("Content-Length")
            total = int(length) if length and length.isdigit() else None
        written = have
        flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if mode == "ab" else os.O_TRUNC)
        with os.fdopen(fileio.open_fd(part, flags), mode) as fh:  # a planted .part link is refused
            while block := response.read(1 << 20):
                fh.write(block)
                written += len(block)
            fh.flush()
            os.fsync(fh.fileno())
    return total is None or written >= total


def _total_from_content_range(header: str | None, have: int) -> int | None:
    # "bytes 100-999/1000"
    if not header or "/" not in header:
        return None
    span, _, total = header.partition("/")
    start = span.split()[-1].split("-")[0]
    if start.isdigit() and int(start) != have:
        raise ConnectionError(f"server resumed at byte {start}, expected {have}")
    return int(total) if total.isdigit() else None


def fetch_dataset(project: Path, variant: str, release: str, base_url: str, report: Report, *,
                  offline: bool, retry_wait: float = 1.0) -> Path:
    """The ``variant`` file of ``release`` in the project's data folder: one already there is verified (against
    ``KNOWN_SHA256``, else the shipped fingerprints) and kept; else it is downloaded (refused with ``offline``)."""
    file_name = FILES[release][variant]
    target = project / STATE_DIR / "data" / file_name
    url = dataset_url(base_url, release, file_name)
    expected = KNOWN_SHA256.get((release, file_name))
    if target.exists():
        if expected and fileio.sha256_file(target, follow_symlinks=True) != expected:
            raise UserError(f"{target} exists but its sha256 is not the official {expected}",
                            fix=f"delete it and re-run to download {url} again")
        checked = "sha256 verified" if expected else verify_by_fingerprints(target, variant, release)
        report.add("dataset", f"{target} already present ({checked}); nothing to do")
        return target
    if offline:
        raise UserError(f"--offline: not downloading {file_name}", fix=_offline_help(url, target))
    print(f"downloading {url} -> {target} ...", file=sys.stderr)
    digest = download(url, target, expected_sha256=expected, retry_wait=retry_wait)
    checked = "sha256 verified" if expected else verify_by_fingerprints(target, variant, release, digest=digest)
    report.add("dataset", f"downloaded {file_name} to {target} ({checked})")
    return target


def _open_dataset(path: Path) -> Any:
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
    from lme.data import fingerprints, item_hash

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
    from lme.data import fingerprints

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
        target = project / STATE_DIR / "data" / path.name
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


# --------------------------------------------------------------------------- upstream checkout


def verify_upstream(root: Path) -> None:
    judge = root / JUDGE_FILE
    if not judge.is_file():
        raise UserError(f"{root} is not a LongMemEval checkout: {JUDGE_FILE} is missing",
                        fix=f"clone it with --clone-upstream, or git clone {UPSTREAM_URL} {root}")
    if JUDGE_FUNCTION not in judge.read_text(encoding="utf-8", errors="replace"):
        raise UserError(f"{judge} does not define get_anscheck_prompt",
                        fix=f"check out the pinned commit: git -C {root} checkout {UPSTREAM_COMMIT}")


def _git(runner: Runner, *args: str) -> "subprocess.CompletedProcess[str]":
    return runner(["git", *args], capture_output=True, text=True)


def clone_upstream(root: Path, report: Report, *, url: str = UPSTREAM_URL, commit: str = UPSTREAM_COMMIT,
                   offline: bool = False, runner: Runner = subprocess.run) -> None:
    """Clone upstream at the pinned commit into ``root``; an existing checkout is verified, never modified."""
    manual = f"git clone {url} {root} && git -C {root} checkout {commit}"
    if root.exists() and any(root.iterdir()):
        verify_upstream(root)
        head = _git(runner, "-C", str(root), "rev-parse", "HEAD")
        at = head.stdout.strip() if head.returncode == 0 else None
        if at and at != commit:
            report.add("upstream", f"{root} is at {at[:7]}, not the pinned {commit[:7]}; left as is "
                                   f"(git -C {root} checkout {commit} to pin it)")
        else:
            report.add("upstream", f"{root} already present and verified; nothing to do")
        return
    have_one = "or, with a checkout you already have, pass --longmemeval-root PATH instead of --clone-upstream"
    if offline:
        raise UserError("--offline: not cloning the upstream LongMemEval repository", fix=f"run: {manual}; {have_one}")
    if shutil.which("git") is None and runner is subprocess.run:
        raise UserError("git is not installed, so the upstream checkout cannot be cloned",
                        fix=f"install git, then run: {manual}; {have_one}")
    fileio.make_dirs(root.parent)
    staging = fileio.make_temp_dir(root)  # a killed clone leaves it for fileio.clean_leftovers
    try:
        print(f"cloning {url} into {root} ...", file=sys.stderr)
        done = _git(runner, "clone", "--quiet", "--no-checkout", url, str(staging))
        if done.returncode != 0:
            raise UserError(f"git clone {url} failed: {_tail(done.stderr)}",
                            fix=f"when online, run: {manual}; {have_one}")
        done = _git(runner, "-C", str(staging), "-c", "advice.detachedHead=false", "checkout", "--quiet", commit)
        if done.returncode != 0:
            raise UserError(f"the pinned commit {commit} is not in {url}: {_tail(done.stderr)}",
                            fix=f"run: {manual}")
        verify_upstream(staging)
        if root.exists():
            root.rmdir()
        os.replace(staging, root)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    report.add("upstream", f"cloned {url} at {commit[:7]} into {root}")


# --------------------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = cli_parser.documented_parser(__doc__, epilog_from=2)
    cli_parser.add_project_argument(parser, "the project directory to set up (default: the current directory)",
                                    default=Path.cwd())
    parser.add_argument("--sample", action="store_true",
                        help="install the shipped 24-item sample and an offline target + judge (no keys, no network)")
    parser.add_argument("--download", metavar="VARIANT",
                        help="download a LongMemEval file: _s, _m or _oracle (into .longmemeval-benchmarks/data/)")
    parser.add_argument("--dataset", type=Path, metavar="PATH",
                        help="use a LongMemEval file you already have (.json, .json.xz, .json.gz): verified, "
                             "fingerprinted, linked into .longmemeval-benchmarks/data/ when it lives elsewhere")
    parser.add_argument("--release", choices=sorted(RELEASES), default="cleaned",
                        help="which Hugging Face release --download uses (default: cleaned, the 2025-09 release)")
    parser.add_argument("--base-url", default=DEFAULT_BASE_URL,
                        help=f"host serving the Hugging Face dataset paths (default: {DEFAULT_BASE_URL})")
    parser.add_argument("--longmemeval-root", type=Path,
                        help=f"upstream LongMemEval checkout for the judge prompts "
                             f"(default: {STATE_DIR}/LongMemEval in the project)")
    parser.add_argument("--clone-upstream", action="store_true",
                        help=f"git clone upstream LongMemEval at the pinned commit {UPSTREAM_COMMIT[:7]} "
                             "into the --longmemeval-root")
    parser.add_argument("--upstream-url", default=UPSTREAM_URL,
                        help=f"where --clone-upstream clones from (default: {UPSTREAM_URL})")
    parser.add_argument("--force-config", action="store_true",
                        help="rewrite config.json from the defaults plus this run's choices (old file -> .bak)")
    parser.add_argument("--skip-venv", action="store_true", help=f"do not create or update {VENV_DIR}")
    parser.add_argument("--offline", action="store_true",
                        help="never use the network: print what to download or clone by hand instead")
    parser.add_argument("--index-url", help="Python package index for pip (default: pip's own setting)")
    parser.add_argument("--allow-unattended", action="store_true",
                        help="add the plugin's permission rules (its script lines, with this plugin's path, and "
                             "its skills) to .claude/settings.local.json, so Claude Code runs the loop unattended")
    parser.add_argument("--short-commands", action="store_true",
                        help=f"no longer needed (the plugin's commands answer to {command_names.RUN}, ... by "
                             "themselves): accepted, says so, writes nothing")
    parser.add_argument("--background", action="store_true",
                        help=f"run the setup detached and follow it for up to {setup_job.FOLLOW_SECONDS} s; still "
                             "running: exit 4 and the --wait line (Claude Code's Bash tool stops waiting at 120 s)")
    parser.add_argument("--wait", type=float, metavar="SECONDS",
                        help="follow a --background setup for up to SECONDS: its output and exit status once it "
                             "ended, else exit 4")
    parser.add_argument(setup_job.JOB_FLAG, action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def refuse_in_a_loop_session(args: argparse.Namespace) -> None:
    """In a loop session (``unattended``: an agent holding standing permissions) setup installs from nowhere but
    its defaults and points the judge at no code outside the project; ``--project`` elsewhere is refused by the
    parser. The user runs such a setup themselves."""
    why = unattended.loop_session()
    if why is None:
        return
    chosen = [flag for flag, given, default in (("--index-url", args.index_url, None),
                                                 ("--upstream-url", args.upstream_url, UPSTREAM_URL),
                                                 ("--base-url", args.base_url, DEFAULT_BASE_URL)) if given != default]
    if chosen:
        raise UserError(f"{chosen[0]} {getattr(args, chosen[0][2:].replace('-', '_'))}: in a loop session ({why}) "
                        "setup downloads and installs only from its defaults",
                        fix="run this setup yourself in a terminal")
    if args.longmemeval_root is not None:
        unattended.refuse_outside(args.longmemeval_root, "--longmemeval-root", why)


def check_claude_settings(project: Path) -> None:
    """``.claude/settings.local.json``, when present, must be a JSON object (checked before anything is written)."""
    path = project / claude_settings.SETTINGS_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return
    except (OSError, ValueError) as err:
        raise UserError(f"{path} is not valid JSON ({err})", fix="fix or delete it, then re-run") from None
    if not isinstance(data, dict):
        raise UserError(f"{path} is not a JSON object", fix="fix or delete it, then re-run")


def add_claude_settings(project: Path, report: Report, *, allow: bool, short: bool) -> None:
    """The opt-in Claude Code files (see claude_settings.py), each reported on its own line."""
    if allow:
        added = claude_settings.write_permissions(project, write_json_atomic)
        where = claude_settings.SETTINGS_FILE.as_posix()
        report.add("permissions", f"added {len(added)} rules to {where}" if added
                   else f"all rules already in {where}; nothing to do")
        for rule in claude_settings.permission_rules():
            report.add("permissions", f"  {rule}")
    if short:
        report.add("commands", claude_settings.SHORT_COMMANDS_NOTICE)
        for path in claude_settings.earlier_wrappers(project):
            report.add("commands", f"{path}: written by an earlier --short-commands, no longer needed (delete it)")


@dataclass(frozen=True)
class Checked:
    """What ``validate`` found, for the steps that use it."""

    variant: str | None
    base_url: str
    adopted: dict[str, Any] | None
    root: Path
    """The upstream checkout's folder."""


def validate(args: argparse.Namespace, project: Path) -> Checked:
    """Every check that needs no writing, before anything is written (bad input: one line, exit 2, nothing made)."""
    check_project_writable(project)
    check_state_paths(project)
    variant = resolve_variant(args.download, **VARIANT_WORDS) if args.download else None
    base_url = check_http_url(args.base_url, "--base-url")
    if args.index_url:
        check_http_url(args.index_url, "--index-url")
    if args.clone_upstream:
        check_git_url(args.upstream_url)
    if sum(map(bool, (args.sample, variant, args.dataset))) > 1:
        raise UserError("--sample, --download and --dataset pick different datasets", fix="pass only one of them")
    adopted = check_local_dataset(args.dataset) if args.dataset else None
    root = (args.longmemeval_root or Path(STATE_DIR) / "LongMemEval").expanduser()
    root = root if root.is_absolute() else project / root
    if args.longmemeval_root and not args.clone_upstream:
        verify_upstream(root)
    if args.allow_unattended:
        check_claude_settings(project)
    return Checked(variant, base_url, adopted, root)


def setup(args: argparse.Namespace, project: Path, checked: Checked | None = None) -> int:
    """Every step, each only when needed; the summary and the next step on stdout."""
    checked = checked or validate(args, project)
    variant, base_url, adopted, root = checked.variant, checked.base_url, checked.adopted, checked.root
    report = Report()
    project.mkdir(parents=True, exist_ok=True)
    if args.skip_venv:
        report.add("venv", "skipped (--skip-venv)")
    else:
        ensure_venv(project, report, index_url=args.index_url, offline=args.offline)

    wanted: dict[str, Any] = {}
    if args.sample:
        path, items = install_sample(project, report)
        wanted.update(SAMPLE_SETTINGS, datasetPath=project_relative(project, path), maxEvals=items)
    if variant:
        path = fetch_dataset(project, variant, args.release, base_url, report, offline=args.offline)
        wanted.update(datasetPath=project_relative(project, path), variant=variant)
    if adopted:
        path, found_variant = adopt_dataset(project, args.dataset, adopted, report)
        named = path.relative_to(project).as_posix() if path.is_symlink() else project_relative(project, path)
        wanted.update(datasetPath=named, **({"variant": found_variant} if found_variant else {}))
    if args.clone_upstream:
        clone_upstream(root, report, url=args.upstream_url, offline=args.offline)
    elif args.longmemeval_root:  # verified above: say so, the judge reads its prompts there
        report.add("upstream", f"judge prompts found in {root} ({JUDGE_FILE} defines {JUDGE_PROMPT_FUNCTION})")
    if args.clone_upstream or args.longmemeval_root:
        wanted["longmemeval_root"] = project_relative(project, root)
    write_state_gitignore(project)
    config = apply_config(project, wanted, report, force=args.force_config)
    ignored = project_ignore.ensure_gitignore(project)
    report.add("gitignore", f"added {', '.join(ignored)} to {project / '.gitignore'}" if ignored
               else "the project's .gitignore already ignores the venv, caches and runs")
    add_claude_settings(project, report, allow=args.allow_unattended, short=args.short_commands)
    dataset = Path(str(config.get("datasetPath", "")))
    has_dataset = (dataset if dataset.is_absolute() else project / dataset).is_file()
    if not has_dataset:
        report.add("dataset", f"none at {config.get('datasetPath')}")

    keys = ", ".join(f"{name} {'set' if os.environ.get(name) else 'not set'}"
                     for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"))
    report.add("keys", keys)
    print("\n".join(report.lines))
    print(f"next: {next_command(config, downloaded=args.download) if has_dataset else no_dataset_next()}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    if sys.version_info < (3, 10):
        raise UserError(f"python {sys.version.split()[0]} is too old", fix="run this with python3 >= 3.10")
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    refuse_in_a_loop_session(args)  # before anything else: an agent's standing rules never reach another index or project
    project = args.project.expanduser().resolve()
    fileio.own(project)  # from here no file of the project's state is written through a symbolic link
    if args.wait is not None:
        if len([a for a in argv if a.startswith("--") and not a.startswith(("--wait", "--project"))]) > 0:
            raise UserError("--wait follows a background setup and takes no other option but --project",
                            fix="run it alone: setup_project.py --wait 100")
        return setup_job.follow(project, args.wait)
    if args.background and args.as_background_job:
        raise UserError("--background and the background job's own flag do not go together", fix="drop one")
    if args.as_background_job:
        code = 1  # an unexpected error's traceback goes to the job's log; the follower then shows it
        try:
            code = run_main(lambda _: setup(args, project))
        finally:
            setup_job.child_exit(project, code)
        return code
    checked = validate(args, project)
    if args.background:
        setup_job.start(project, [a for a in argv if a != "--background"])
        return setup_job.follow(project, setup_job.FOLLOW_SECONDS)
    return setup(args, project, checked)


def no_dataset_next() -> str:
    return (f"{command_names.step(command_names.SETUP, '--sample')}   (the offline demo; or --download _s, "
            "or --dataset PATH for a LongMemEval file you have)")


def next_command(config: dict[str, Any], *, downloaded: str | None = None) -> str:
    """What to run next (``command_names.step``: the slash command in Claude Code, the shell command first in a
    shell); a real dataset in a config still set up for the offline sample needs --force-config."""
    uses_sample = str(config.get("datasetPath", "")).endswith(SAMPLE_DATASET.name)
    if is_offline(config.get("judgeProvider")) and (downloaded or not uses_sample):
        variant = resolve_variant(downloaded, **VARIANT_WORDS) if downloaded else config.get("variant", "_s")
        return (f"{command_names.step(command_names.SETUP, f'--download {variant} --force-config')}   (your config "
                "still uses the offline sample's dataset, target and judge; this writes the real defaults, keeping a .bak)")
    if is_offline(config.get("judgeProvider")):
        return f"{command_names.step(command_names.RUN, '--max 3')}   (offline sample run; no keys needed)"
    return (f"{command_names.step(command_names.RUN, '--dry-run')}   (checks config, dataset and keys without "
            "spending anything)")


if __name__ == "__main__":
    sys.exit(run_main(main))
