"""Setup in the background: a first venv install or a download can outlast a tool's time limit. Standard library only.

Claude Code's Bash tool moves a foreground command that passes 120 s to the background (the model then sees
"moved to the background" instead of the summary) and kills it 10 minutes later. ``setup_project.py --background``
therefore checks its arguments in the caller, starts the same setup detached (its own session; stdout and stderr
to files under ``.longmemeval-benchmarks/cache/setup-job/``; ``job.json`` records the process, the child writes its
exit status to ``exit.json`` as its last act) and follows it for up to ``FOLLOW_SECONDS``: a setup that ends by then prints its own output and exits
with its own status, exactly as in the foreground. One still running prints a status line and the ``wait:`` line
and exits ``EXIT_RUNNING`` (4); ``setup_project.py --wait 100`` follows it again, the way ``run_status.py --wait``
follows a run.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from lme.core import process_life
from lme.core.clock import utc_now_iso
from lme.core.errors import UserError
from lme.core.facts import STATE_DIR
from lme.core.fileio import write_atomic_json

JOB_DIR = Path(STATE_DIR) / "cache" / "setup-job"
"""Under the state folder's ``cache/``, which both the project's and the state folder's .gitignore leave out."""
JOB_FILE, EXIT_FILE, OUT_FILE, ERR_FILE = "job.json", "exit.json", "out.txt", "err.txt"
FOLLOW_SECONDS = 100
"""How long one call follows the job: under the Bash tool's 120 s default."""
EXIT_RUNNING = 4
SETUP_SCRIPT = Path(__file__).resolve().parents[2] / "setup_project.py"
JOB_FLAG = "--as-background-job"
"""The detached child's flag: run the setup, then record its exit status in job.json."""


def job_dir(project: Path) -> Path:
    return Path(project) / JOB_DIR


def _read(project: Path, name: str) -> dict[str, Any] | None:
    try:
        data = json.loads((job_dir(project) / name).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def read_job(project: Path) -> dict[str, Any] | None:
    """The job's record (the process and its arguments), with the exit record's fields once it ended."""
    job = _read(project, JOB_FILE)
    if job is None:
        return None
    ended = _read(project, EXIT_FILE)
    return {**job, **ended, "status": "done"} if ended else {**job, "status": "running"}


def wait_line(project: Path, cwd: Path | None = None) -> str:
    """The command that follows the job again, from the project root (``--project`` when called from elsewhere)."""
    where = "" if Path(cwd or Path.cwd()).resolve() == Path(project).resolve() else f' --project "{project}"'
    return f'wait: python3 "{SETUP_SCRIPT}" --wait {FOLLOW_SECONDS}{where}'


def start(project: Path, argv: Sequence[str]) -> dict[str, Any]:
    """Start ``setup_project.py ARGV`` detached for ``project``. While an earlier job runs, the same command is
    left to it (the caller then follows it: running the line again is safe); another one is refused."""
    folder = job_dir(project)
    running = read_job(project)
    if running and running.get("status") == "running" and process_life.alive(running):
        if running.get("argv") == list(argv):
            return running
        raise UserError(f"a setup with other options is running in the background (pid {running['pid']}: "
                        f"{' '.join(running.get('argv') or ()) or 'no options'})",
                        fix=f"wait for it to end: {wait_line(project)[len('wait: '):]}, then run yours")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / EXIT_FILE).unlink(missing_ok=True)  # the last job's: this one writes its own as it ends
    command = [sys.executable, str(SETUP_SCRIPT), *argv, "--project", str(project), JOB_FLAG]
    with open(folder / OUT_FILE, "wb") as out, open(folder / ERR_FILE, "wb") as err:
        started_at = utc_now_iso("seconds")
        pid = process_life.start_detached(command, cwd=Path.cwd(), stdout=out, stderr=err)
    info = {**process_life.identity(pid), "started_at": started_at, "started": time.time(),
            "argv": list(argv)}
    write_atomic_json(folder / JOB_FILE, info)
    return info


def record_exit(project: Path, code: int) -> None:
    """The child's last act: exit.json says the setup ended, with its exit status (job.json is the caller's).
    What the child printed is flushed to its files first: the follower prints them as soon as exit.json is there,
    and stdout to a file is flushed only at exit, which comes after."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    job_dir(project).mkdir(parents=True, exist_ok=True)
    write_atomic_json(job_dir(project) / EXIT_FILE, {"exit_status": int(code), "finished_at": utc_now_iso("seconds")})


def follow(project: Path, seconds: float, *, poll: float = 0.2) -> int:
    """Wait up to ``seconds`` for the job; print its output and return its exit status, or print where it stands
    and return ``EXIT_RUNNING``."""
    if read_job(project) is None:
        raise UserError(f"no setup was started in the background in {project}",
                        fix=f'run setup: python3 "{SETUP_SCRIPT}" --background (with its options)')
    deadline = time.monotonic() + max(0.0, seconds)
    while True:
        info = read_job(project) or {}
        if info.get("status") == "done":
            return _show_result(project, info)
        if not process_life.alive(info):
            time.sleep(poll)  # the child may have written its record just now
            info = read_job(project) or {}
            if info.get("status") == "done":
                return _show_result(project, info)
            _replay(project, OUT_FILE, sys.stdout)
            _replay(project, ERR_FILE, sys.stderr)
            raise UserError(f"setup's background process (pid {info.get('pid')}) ended without a result",
                            fix="run the same setup command again: every step it finished is kept")
        if time.monotonic() >= deadline:
            break
        time.sleep(poll)
    elapsed = int(time.time() - float(info.get("started") or time.time()))
    print(f"setup: still running in the background (pid {info.get('pid')}, {elapsed} s so far): {_last_line(project)}")
    print(wait_line(project))
    return EXIT_RUNNING


def _show_result(project: Path, info: dict[str, Any]) -> int:
    _replay(project, ERR_FILE, sys.stderr)
    _replay(project, OUT_FILE, sys.stdout)
    return int(info.get("exit_status", 1))


def _replay(project: Path, name: str, stream: Any) -> None:
    try:
        text = (job_dir(project) / name).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return
    if text:
        stream.write(text if text.endswith("\n") else text + "\n")
        stream.flush()


def _last_line(project: Path) -> str:
    try:
        lines = (job_dir(project) / ERR_FILE).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        lines = []
    lines = [line.strip() for line in lines if line.strip()]
    return lines[-1] if lines else "starting"


def child_exit(project: Path, code: int) -> int:
    try:
        record_exit(project, code)
    except OSError as err:  # the follower then reports a process that ended without a result
        print(f"error: could not record setup's exit status in {job_dir(project)}: {err}", file=sys.stderr)
    return code
