"""Docs are code: run every ```bash block of the plugin's Markdown as written, in a project prepared like a user's.

Files: ``commands/*.md``, ``skills/*/SKILL.md``, ``references/*.md``, ``README.md`` (whose "Without Claude
Code" blocks run with ``$PLUGIN``, the checkout, as it says) and ``plugins/README.md`` (your own system's worked
example, also with ``$PLUGIN``). The blocks of one file run in order in ONE bash
process, each in its own subshell with ``set -e`` (like Claude Code, which runs each block as its own command:
variables do not carry from one block to the next). The first failing block stops the file and is reported with
file, block number, line and its output.

Directives, on the lines before a block (blank lines allowed in between; several may stack):
    <!-- doc-test: skip why -->          the block is not run (the test prints it)
    <!-- doc-test: args --max 3 -->      ``$ARGUMENTS`` for this block
    <!-- doc-test: agent NAME -->        before the block, in its subshell, run ``AGENT_STANDINS[NAME]``: shell
                                         that plays what the agent does between blocks without bash (the edit a
                                         fix makes). Kept here, not in the doc, so no agent mistakes it for a step
Anywhere in a file:
    <!-- doc-test: setup NAME -->        prepare the project with ``SETUPS[NAME]`` before the file's blocks run
                                         (e.g. ``loop``: loop configuration and a model server with answers)

Claude Code substitutes ``$ARGUMENTS`` in a command's body before running it; the harness does the same textual
substitution for ``commands/*.md``. In skills and references ``ARGUMENTS`` is only an environment variable.
``${CLAUDE_PLUGIN_ROOT}`` is an environment variable of the blocks (the plugin's checkout): Claude Code
substitutes it in commands and skills, and references tell the agent to write the same path in by hand.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

REPO = Path(__file__).resolve().parent.parent

#: ``$ARGUMENTS`` per command when no directive picks them: runs stay offline, small and keyless.
DEFAULT_ARGUMENTS: Mapping[str, str] = {
    "commands/longmemeval-setup.md": "--sample --skip-venv",
    "commands/longmemeval-run.md": "--max 3",
}

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>[^`\n]*)$")
_DIRECTIVE = re.compile(r"^\s*<!--\s*doc-test:\s*(?P<verb>skip|args|agent|setup)\b(?P<rest>.*?)-->\s*$")
_MARK = "@@doc-test"

#: What the agent does without bash between two blocks (the ``agent`` directive), played by shell in tests.
AGENT_STANDINS: dict[str, str] = {
    # the loop skill's step 6: the proposal (step C) and the fix's code change, made with the editor
    "write-fix": (
        "printf 'Prefer the latest session when two sessions disagree\\n\\n"
        "Files: memory_system/answer_policy.py. Must not touch: abstention, the symbolic layers.\\n' "
        "> .longmemeval-benchmarks/proposal.md\n"
        "printf 'PREFER_LATEST_SESSION = True\\n' > memory_system/answer_policy.py"
    ),
}


@dataclass(frozen=True)
class Block:
    path: Path
    number: int
    """1-based among the file's bash blocks."""
    line: int
    """1-based line of the opening fence."""
    code: str
    skip: str | None = None
    args: str | None = None
    agent: str | None = None
    """A key of ``AGENT_STANDINS``: run before the block's code."""


@dataclass
class FileResult:
    path: Path
    ran: list[int] = field(default_factory=list)
    skipped: list[tuple[int, str]] = field(default_factory=list)
    failed: Block | None = None
    exit_code: int = 0
    output: str = ""
    """The failing block's output (or the whole output when the file passed)."""

    def describe_failure(self) -> str:
        if self.failed is None:
            return ""
        where = _relative(self.path)
        return (f"{where}: bash block {self.failed.number} (line {self.failed.line}) exited with {self.exit_code}\n"
                f"--- block ---\n{self.failed.code}--- output ---\n{self.output[-6000:]}")


def _relative(path: Path) -> str:
    try:
        return path.resolve().relative_to(REPO).as_posix()
    except ValueError:
        return str(path)


def doc_files(repo: Path = REPO) -> list[Path]:
    """Every Markdown file whose bash blocks must run."""
    files = [*sorted((repo / "commands").glob("*.md")), *sorted((repo / "skills").glob("*/SKILL.md")),
             *sorted((repo / "references").glob("*.md")), repo / "README.md", repo / "plugins" / "README.md"]
    return [f for f in files if f.is_file()]


def is_command(path: Path) -> bool:
    return path.parent.name == "commands"


def extract_blocks(path: Path) -> list[Block]:
    """The ```bash blocks of ``path`` in order, with their directives. Indented fences (in lists) are dedented."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    pending: dict[str, str] = {}
    i = 0
    while i < len(lines):
        directive = _DIRECTIVE.match(lines[i])
        if directive:
            if directive["verb"] != "setup":  # file-wide: see file_setups
                pending[directive["verb"]] = directive["rest"].strip()
            i += 1
            continue
        fence = _FENCE.match(lines[i])
        if not fence:
            if lines[i].strip():
                pending = {}
            i += 1
            continue
        opener, indent = fence["fence"], fence["indent"]
        language = fence["info"].strip().split(" ")[0].lower() if fence["info"].strip() else ""
        start = i
        body: list[str] = []
        i += 1
        while i < len(lines):
            closing = _FENCE.match(lines[i])
            if closing and closing["fence"][0] == opener[0] and len(closing["fence"]) >= len(opener) \
                    and not closing["info"].strip():
                break
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i].lstrip())
            i += 1
        i += 1
        if language == "bash":
            blocks.append(Block(path=path, number=len(blocks) + 1, line=start + 1,
                                code="\n".join(body) + "\n",
                                skip=(pending["skip"] or "no reason given") if "skip" in pending else None,
                                args=pending.get("args"), agent=pending.get("agent") or None))
            if blocks[-1].agent is not None and blocks[-1].agent not in AGENT_STANDINS:
                raise ValueError(f"{_relative(path)}:{start + 1}: unknown doc-test agent stand-in "
                                 f"{blocks[-1].agent!r} (known: {', '.join(AGENT_STANDINS)})")
        pending = {}
    return blocks


def file_setups(path: Path) -> list[str]:
    """The names of the file's ``setup`` directives, in order."""
    names = []
    for line in path.read_text(encoding="utf-8").splitlines():
        directive = _DIRECTIVE.match(line)
        if directive and directive["verb"] == "setup":
            names += directive["rest"].split()
    return names


def default_arguments(path: Path) -> str:
    return DEFAULT_ARGUMENTS.get(_relative(path), "")


def build_script(blocks: list[Block], *, substitute: bool, default_args: str) -> str:
    """One bash script: each runnable block in a ``set -e`` subshell, markers around it, stop at the first failure."""
    parts = ["exec </dev/null"]
    for block in blocks:
        if block.skip is not None:
            continue
        args = default_args if block.args is None else block.args
        code = block.code.replace("$ARGUMENTS", args) if substitute else block.code
        parts.append(f"echo '{_MARK} start {block.number}'")
        before = f"{AGENT_STANDINS[block.agent]}\n" if block.agent else ""
        parts.append(f"(\nset -e\nexport ARGUMENTS={shlex.quote(args)}\n{before}{code}\n)")
        parts.append(f"__rc=$?; if [ $__rc -ne 0 ]; then echo \"{_MARK} failed {block.number} $__rc\"; "
                     f"exit $__rc; fi")
    parts.append(f"echo '{_MARK} done'")
    return "\n".join(parts) + "\n"


def _block_output(output: str, number: int) -> str:
    match = re.search(rf"^{_MARK} start {number}\n(.*?)(?=^{_MARK} |\Z)", output, re.S | re.M)
    return match.group(1) if match else output


def run_file(path: Path, project: Path, env: Mapping[str, str], *, timeout: float = 300) -> FileResult:
    """Run ``path``'s bash blocks in ``project``; the result names the first failing block, if any."""
    blocks = extract_blocks(path)
    result = FileResult(path=path, skipped=[(b.number, b.skip) for b in blocks if b.skip is not None])
    script = build_script(blocks, substitute=is_command(path), default_args=default_arguments(path))
    with subprocess.Popen(["bash", "-c", script], cwd=project, env=dict(env), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, start_new_session=True) as proc:
        try:
            output, _ = proc.communicate(timeout=timeout)
            code = proc.returncode
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the whole group: blocks may have started children
            output, _ = proc.communicate()
            output += f"\n(timed out after {timeout:.0f} s)"
            code = 124
    started = [int(n) for n in re.findall(rf"^{_MARK} start (\d+)$", output, re.M)]
    result.ran = started
    if code != 0 or f"{_MARK} done" not in output:
        number = started[-1] if started else blocks[0].number if blocks else 0
        result.failed = next((b for b in blocks if b.number == number), None) or Block(path, 0, 0, script)
        result.exit_code = code or 1
        result.output = _block_output(output, number)
    else:
        result.output = output
    return result


# --------------------------------------------------------------------------- the user's project


def _git(*args: str, cwd: Path, env: Mapping[str, str]) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=dict(env), check=True, capture_output=True, text=True)


def make_sample_run(project: Path, env: Mapping[str, str], *, max_items: int = 5) -> Path | None:
    """An offline run of the sample in ``project`` (users who report or iterate have runs). None if it fails."""
    done = subprocess.run([str(project / ".longmemeval-venv" / "bin" / "python"),
                           str(REPO / "scripts" / "run_benchmark.py"), "--project", str(project), "--offline",
                           "--max", str(max_items), "--progress", "quiet"],
                          cwd=project, env=dict(env), capture_output=True, text=True, timeout=300)
    runs = project / ".longmemeval-benchmarks" / "runs"
    if done.returncode != 0 or not runs.is_dir():
        return None
    return runs


def prepare_project(root: Path, python: str, base_env: Mapping[str, str], *,
                    longmemeval_root: Path | None = None,
                    runs_from: Path | None = None, run_setup: bool = True) -> tuple[Path, dict[str, str]]:
    """A temp project like a user's: git on ``longmemeval-iter`` with a bare ``origin``, an installed venv whose
    python runs ``python``, and ``setup_project.py --sample`` already run (unless ``run_setup`` is false).
    Returns (project, env for the blocks)."""
    project = root / "project"
    origin = root / "origin.git"
    project.mkdir(parents=True)
    env = dict(base_env)
    env.update({
        "CLAUDE_PLUGIN_ROOT": str(REPO),
        "PLUGIN": str(REPO),  # README's shell blocks: "PLUGIN is this checkout"
        "GIT_AUTHOR_NAME": "doc-test", "GIT_AUTHOR_EMAIL": "doc-test@example.invalid",
        "GIT_COMMITTER_NAME": "doc-test", "GIT_COMMITTER_EMAIL": "doc-test@example.invalid",
        # what Claude Code sets for its Bash commands: the loop skill's loop_session.py start records it
        "CLAUDE_CODE_SESSION_ID": "doc-test-session",
    })
    env.pop("PYTHONPATH", None)
    # Bytecode is cached, as on a user's machine, but under the suite's PYTHONPYCACHEPREFIX (tests/conftest.py),
    # outside the checkout and the project: with PYTHONDONTWRITEBYTECODE every block's command compiled what the
    # cache lacked again.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    _git("init", "-q", "--bare", str(origin), cwd=root, env=env)
    _git("init", "-q", "-b", "longmemeval-iter", cwd=project, env=env)
    (project / "README.md").write_text("A project measured with LongMemEval.\n", encoding="utf-8")
    _git("add", "README.md", cwd=project, env=env)
    _git("commit", "-q", "-m", "start", cwd=project, env=env)
    _git("remote", "add", "origin", str(origin), cwd=project, env=env)
    _git("push", "-q", "-u", "origin", "longmemeval-iter", cwd=project, env=env)

    venv_bin = project / ".longmemeval-venv" / "bin"
    venv_bin.mkdir(parents=True)
    wrapper = venv_bin / "python"
    wrapper.write_text(f"#!/bin/sh\nexec {shlex.quote(python)} \"$@\"\n", encoding="utf-8")
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    # The marker setup_project.py leaves after installing the requirements: this venv counts as installed.
    digest = hashlib.sha256((REPO / "scripts" / "requirements.txt").read_bytes()).hexdigest()
    (venv_bin.parent / ".longmemeval-requirements.sha256").write_text(digest + "\n", encoding="utf-8")
    env["PATH"] = f"{venv_bin}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv_bin.parent)

    setup = [python, str(REPO / "scripts" / "setup_project.py"), "--project", str(project), "--sample",
             "--skip-venv"]
    if longmemeval_root is not None:
        env["LONGMEMEVAL_ROOT"] = str(longmemeval_root)
        setup += ["--longmemeval-root", str(longmemeval_root)]
    if not run_setup:
        return project, env
    done = subprocess.run(setup, cwd=project, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"setup_project.py failed while preparing the doc-test project:\n{done.stderr}")
    if runs_from is not None:
        shutil.copytree(runs_from, project / ".longmemeval-benchmarks" / "runs", dirs_exist_ok=True)
    return project, env


# --------------------------------------------------------------------------- per-file setups (``setup`` directive)

#: The loop's configuration in doc tests: the default target (memory-ref) with a reader and the judge the fake
#: model server answers; the judge's prompt comes from the stand-in upstream tree, so verdicts are not official.
LOOP_CONFIG: Mapping[str, Any] = {
    "target": "memory-ref",
    "target_model": "openai:gpt-4o-mini",
    "judge": "openai:gpt-4o",
    "targetOptions": {"symbolic_resolver": True, "symbolic_temporal": True, "symbolic_bypass": True},
}


WRITER_CUE = "building a memory of a user"
"""memory-ref's writer prompt (plugins/memory_ref/writer.py): its requests get fact lines, not an answer."""


def writer_aware(answer_fn: Callable[[Any], str | None] | None = None) -> Callable[[Any], str | None]:
    """A fake-server reader policy that answers memory-ref's writer calls with one well-formed fact line (the
    session's first words), so the run's pipeline is healthy (pipeline_health); other calls go to ``answer_fn``
    (None: the server's own policy)."""
    from fake_llm_server import prompt_text

    def answer(body: Any) -> str | None:
        prompt = prompt_text(body)
        if WRITER_CUE in prompt:
            session = " ".join(prompt.split("Session:", 1)[-1].split())[:80]
            return json.dumps({"fact": f"The user said: {session}", "speaker": "user", "when": None,
                               "subject": None, "value": None, "category": None})
        return None if answer_fn is None else answer_fn(body)
    return answer


def _loop_setup(correct_share: float) -> Callable[[Path, dict[str, str], Any], None]:
    def setup(project: Path, env: dict[str, str], server: Any) -> None:
        """Loop-ready: config ``loop`` section, and the server taught the dataset's gold answers."""
        if server is None:
            raise ValueError("the loop setups need the fake model server (fixture fake_llm)")
        path = project / ".longmemeval-benchmarks" / "config.json"
        cfg = json.loads(path.read_text(encoding="utf-8"))
        cfg["loop"] = {**(cfg.get("loop") or {}), **LOOP_CONFIG}
        path.write_text(json.dumps(cfg, indent=2) + "\n", encoding="utf-8")
        items = json.loads((project / cfg["datasetPath"]).read_text(encoding="utf-8"))
        server.answers = {item["question"]: item["answer"] for item in items}
        server.correct_share = correct_share
        server.answer_fn = writer_aware()
    return setup


def _hypotheses_setup(project: Path, env: dict[str, str], server: Any) -> None:
    """The user's own stack already answered: ``hyps.jsonl`` in upstream's format, one line per dataset question."""
    cfg = json.loads((project / ".longmemeval-benchmarks" / "config.json").read_text(encoding="utf-8"))
    items = json.loads((project / cfg["datasetPath"]).read_text(encoding="utf-8"))
    (project / "hyps.jsonl").write_text("".join(
        json.dumps({"question_id": it["question_id"], "hypothesis": str(it["answer"])}) + "\n" for it in items))


def _confirm_every_cost(project: Path, env: dict[str, str], server: Any) -> None:
    """confirmCostUsd 0: every paid run stops at the cost gate unless approved (the 24-item sample costs far less
    than the default $5 a real ``_s`` run passes), so a paid run line without ``--yes`` fails the doc."""
    path = project / ".longmemeval-benchmarks" / "config.json"
    cfg = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**cfg, "confirmCostUsd": 0}, indent=2) + "\n", encoding="utf-8")
    if server is not None:
        items = json.loads((project / cfg["datasetPath"]).read_text(encoding="utf-8"))
        server.answers = {item["question"]: item["answer"] for item in items}


SETUPS: Mapping[str, Callable[[Path, dict[str, str], Any], None]] = {
    # the reader gives the gold answer for a stable half of the questions: below the target, right and wrong items
    "loop": _loop_setup(0.5),
    # the reader always gives the gold answer: the loop run reaches the target (for the confirmation rerun)
    "loop-at-target": _loop_setup(1.0),
    # a hypotheses file the user's stack wrote (run-benchmark's "judge a file of hypotheses")
    "hypotheses": _hypotheses_setup,
    # README's shell path: the cost gate applies to the sample as it does to a real run
    "confirm-every-cost": _confirm_every_cost,
}


def apply_setups(path: Path, project: Path, env: dict[str, str], server: Any = None) -> list[str]:
    """Run the file's ``setup`` directives on the prepared project; returns their names."""
    names = file_setups(path)
    for name in names:
        if name not in SETUPS:
            raise ValueError(f"{_relative(path)}: unknown doc-test setup {name!r} (known: {', '.join(SETUPS)})")
        SETUPS[name](project, env, server)
    return names
