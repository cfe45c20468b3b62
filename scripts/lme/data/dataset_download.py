"""A LongMemEval file fetched from Hugging Face into the project's data folder: resumed over HTTP Range after a
dropped connection (in this call, or from the ``.part`` a later run finds), verified (the official sha256, else the
shipped fingerprints), renamed into place. Standard library only (setup runs before the venv)."""

from __future__ import annotations

import os
import sys
import time
import urllib.parse
from pathlib import Path

from lme.core import fileio
from lme.core.errors import UserError
from lme.core.facts import DATA_DIR, FILES, KNOWN_SHA256, RELEASES
from lme.core.setup_steps import Report
from lme.data.project_dataset import verify_by_fingerprints

DEFAULT_BASE_URL = "https://huggingface.co"
HAVE_THE_FILE = "or, if you have the file, pass --dataset PATH instead of --download"
"""The easiest way out of a failed download for someone who already has the file; every download error names it."""


def dataset_url(base_url: str, release: str, file_name: str) -> str:
    return f"{base_url}/datasets/{RELEASES[release]}/resolve/main/{file_name}"


def offline_help(url: str, target: Path) -> str:
    return (f"download {url} into {target.parent}/ yourself, then re-run this command: it verifies and uses "
            f"the file there; {HAVE_THE_FILE}")


def download(url: str, target: Path, *, expected_sha256: str | None, attempts: int = 4,
             retry_wait: float = 1.0, timeout: float = 60.0) -> str:
    """Returns the file's sha256. A connection that drops mid-file is retried (resuming) up to ``attempts`` times
    in this call. A sha256 mismatch deletes the ``.part`` (its bytes cannot be trusted)."""
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
                raise UserError(f"{url} answered HTTP {err.code}", fix=offline_help(url, target)) from err
            last_error = err
        except urllib.error.URLError as err:
            if attempt == 1 and not _got_bytes(part):  # never connected: offline, DNS, refused
                raise UserError(f"cannot reach {url} ({err.reason})", fix=offline_help(url, target)) from err
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
    target = project / DATA_DIR / file_name
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
        raise UserError(f"--offline: not downloading {file_name}", fix=offline_help(url, target))
    print(f"downloading {url} -> {target} ...", file=sys.stderr)
    digest = download(url, target, expected_sha256=expected, retry_wait=retry_wait)
    checked = "sha256 verified" if expected else verify_by_fingerprints(target, variant, release, digest=digest)
    report.add("dataset", f"downloaded {file_name} to {target} ({checked})")
    return target


def check_http_url(url: str, flag: str) -> str:
    """``--base-url`` (and ``--index-url``): an http(s) URL, returned without its trailing slash."""
    parsed = urllib.parse.urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise UserError(f"{flag} must be an http(s) URL, got {url!r}", fix=f"e.g. {flag} {DEFAULT_BASE_URL}")
    return url.rstrip("/")
