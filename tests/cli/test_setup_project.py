"""setup_project.py: idempotent, never clobbers config, resumable verified download, pinned clone, clean errors."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from lme.core import command_names
from lme.cli import setup_project
from lme.core import facts, project_venv
from lme.data import dataset_download
from lme.data.project_dataset import SAMPLE_DATASET
from lme.judge import upstream_checkout
from lme.core.errors import run_main
from command_env import bytecode_flags

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "setup_project.py"


def run(argv: list[str]) -> int:
    return run_main(setup_project.main, argv)


def config_of(project: Path) -> dict:
    return json.loads((project / ".longmemeval-benchmarks" / "config.json").read_text(encoding="utf-8"))


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# --------------------------------------------------------------------------- config + sample


def test_sample_setup_points_config_at_the_offline_sample(tmp_path, capsys):
    assert run(["--project", str(tmp_path), "--sample", "--skip-venv"]) == 0
    cfg = config_of(tmp_path)
    data = tmp_path / cfg["datasetPath"]
    assert data.read_bytes() == SAMPLE_DATASET.read_bytes()
    items = json.loads(data.read_text(encoding="utf-8"))
    assert cfg["maxEvals"] == len(items)
    assert (cfg["variant"], cfg["target"], cfg["targetProvider"], cfg["targetModel"]) == (
        "_s", "offline", "offline", "extractive")
    assert (cfg["judgeProvider"], cfg["judgeModel"]) == ("offline", "offline-containment-v1")
    assert "next:" in capsys.readouterr().out


def test_written_config_is_valid_against_the_config_schema(tmp_path):
    from lme.core import schemas  # our own module and schema: broken or missing, this test fails (it never skips)

    assert run(["--project", str(tmp_path), "--sample", "--skip-venv"]) == 0
    schemas.validate("config", config_of(tmp_path), where="config.json")
    fresh = tmp_path / "fresh"
    assert run(["--project", str(fresh), "--skip-venv"]) == 0
    schemas.validate("config", config_of(fresh), where="config.json")


def test_setup_writes_the_same_defaults_the_validated_config_uses(tmp_path):
    from lme.core import config

    assert run(["--project", str(tmp_path), "--skip-venv"]) == 0
    assert config_of(tmp_path) == config.default_config()


def test_second_run_has_nothing_to_do_and_leaves_config_untouched(tmp_path, capsys):
    assert run(["--project", str(tmp_path), "--sample", "--skip-venv"]) == 0
    before = tree(tmp_path)
    mtime = (tmp_path / ".longmemeval-benchmarks" / "config.json").stat().st_mtime_ns
    capsys.readouterr()
    assert run(["--project", str(tmp_path), "--sample", "--skip-venv"]) == 0
    out = capsys.readouterr().out
    assert tree(tmp_path) == before
    assert (tmp_path / ".longmemeval-benchmarks" / "config.json").stat().st_mtime_ns == mtime
    assert "left untouched" in out and "nothing to do" in out


def test_user_values_survive_a_rerun_and_only_missing_keys_are_filled(tmp_path, capsys):
    path = tmp_path / ".longmemeval-benchmarks" / "config.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"targetModel": "my-model", "concurrency": 3, "datasetPath": "mine.json"}))
    assert run(["--project", str(tmp_path), "--sample", "--skip-venv"]) == 0
    out = capsys.readouterr().out
    cfg = config_of(tmp_path)
    assert (cfg["targetModel"], cfg["concurrency"], cfg["datasetPath"]) == ("my-model", 3, "mine.json")
    assert cfg["judgeModel"] and cfg["runs_dir"]  # filled in
    assert "added missing keys" in out and "judgeModel" in out
    assert "kept your targetModel" in out and "--force-config" in out


def test_force_config_rewrites_and_keeps_a_backup(tmp_path):
    path = tmp_path / ".longmemeval-benchmarks" / "config.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"targetModel": "my-model"}))
    assert run(["--project", str(tmp_path), "--sample", "--skip-venv", "--force-config"]) == 0
    assert config_of(tmp_path)["targetModel"] == "extractive"
    assert json.loads(path.with_name("config.json.bak").read_text()) == {"targetModel": "my-model"}


def test_broken_config_json_is_refused_without_force(tmp_path, capsys):
    path = tmp_path / ".longmemeval-benchmarks" / "config.json"
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    assert run(["--project", str(tmp_path), "--skip-venv"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "line 1" in err and "--force-config" in err
    assert path.read_text() == "{not json"


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("argv, needle", [
    (["--download", "_xl"], "unknown dataset variant"),
    (["--download", "_s", "--base-url", "ftp://example.org"], "--base-url must be an http(s) URL"),
    (["--download", "_s", "--sample"], "pick different datasets"),
    (["--clone-upstream", "--upstream-url", "not a url"], "not a git URL"),
])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path, capsys, argv, needle):
    project = tmp_path / "proj"
    assert run(["--project", str(project), "--skip-venv", *argv]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1
    assert not project.exists()


def test_unwritable_project_is_refused(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert run(["--project", str(blocker / "proj"), "--skip-venv", "--sample"]) == 2
    assert "not a directory" in capsys.readouterr().err


def test_script_runs_with_a_bare_interpreter_and_prints_help():
    # -S -E: no site-packages, no PYTHON* env: proves the stdlib-only promise (-X pycache_prefix: the suite's
    # bytecode setting, which -E drops).
    done = subprocess.run([sys.executable, *bytecode_flags(), "-S", "-E", str(SCRIPT), "--help"], capture_output=True,
                          text=True)
    assert done.returncode == 0 and "--download" in done.stdout


def test_sample_setup_works_with_a_bare_interpreter(tmp_path):
    done = subprocess.run([sys.executable, *bytecode_flags(), "-S", "-E", str(SCRIPT), "--project", str(tmp_path),
                           "--sample", "--skip-venv"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert config_of(tmp_path)["target"] == "offline"


def test_a_local_dataset_is_checked_with_a_bare_interpreter(tmp_path):
    """``--dataset PATH`` fingerprints the file before the venv exists: no module it needs may import a package."""
    sample = SCRIPT.parent.parent / "data" / "sample" / "longmemeval_sample.json"
    done = subprocess.run([sys.executable, *bytecode_flags(), "-S", "-E", str(SCRIPT), "--project", str(tmp_path),
                           "--dataset", str(sample), "--skip-venv"], capture_output=True, text=True)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert "no item matches a shipped fingerprint (24 items)" in done.stdout


# --------------------------------------------------------------------------- venv (fake runner: no pip, no network)


class FakeRunner:
    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, cmd, **kwargs):
        self.calls.append(list(cmd))
        if cmd[1:3] == ["-m", "venv"]:
            python = Path(cmd[3]) / "bin" / "python"
            python.parent.mkdir(parents=True)
            python.write_text("#!/bin/sh\n")
        return subprocess.CompletedProcess(cmd, 0, "", "")


def test_venv_is_created_once_and_rebuilt_only_when_requirements_change(tmp_path):
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("tqdm\n")
    runner = FakeRunner()
    report = setup_project.Report()
    setup_project.ensure_venv(tmp_path, report, requirements=requirements, runner=runner)
    assert [c[1:3] for c in runner.calls] == [["-m", "venv"], ["-m", "pip"]]
    assert report.lines[-1] == (f"venv      ready: created {tmp_path / '.longmemeval-venv'} and installed "
                                f"requirements.txt; scripts run with {tmp_path / '.longmemeval-venv' / 'bin' / 'python'}")
    setup_project.ensure_venv(tmp_path, report, requirements=requirements, runner=runner)
    assert len(runner.calls) == 2 and report.lines[-1].startswith("venv      ready: ")
    assert "nothing to do" in report.lines[-1]
    requirements.write_text("tqdm\nnumpy\n")
    setup_project.ensure_venv(tmp_path, report, requirements=requirements, runner=runner, index_url="http://x/simple")
    assert [c[1:3] for c in runner.calls[2:]] == [["-m", "pip"]]
    assert runner.calls[-1][-2:] == ["--index-url", "http://x/simple"]


def test_windows_venv_layout_is_detected(tmp_path):
    python = tmp_path / "Scripts" / "python.exe"
    python.parent.mkdir()
    python.write_text("")
    assert project_venv.venv_python(tmp_path) == python


def test_failed_pip_install_leaves_no_marker(tmp_path):
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("tqdm\n")

    def runner(cmd, **kwargs):
        if cmd[1:3] == ["-m", "venv"]:
            FakeRunner()(cmd)
            return subprocess.CompletedProcess(cmd, 0, "", "")
        return subprocess.CompletedProcess(cmd, 1, "", "ERROR: no network")

    with pytest.raises(setup_project.UserError, match="no network"):
        setup_project.ensure_venv(tmp_path, setup_project.Report(), requirements=requirements, runner=runner)
    assert not (tmp_path / setup_project.VENV_DIR / project_venv.VENV_MARKER).exists()


# --------------------------------------------------------------------------- download


class RangeServer:
    """A stdlib file server on 127.0.0.1 that honours Range and can cut the connection mid-file."""

    def __init__(self, files: dict[str, bytes], cut_first_after: int | None = None) -> None:
        self.files = files
        self.cut_after = cut_first_after
        self.requests: list[tuple[str, str | None]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def do_GET(self):  # noqa: N802
                outer.requests.append((self.path, self.headers.get("Range")))
                body = outer.files.get(self.path.rsplit("/", 1)[-1])
                if body is None:
                    self.send_error(404)
                    return
                start = 0
                rng = self.headers.get("Range")
                if rng:
                    start = int(rng.split("=")[1].split("-")[0])
                    if start >= len(body):
                        self.send_error(416)
                        return
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
                else:
                    self.send_response(200)
                self.send_header("Content-Length", str(len(body) - start))
                self.send_header("Connection", "close")
                self.end_headers()
                chunk = body[start:]
                if outer.cut_after is not None:
                    chunk, outer.cut_after = chunk[: outer.cut_after], None
                self.wfile.write(chunk)
                self.wfile.flush()
                self.close_connection = True

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> "RangeServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


PAYLOAD = json.dumps([{"question_id": f"q{i}", "filler": "x" * 200} for i in range(200)]).encode()
NAME = "longmemeval_oracle.json"


def test_download_resumes_after_a_cut_connection_and_verifies_sha256(tmp_path):
    sha = hashlib.sha256(PAYLOAD).hexdigest()
    with RangeServer({NAME: PAYLOAD}, cut_first_after=10_000) as server:
        target = tmp_path / NAME
        digest = dataset_download.download(f"{server.url}/x/{NAME}", target, expected_sha256=sha, retry_wait=0)
    assert digest == sha and target.read_bytes() == PAYLOAD
    assert not target.with_name(NAME + ".part").exists()
    assert [r for _, r in server.requests] == [None, "bytes=10000-"]


def test_a_later_run_resumes_from_the_part_file(tmp_path, monkeypatch, capsys):
    with RangeServer({NAME: PAYLOAD}, cut_first_after=5_000) as server:
        target = tmp_path / NAME
        with pytest.raises(setup_project.UserError, match="partial file .* is kept"):
            dataset_download.download(f"{server.url}/x/{NAME}", target, expected_sha256=None, attempts=1)
        assert target.with_name(NAME + ".part").stat().st_size == 5_000
        project = tmp_path / "q"
        data = project / ".longmemeval-benchmarks" / "data"
        data.mkdir(parents=True)
        (data / (NAME + ".part")).write_bytes(PAYLOAD[:5_000])
        server.requests.clear()
        # The payload is not the real oracle file: give it as the official checksum (else its fingerprints refuse it)
        monkeypatch.setitem(facts.KNOWN_SHA256, ("cleaned", NAME), hashlib.sha256(PAYLOAD).hexdigest())
        assert run(["--project", str(project), "--skip-venv", "--download", "_oracle", "--base-url", server.url]) == 0
    assert server.requests == [(f"/datasets/xiaowu0162/longmemeval-cleaned/resolve/main/{NAME}", "bytes=5000-")]
    assert (data / NAME).read_bytes() == PAYLOAD
    cfg = config_of(project)
    assert cfg["datasetPath"] == f".longmemeval-benchmarks/data/{NAME}" and cfg["variant"] == "_oracle"


def test_sha256_mismatch_deletes_the_part_and_exits_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(facts.KNOWN_SHA256, ("cleaned", NAME), "0" * 64)
    with RangeServer({NAME: PAYLOAD}) as server:
        assert run(["--project", str(tmp_path), "--skip-venv", "--download", "_oracle",
                    "--base-url", server.url]) == 2
    err = capsys.readouterr().err
    assert "expected " + "0" * 64 in err and "deleted" in err
    data = tmp_path / ".longmemeval-benchmarks" / "data"
    assert not (data / NAME).exists() and not (data / (NAME + ".part")).exists()
    assert not (tmp_path / ".longmemeval-benchmarks" / "config.json").exists()


def test_a_file_already_in_place_is_verified_and_reused(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(facts.KNOWN_SHA256, ("cleaned", NAME), hashlib.sha256(PAYLOAD).hexdigest())
    data = tmp_path / ".longmemeval-benchmarks" / "data"
    data.mkdir(parents=True)
    (data / NAME).write_bytes(PAYLOAD)
    assert run(["--project", str(tmp_path), "--skip-venv", "--download", "_oracle", "--offline"]) == 0
    assert "sha256 verified" in capsys.readouterr().out


@pytest.mark.parametrize("extra", [["--offline"], ["--base-url", "http://127.0.0.1:9"]])
def test_offline_download_says_what_to_fetch_from_where_and_exits_2(tmp_path, capsys, extra):
    assert run(["--project", str(tmp_path), "--skip-venv", "--download", "_s", *extra]) == 2
    err = capsys.readouterr().err.splitlines()[-1]  # a progress line may precede the one error line
    assert err.startswith("error: ")
    assert "datasets/xiaowu0162/longmemeval-cleaned/resolve/main/longmemeval_s_cleaned.json" in err
    assert str(tmp_path / ".longmemeval-benchmarks" / "data") in err and "re-run this command" in err
    assert "pass --dataset PATH instead of --download" in err  # the way out for someone who has the file


def test_a_download_that_404s_or_keeps_failing_names_dataset_path_in_its_one_line(tmp_path, monkeypatch, capsys):
    with RangeServer({}) as server:  # 404 for every file
        assert run(["--project", str(tmp_path), "--skip-venv", "--download", "_oracle", "--base-url", server.url]) == 2
    [line] = [e for e in capsys.readouterr().err.splitlines() if e.startswith("error: ")]
    assert "answered HTTP 404" in line and "--dataset PATH" in line
    monkeypatch.setattr(dataset_download, "_fetch_into", lambda url, part, timeout: False)  # cut every time
    monkeypatch.setattr(dataset_download.time, "sleep", lambda s: None)
    assert run(["--project", str(tmp_path), "--skip-venv", "--download", "_oracle"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "kept failing" in err and "--dataset PATH" in err


# --------------------------------------------------------------------------- upstream clone


def git(*args: str, cwd: Path | None = None) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=env).stdout.strip()


@pytest.fixture
def upstream_bare(tmp_path) -> tuple[Path, str]:
    """A bare repo whose first commit has a judge file and whose later commit removes it: pinning matters."""
    work = tmp_path / "upstream-work"
    (work / "src" / "evaluation").mkdir(parents=True)
    (work / "src" / "evaluation" / "evaluate_qa.py").write_text(
        "def get_anscheck_prompt(task, question, answer, response, abstention=False):\n"
        "    return 'STANDIN judge prompt'\n")
    git("init", "-q", "-b", "main", cwd=work)
    git("add", ".", cwd=work)
    git("commit", "-q", "-m", "judge", cwd=work)
    pinned = git("rev-parse", "HEAD", cwd=work)
    (work / "src" / "evaluation" / "evaluate_qa.py").unlink()
    git("commit", "-q", "-am", "later change", cwd=work)
    bare = tmp_path / "upstream.git"
    git("clone", "-q", "--bare", str(work), str(bare))
    return bare, pinned


def test_clone_from_a_local_bare_repo_at_the_pinned_commit(tmp_path, upstream_bare, monkeypatch):
    bare, pinned = upstream_bare
    monkeypatch.setattr(setup_project, "UPSTREAM_COMMIT", pinned)
    project = tmp_path / "proj"
    root = project / ".longmemeval-benchmarks" / "LongMemEval"
    report = setup_project.Report()
    setup_project.clone_upstream(root, report, url=str(bare), commit=pinned)
    assert git("-C", str(root), "rev-parse", "HEAD") == pinned
    assert (root / "src" / "evaluation" / "evaluate_qa.py").exists()
    before = tree(root)
    setup_project.clone_upstream(root, report, url=str(bare), commit=pinned)
    assert "nothing to do" in report.lines[-1] and tree(root) == before
    assert [p.name for p in root.parent.iterdir()] == [root.name]


def test_a_killed_clone_leaves_a_folder_the_next_start_sweeps(tmp_path, monkeypatch):
    from lme.core import fileio

    project = tmp_path / "proj"
    root = project / ".longmemeval-benchmarks" / "LongMemEval"
    staged = []

    def killed(argv, **kw):  # the clone writes, then the process dies before it can tidy up
        staged.append(Path(argv[-1]))
        (staged[-1] / "partial").write_text("x")
        raise KeyboardInterrupt

    monkeypatch.setattr(upstream_checkout.shutil, "rmtree", lambda *a, **k: None)
    with pytest.raises(KeyboardInterrupt):
        setup_project.clone_upstream(root, setup_project.Report(), url="https://example.invalid/x.git",
                                     runner=killed)
    assert staged[0].parent == root.parent and staged[0].is_dir() and fileio.is_temp_name(staged[0].name)
    old = staged[0].stat().st_mtime - 2 * fileio.STALE_TEMP_AGE_S
    for path in (staged[0] / "partial", staged[0]):
        os.utime(path, (old, old))
    monkeypatch.undo()
    assert fileio.clean_leftovers(project).count >= 1 and not staged[0].exists()


def test_clone_upstream_flag_sets_longmemeval_root_in_config(tmp_path, upstream_bare):
    bare, pinned = upstream_bare
    project = tmp_path / "proj"
    # the default pin is upstream's real commit, absent from this bare repo: a clear error, nothing left behind
    assert run(["--project", str(project), "--skip-venv", "--clone-upstream", "--upstream-url", str(bare)]) == 2
    assert not (project / ".longmemeval-benchmarks" / "LongMemEval").exists()
    root = project / "elsewhere" / "LME"
    setup_project.clone_upstream(root, setup_project.Report(), url=str(bare), commit=pinned)
    assert run(["--project", str(project), "--skip-venv", "--longmemeval-root", "elsewhere/LME"]) == 0
    assert config_of(project)["longmemeval_root"] == "elsewhere/LME"


def test_longmemeval_root_alone_says_the_judge_prompts_were_found_there(tmp_path, capsys):
    from upstream_standin import make_upstream_tree

    root = make_upstream_tree(tmp_path / "elsewhere")
    assert run(["--project", str(tmp_path / "p"), "--skip-venv", "--sample", "--longmemeval-root", str(root)]) == 0
    out = capsys.readouterr().out
    assert f"upstream  judge prompts found in {root} (src/evaluation/evaluate_qa.py defines get_anscheck_prompt)" in out
    assert config_of(tmp_path / "p")["longmemeval_root"] == str(root)


def test_a_checkout_without_the_judge_function_is_refused(tmp_path, capsys):
    (tmp_path / "lme" / "src" / "evaluation").mkdir(parents=True)
    (tmp_path / "lme" / "src" / "evaluation" / "evaluate_qa.py").write_text("print('hi')\n")
    assert run(["--project", str(tmp_path), "--skip-venv", "--longmemeval-root", str(tmp_path / "lme")]) == 2
    assert "get_anscheck_prompt" in capsys.readouterr().err
    assert not (tmp_path / ".longmemeval-benchmarks").exists()


def test_offline_clone_prints_the_commands_to_run(tmp_path, capsys):
    assert run(["--project", str(tmp_path), "--skip-venv", "--clone-upstream", "--offline"]) == 2
    err = capsys.readouterr().err
    assert f"git clone {setup_project.UPSTREAM_URL}" in err and setup_project.UPSTREAM_COMMIT in err
    assert "--longmemeval-root PATH" in err


def test_a_clone_without_network_names_the_checkout_you_may_already_have(tmp_path, capsys):
    unreachable = "http://127.0.0.1:9/LongMemEval.git"  # the discard port: nothing listens, as with no network
    assert run(["--project", str(tmp_path), "--skip-venv", "--clone-upstream", "--upstream-url", unreachable]) == 2
    err = capsys.readouterr().err
    assert "git clone" in err and "failed" in err and "--longmemeval-root PATH" in err
    assert len(err.strip().splitlines()) <= 2


def test_pinned_commit_is_upstreams_full_sha():
    assert len(setup_project.UPSTREAM_COMMIT) == 40 and setup_project.UPSTREAM_COMMIT.startswith("9e0b455")


@pytest.mark.parametrize("blocker", [".longmemeval-benchmarks", ".longmemeval-benchmarks/data",
                                     ".longmemeval-venv", ".longmemeval-benchmarks/config.json"])
def test_a_file_where_setup_needs_a_folder_is_one_line_exit_2_and_writes_nothing(tmp_path, capsys, blocker):
    path = tmp_path / blocker
    path.parent.mkdir(parents=True, exist_ok=True)
    if blocker.endswith("config.json"):
        path.mkdir()
    else:
        path.write_text("not a folder")
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    argv = ["--project", str(tmp_path), "--sample"] + ([] if "venv" in blocker else ["--skip-venv"])
    assert run(argv) == 2
    err = capsys.readouterr().err
    assert str(path) in err and err.count("\n") == 1
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before


def test_downloading_into_a_sample_project_says_the_offline_target_and_judge_remain(tmp_path, capsys, monkeypatch):
    assert run(["--project", str(tmp_path), "--sample", "--skip-venv"]) == 0
    data = tmp_path / ".longmemeval-benchmarks" / "data"
    (data / "longmemeval_oracle.json").write_bytes(SAMPLE_DATASET.read_bytes())
    monkeypatch.setitem(facts.KNOWN_SHA256, ("cleaned", "longmemeval_oracle.json"),  # stands in for it
                        hashlib.sha256(SAMPLE_DATASET.read_bytes()).hexdigest())
    capsys.readouterr()
    assert run(["--project", str(tmp_path), "--skip-venv", "--download", "_oracle", "--offline"]) == 0
    out = capsys.readouterr().out
    assert f"next: {command_names.step(command_names.SETUP, '--download _oracle --force-config')}" in out


# --------------------------------------------------------------------------- issue 14: a local dataset, .gitignore


def test_a_local_dataset_is_verified_fingerprinted_and_linked(tmp_path, capsys):
    outside = tmp_path / "mine" / "longmemeval_s_cleaned.json"
    outside.parent.mkdir()
    outside.write_bytes(SAMPLE_DATASET.read_bytes())
    project = tmp_path / "p"
    assert run(["--project", str(project), "--skip-venv", "--dataset", str(outside)]) == 0
    link = project / ".longmemeval-benchmarks" / "data" / outside.name
    assert link.is_symlink() and link.resolve() == outside.resolve()
    assert config_of(project)["datasetPath"] == f".longmemeval-benchmarks/data/{outside.name}"
    out = capsys.readouterr().out
    assert f"linked {outside.resolve()}" in out and "dataset   none" not in out


@pytest.mark.parametrize("content,why", [("", "not a readable JSON file"), ("[1, 2]", "not a LongMemEval file"),
                                         ('{"question_id": "q"}', "not a LongMemEval file")])
def test_a_local_dataset_that_is_not_longmemeval_is_refused_before_anything_is_written(tmp_path, capsys, content,
                                                                                       why):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    project = tmp_path / "p"
    project.mkdir()
    assert run(["--project", str(project), "--skip-venv", "--dataset", str(bad)]) == 2
    err = capsys.readouterr().err
    assert why in err and len(err.strip().splitlines()) == 1
    assert list(project.iterdir()) == []


def test_downloading_the_oracle_verifies_a_file_already_there_by_its_fingerprints(tmp_path, capsys):
    data = tmp_path / ".longmemeval-benchmarks" / "data"
    data.mkdir(parents=True)
    (data / "longmemeval_oracle.json").write_bytes(SAMPLE_DATASET.read_bytes())  # not the oracle
    assert run(["--project", str(tmp_path), "--skip-venv", "--download", "_oracle", "--offline"]) == 2
    assert "is not the cleaned _oracle file" in capsys.readouterr().err


def test_setup_ignores_the_venv_caches_and_runs_in_the_project_gitignore_never_the_config(tmp_path, capsys):
    from lme.core import project_ignore

    (tmp_path / ".gitignore").write_text("node_modules\n.longmemeval-venv\n")
    assert run(["--project", str(tmp_path), "--sample", "--skip-venv"]) == 0
    text = (tmp_path / ".gitignore").read_text()
    assert text.startswith("node_modules\n.longmemeval-venv\n") and text.count("longmemeval-venv") == 1
    assert ".longmemeval-benchmarks/runs/" in text and ".longmemeval-benchmarks/cache/" in text
    assert "config" not in text.replace("the config is", "")
    assert project_ignore.ensure_gitignore(tmp_path) == []  # a second setup adds nothing
    assert run(["--project", str(tmp_path), "--sample", "--skip-venv"]) == 0
    assert (tmp_path / ".gitignore").read_text() == text


def test_skip_venv_without_a_dataset_names_one_next_step(tmp_path, capsys):
    assert run(["--project", str(tmp_path), "--skip-venv"]) == 0
    out = capsys.readouterr().out
    assert "re-run with" not in out
    nexts = [line for line in out.splitlines() if line.startswith("next:")]
    assert nexts == [f"next: {setup_project.no_dataset_next()}"] and "--sample" in nexts[0]
