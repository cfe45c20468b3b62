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
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from lme.cli import claude_settings  # stdlib only, as every import here
from lme.cli import setup_job
from lme.core import cli_parser, command_names, fileio, project_ignore, unattended
from lme.core.config_setup import apply_config
from lme.core.errors import UserError, run_main
from lme.core.facts import (
    JUDGE_PROMPT_FUNCTION,
    JUDGE_TEMPLATE_RELPATH,
    OFFLINE,
    OFFLINE_JUDGE_MODEL,
    OFFLINE_TARGET_MODEL,
    RELEASES,
    SAMPLE_FILE,
    STATE_DIR,
    UPSTREAM_COMMIT,
    UPSTREAM_DIR,
    UPSTREAM_URL,
    VENV_DIR,
    is_offline,
    resolve_variant,
)
from lme.core.project_folder import check_project_writable, check_state_paths, project_relative
from lme.core.project_venv import ensure_venv
from lme.core.setup_steps import Report
from lme.data.dataset_download import DEFAULT_BASE_URL, check_http_url, fetch_dataset
from lme.data.project_dataset import adopt_dataset, check_local_dataset, install_sample
from lme.judge.upstream_checkout import check_git_url, clone_upstream, verify_upstream

SAMPLE_SETTINGS = {
    "variant": "_s",
    "target": "offline",
    "targetProvider": OFFLINE,
    "targetModel": OFFLINE_TARGET_MODEL,
    "judgeProvider": OFFLINE,
    "judgeModel": OFFLINE_JUDGE_MODEL,
}

VARIANT_WORDS = {"unknown": "unknown dataset variant", "fix": "use one of _s, _m, _oracle"}
"""``facts.resolve_variant``'s refusal in setup's words."""


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
    root = (args.longmemeval_root or Path(UPSTREAM_DIR)).expanduser()
    root = root if root.is_absolute() else project / root
    if args.longmemeval_root and not args.clone_upstream:
        verify_upstream(root)
    if args.allow_unattended:
        claude_settings.check_settings_file(project)
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
        report.add("upstream", f"judge prompts found in {root} ({JUDGE_TEMPLATE_RELPATH} defines {JUDGE_PROMPT_FUNCTION})")
    if args.clone_upstream or args.longmemeval_root:
        wanted["longmemeval_root"] = project_relative(project, root)
    project_ignore.write_state_gitignore(project)
    config = apply_config(project, wanted, report, force=args.force_config)
    ignored = project_ignore.ensure_gitignore(project)
    report.add("gitignore", f"added {', '.join(ignored)} to {project / '.gitignore'}" if ignored
               else "the project's .gitignore already ignores the venv, caches and runs")
    claude_settings.write_opt_ins(project, report, allow=args.allow_unattended, short=args.short_commands)
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
    uses_sample = str(config.get("datasetPath", "")).endswith(SAMPLE_FILE)
    if is_offline(config.get("judgeProvider")) and (downloaded or not uses_sample):
        variant = resolve_variant(downloaded, **VARIANT_WORDS) if downloaded else config.get("variant", "_s")
        return (f"{command_names.step(command_names.SETUP, f'--download {variant} --force-config')}   (your config "
                "still uses the offline sample's dataset, target and judge; this writes the real defaults, keeping a .bak)")
    if is_offline(config.get("judgeProvider")):
        return f"{command_names.step(command_names.RUN, '--max 3')}   (offline sample run; no keys needed)"
    return (f"{command_names.step(command_names.RUN, '--dry-run')}   (checks config, dataset and keys without "
            "spending anything)")
