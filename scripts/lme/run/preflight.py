"""Check that a run can start: config, the target (its file or program, its required options, and for your own
system one item through it: ``smoke_test``), dataset, upstream judge checkout, API keys, runs dir, the official
judge's countdown (its entry in the model list: the one read made, free). Calls no model of ours (the smoke test's
system makes its own calls, if any; no judge call).

The command (its parser, ``main()`` and help text) is ``lme/cli/preflight.py``."""

from __future__ import annotations

import os
import time
import sys
from pathlib import Path

from lme.core import command_names
from lme.core.facts import HYPOTHESES_TARGET, is_offline
from lme.data import hypotheses_file
from lme.core.errors import UserError
from lme.judge import official
from lme.core.endpoint_urls import redact
from lme.models import judge_entry
from lme.targets import api_check, generation_driver
from lme.targets.targets import users_system
from lme.models import providers
from lme.data import dataset
from lme.core.records import Question
from lme.run.progress import one_line

KEY_VARS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "azure": "AZURE_OPENAI_API_KEY"}


def check_inputs(settings) -> None:
    """Refuse up front what would fail every item: an unknown target, bad target options, no judge prompt."""
    for warning in api_check.check_target(settings.target, Path(settings.project)):  # an outdated copy: refused
        print(warning, file=sys.stderr)
    try:
        generation_driver.describe_target(settings.target, settings.target_options)
    except UserError:
        raise
    except ImportError as err:  # not an option's fault: the code imports what is not there
        raise UserError(f"target {settings.target} cannot be loaded: {err}",
                        fix='import from the toolkit only what plugins/README.md lists ("The public target API")'
                        ) from None
    except Exception as err:  # a target's own validation (ValueError, TypeError, ...): it names the option
        raise UserError(f"target {settings.target}: bad target options {dict(settings.target_options)}: {err}",
                        fix="set them with --target-option key=value or targetOptions; plugins/README.md") from None
    if settings.target == HYPOTHESES_TARGET:  # a bad, changed or mismatched file: one line, before anything
        hypotheses_file.check_run_inputs(settings)
    if not is_offline(settings.judge_provider):
        official.load_prompt_builder(settings.longmemeval_root)
    if "azure" in (settings.judge_provider, settings.target_provider):
        try:
            providers.azure_target(providers.ProviderSettings(azure=dict(settings.azure)))
        except providers.ProviderError as err:
            raise UserError(str(err), fix='e.g. "providers": {"azure": {"endpoint": "https://<resource>.openai.azure.com", '
                                          '"deployment": "<your gpt-4o-2024-08-06 deployment>", "api_version": '
                                          '"2024-10-21"}} in .longmemeval-benchmarks/config.json') from None


def checks(settings) -> list[tuple[bool | None, str]]:
    """(passed, message) per check, for the resolved RunSettings; passed None is a warning that does not fail."""
    results: list[tuple[bool | None, str]] = []
    try:
        warnings = api_check.check_target(settings.target, Path(settings.project))
        generation_driver.describe_target(settings.target, settings.target_options)
        target_ok = True
        results.append((True, f"target {settings.target} and its options"))
        results += [(None, warning) for warning in warnings]
    except Exception as err:  # noqa: BLE001 - reported as a FAIL line
        target_ok = False
        results.append((False, f"target {settings.target}: {err}"))
    dataset_path = Path(settings.dataset_path)
    if dataset_path.is_file():
        results.append((True, f"dataset {dataset_path}"))
        if target_ok and users_system(settings.target):
            results.append(smoke_test(settings))
    else:
        results.append((False, f"dataset {dataset_path} not found: run {command_names.SETUP} (--download {settings.variant} or --sample), or set datasetPath"))
    if settings.target == HYPOTHESES_TARGET and dataset_path.is_file():
        try:
            hf, missing = hypotheses_file.check_run_inputs(settings)
            gaps = f"; {len(missing)} of the dataset's questions have none (error rows)" if missing else ""
            results.append((True, f"hypotheses {hf.path}: {len(hf.hypotheses)} answers, all in the dataset{gaps}"))
        except UserError as err:
            results.append((False, str(err)))

    if not is_offline(settings.judge_provider):
        try:
            builder = official.load_prompt_builder(settings.longmemeval_root)
        except UserError:
            results.append((False, f"upstream LongMemEval checkout missing at {settings.longmemeval_root}: run "
                                   f"{command_names.SETUP} --clone-upstream, or set longmemeval_root"))
        else:
            if builder.is_upstream:
                results.append((True, f"upstream judge prompts {builder.path}"))
            else:
                results.append((None, f"judge prompt in {builder.path} is not upstream's get_anscheck_prompt "
                                      f"(sha256 {builder.function_sha256[:12]}): verdicts will be non-official"))

    providers_in_use = {settings.target_provider, settings.judge_provider}
    for provider in sorted(providers_in_use):
        var = KEY_VARS.get(provider)
        if var is None:
            continue
        if settings.base_urls.get(provider) or os.environ.get(var):
            results.append((True, f"{var} is set" if os.environ.get(var) else
                            f"{provider} uses base_url {redact(settings.base_urls[provider])}"))
        else:
            results.append((False, f"{var} is not set: export it in the shell that runs the benchmark"))

    results += official_judge_checks(settings)
    runs_dir = Path(settings.runs_dir)
    probe = runs_dir if runs_dir.exists() else runs_dir.parent
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if os.access(probe, os.W_OK):
        results.append((True, f"runs dir {runs_dir} is writable"))
    else:
        results.append((False, f"runs dir {runs_dir} is not writable: fix permissions or set runs_dir"))
    return results


SMOKE_ANSWER_CHARS = 80


def smoke_test(settings) -> tuple[bool, str]:
    """Your own system (a python file, a command) on the dataset's first item, before a paid run: what it answered
    or why it failed, in one line. No judge call; the system makes its own model calls, if any."""
    raw = next(iter(dataset.iter_items(Path(settings.dataset_path))), None)
    if raw is None:
        return False, "target smoke test: the dataset has no item"
    q = Question.from_dict(raw)
    t0 = time.monotonic()
    try:
        hyp = generation_driver.run_target(q, settings.target_provider, settings.target_model, target=settings.target,
                                           options=dict(settings.target_options), cache_dir=settings.cache_dir)
    except Exception as err:  # noqa: BLE001 - what the user's system did is the line
        return False, (f"target smoke test ({q.question_id}, one item, no judge call) failed: "
                       f"{one_line(str(err))}")
    answer = one_line(hyp.hypothesis, SMOKE_ANSWER_CHARS)
    return True, (f"target smoke test ({q.question_id}, one item, no judge call): answered {answer!r} in "
                  f"{time.monotonic() - t0:.1f} s")


def smoke_line(settings) -> str | None:
    """The smoke test as pre-flight prints it (``ok   ...`` / ``FAIL ...``), for your own system only."""
    if not users_system(settings.target) or not Path(settings.dataset_path).is_file():
        return None
    passed, line = smoke_test(settings)
    return f"{'ok  ' if passed else 'FAIL'} {line}"


def official_judge_checks(settings) -> list[tuple[bool | None, str]]:
    """The official judge's countdown (its model-list entry's ``shutdown_date``), or that date passed, as warnings:
    the one model-list read pre-flight makes (free; no model call). Nothing when the judge is not the official one,
    its key is not set, or the list cannot be read (a gateway without the route: that is not a retired judge)."""
    entry = judge_entry.read_entry(settings) if os.environ.get(KEY_VARS["openai"]) else None
    if entry is None:
        return []
    if entry.gone:
        return [(None, f"the official judge {settings.judge_model} is gone here ({entry.why}): "
                       f"{official.CONTINUITY_HINT}")]
    line = judge_entry.countdown_line(entry)
    return [] if line is None else [(None, line)]
