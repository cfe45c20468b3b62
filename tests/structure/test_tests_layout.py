"""The tests' own layout: each test file in the folder of the stage it tests, so a reader finds it there.

tests/<stage>/ for each stage of scripts/lme/, plus the folders for what is not a stage of the library; the shared
helpers (factories.py, fake_llm_server.py, ...) sit in tests/ itself (tests/conftest.py puts every folder on
sys.path). pytest imports a test file by its bare name, so two files of one name in two folders would clash.

A module's tests are found by its name: ``scripts/lme/<stage>/<name>.py`` is tested in ``tests/<stage>/test_<name>.py``;
a command of ``lme/cli/`` in ``test_<name>.py`` beside the tests of the stage it drives; any other module is listed in
TESTED_UNDER_ANOTHER_NAME with the file that holds its behaviour and why it is not a file of its own."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
STAGES = {p.name for p in (TESTS.parent / "scripts" / "lme").iterdir() if (p / "__init__.py").is_file()}
NOT_STAGES = {
    "plugins": "the memory systems under test (plugins/)",
    "claude_code": "the plugin as the real Claude Code CLI loads and runs it",
    "docs": "the documented blocks, run as written",
    "fakes": "the fake servers the other tests run against",
    "structure": "the import structure and this layout",
    "upgrade": "projects older versions made (tests/fixtures/upgrade/), carried on by today's",
}
NOT_TESTS = {"benchmarks", "artifacts", "fixtures", "__pycache__"}


def all_test_files() -> list[Path]:
    return [p for p in TESTS.rglob("test_*.py") if "benchmarks" not in p.relative_to(TESTS).parts]


def test_no_test_file_is_left_in_the_flat_folder():
    assert sorted(p.name for p in TESTS.glob("test_*.py")) == [], "move it to the folder of the stage it tests"


def test_every_folder_of_tests_is_a_stage_or_says_what_it_holds():
    folders = {p.name for p in TESTS.iterdir() if p.is_dir() and not p.name.startswith(".")} - NOT_TESTS
    assert folders - STAGES - set(NOT_STAGES) == set()
    assert all(any((TESTS / name).glob("test_*.py")) for name in folders), "no empty folder"


def test_test_file_names_are_unique_across_folders():
    twice = [name for name, n in Counter(p.name for p in all_test_files()).items() if n > 1]
    assert twice == []


PART = "a part of its stage's face, whose tests go through it"
DRIVEN = "reached through the commands whose behaviour it shapes"
SETUP = "a step of setup_project.py, tested through the command"
TESTED_UNDER_ANOTHER_NAME: dict[str, tuple[str, str]] = {
    # module (stage/name): (the test file that holds its behaviour, why there)
    "cli/fingerprints": ("cli/test_entry_scripts.py", "a thin entry over data/fingerprints: its mistakes, one line"),
    "cli/judge_agreement": ("judge/test_judge_continuity.py", "the calibration command, beside the judge's day"),
    "cli/loop_session": ("loop/test_loop_stop_hook.py", "the loop session's record, read by the Stop hook"),
    "cli/loop_stack": ("loop/test_loop_own_system.py", "the loop's model stack on the user's own system"),
    "cli/loop_target": ("loop/test_loop_own_system.py", "the loop's target: the user's own file"),
    "core/clock": ("run/test_run_status.py", "the times a status prints"),
    "core/config_defaults": ("core/test_config.py", "the defaults as the config reads them"),
    "core/config_setup": ("cli/test_setup_project.py", SETUP),
    "core/config_file": ("core/test_config.py", "the config's one reader"),
    "core/entry_guard": ("cli/test_entry_scripts.py", "what every entry script does at its start"),
    "core/errors": ("cli/test_bad_inputs.py", "one clear line, exit 2, for every bad input"),
    "core/facts": ("structure/test_import_structure.py", "constants only: each defined once"),
    "core/old_debug": ("structure/test_debug_reads.py", "old rows' debug, read in one place"),
    "core/project_folder": ("cli/test_setup_project.py", SETUP),
    "core/process_life": ("cli/test_setup_job.py", "a background job's life"),
    "core/project_ignore": ("cli/test_setup_project.py", "what setup writes into the project"),
    "core/project_venv": ("cli/test_setup_project.py", SETUP),
    "core/records": ("judge/test_verdict_provenance.py", "records are tested where each boundary uses them"),
    "core/setup_steps": ("cli/test_setup_project.py", SETUP),
    "core/state_reader": ("core/test_fileio.py", "state files read with no link followed"),
    "core/unattended": ("cli/test_bad_inputs.py", "what a loop session refuses"),
    "data/dataset_download": ("cli/test_setup_project.py", SETUP),
    "data/dataset_label": ("report/test_report_html.py", "the dataset's words on the pages"),
    "data/fingerprints": ("score/test_validity_defects.py", "a file recognised by its content"),
    "data/holdout": ("plugins/test_retrieval_index.py", "the held-out items memory-ref tunes without"),
    "data/hypotheses_file": ("run/test_hypotheses_run.py", "a hypotheses file judged as a run"),
    "data/item_hash": ("score/test_validity_defects.py", "an item's fingerprint"),
    "data/project_dataset": ("cli/test_setup_project.py", SETUP),
    "data/upstream_files": ("score/test_interop.py", "upstream's files read as evaluate_qa.py reads them"),
    "judge/agreement": ("judge/test_judge_continuity.py", "agreement across the official judge's day"),
    "judge/agreement_figures": ("score/test_official_estimate.py", "the figures an estimate is made of"),
    "judge/archive_status": ("judge/test_verdict_archive.py", "judge_shim.py archive-status"),
    "judge/file_mode": ("judge/test_judge_shim.py", "judge_shim.py --hyp-file"),
    "judge/official": ("judge/test_judge_shim.py", "the official judge's prompt and call"),
    "judge/request_shapes": ("loop/test_judge_day.py", "the judge's request across the day"),
    "judge/successor_judge": ("judge/test_judge_retirement.py", "the successor named for the day after"),
    "judge/upstream_verdicts": ("judge/test_verdict_archive.py", "upstream's eval-results imported into the archive"),
    "judge/upstream_checkout": ("cli/test_setup_project.py", SETUP),
    "judge/verdict_sources": ("judge/test_verdict_provenance.py", "where each verdict came from"),
    "loop/branch": ("loop/test_loop_git.py", "the loop's git branch"),
    "loop/model_stack": ("loop/test_judge_day_runs.py", "the loop's models across the judge's day"),
    "loop/rules": ("loop/test_loop_guard.py", "the loop's standing rules"),
    "loop/session": ("loop/test_loop_stop_hook.py", "the session the Stop hook keeps going"),
    "loop/state": ("loop/test_rounds.py", "the loop's state through its rounds"),
    "loop/steps": ("loop/test_rounds.py", "the loop's steps (begin, commit, finish)"),
    "loop/stop_hook": ("loop/test_loop_stop_hook.py", "the Stop hook"),
    "loop/target": ("loop/test_loop_own_system.py", "the loop's target"),
    "models/batch_api": ("run/test_batch_run.py", "the Batch APIs, through the real SDKs against the fake server"),
    "models/endpoint_forward": ("models/test_target_endpoint.py", PART),
    "models/endpoint_sse": ("models/test_target_endpoint.py", PART),
    "models/provider_errors": ("models/test_judge_entry.py", "a provider's errors as the user reads them"),
    "models/provider_routes": ("models/test_provider_probe.py", "which provider a model goes to"),
    "models/rate_headers": ("models/test_rate_pacer.py", "the rate headers the pacer reads"),
    "models/request_bodies": ("store/test_batch_ledger.py", "the bodies a batch sends, as the ledger keeps them"),
    "models/retries": ("models/test_pacing_sdk.py", "retries through the real SDKs"),
    "models/run_gateway": ("models/test_target_endpoint.py", "the run's calls through one gateway"),
    "models/token_counts": ("models/test_providers.py", "token counts of a call"),
    "report/estimate_text": ("judge/test_successor_estimate.py", "the estimate as people read it"),
    "report/outputs": ("report/test_scorecard_boundary.py", "what scoring writes, at its boundary"),
    "report/page": ("report/test_report_html.py", "report.html (the command report_html.py)"),
    "report/page_data": ("report/test_report_html.py", "the data report.html shows"),
    "report/scorecard_md": ("report/test_scorecard.py", "scorecard.md"),
    "report/shown_paths": ("report/test_report_browser.py", "the paths a page shows, read in the page"),
    "run/background": ("run/test_background_run.py", "run_benchmark.py --background"),
    "run/batch_runner": ("run/test_batch_run.py", "run_benchmark.py --batch"),
    "run/batch_settings": ("run/test_batch_run.py", "the --batch settings refused in one line"),
    "run/cost_gate": ("run/test_run_benchmark.py", "the cost gate before a run"),
    "run/driver": ("run/test_run_benchmark.py", "the run's driver"),
    "run/estimate_record": ("run/test_dry_run.py", "the dry run's estimate"),
    "run/item_runner": ("run/test_run_benchmark.py", "one item through the run"),
    "run/judge_route": ("judge/test_judge_retirement.py", "which judge a run calls, the day after"),
    "run/pacing_status": ("models/test_rate_pacer.py", "the pacing a status shows"),
    "run/progress": ("run/test_display_figures.py", "the figures a run's progress shows"),
    "run/provenance": ("run/test_code_version.py", "what run-meta records of the code"),
    "run/settings": ("run/test_run_benchmark.py", "a run's settings and their resume"),
    "run/state": ("run/test_dry_run.py", "a run's state before it starts"),
    "run/status": ("run/test_run_status.py", "run_status.py (the command's tests, beside the run)"),
    "run/unattended_gate": ("loop/test_loop_own_system.py", "what a run in a loop session may not do"),
    "score/code_versions": ("run/test_run_code_provenance.py", "which code made a run's rows"),
    "score/comparison_record": ("score/test_compare_runs.py", PART),
    "score/corrected_figures": ("score/test_official_estimate.py", "metrics.json's official_estimate"),
    "score/fingerprint": ("report/test_scorecard.py", "the scorecard's fingerprint"),
    "score/judge_provenance": ("judge/test_verdict_provenance.py", "the verdicts' origins in metrics.json"),
    "score/loop_rows": ("report/test_mixed_rows_banner.py", "a loop run's mixed rows, as the banner says"),
    "score/run_comparison": ("score/test_compare_runs.py", "compare_runs.py"),
    "score/run_differences": ("score/test_compare_runs.py", PART),
    "score/scoring": ("score/test_metrics.py", "micro, macro and abstention accuracy"),
    "score/selftest_run": ("score/test_selftest_scoring.py", "selftest_scoring.py"),
    "score/trigger_set": ("score/test_cluster_failures.py", "the failures a fix is tried on"),
    "store/run_discovery": ("store/test_run_store.py", PART),
    "store/run_layout": ("store/test_run_store.py", PART),
    "store/run_meta": ("core/test_migrations.py", "run-meta.json read and brought up to date by its kind's steps"),
    "models/cache_repair": ("models/test_call_cache.py", "a damaged call cache copied aside and emptied in place"),
    "run/exit_codes": ("run/test_run_status.py", "each ending's exit status, from the run and from run_status"),
    "target_kit/cache_db": ("plugins/test_memory_ref_units.py", "memory-ref's SQLite caches through the public API"),
    "targets/api_check": ("targets/test_api.py", "an outdated copy or a gone import refused before a run writes"),
    "store/run_outputs": ("report/test_scorecard.py", "metrics.json and scorecard.md in the run folder"),
    "store/run_rewrite": ("score/test_drop_qids.py", "drop_qids.py rewrites a run"),
    "store/run_rows": ("store/test_run_store.py", PART),
    "targets/identity": ("loop/test_loop_guard.py", "two spellings of one target"),
    "targets/naming": ("run/test_moved_project.py", "a target's spelling resolved against the project"),
    "targets/processes": ("targets/test_user_system_processes.py", "the user's own system's processes"),
    "targets/python_worker": ("targets/test_user_system_processes.py", "a child process the tests drive, never imported"),
    "targets/targets": ("targets/test_targets_command.py", DRIVEN),
}


def modules() -> list[str]:
    lme = TESTS.parent / "scripts" / "lme"
    return sorted(f"{p.parent.name}/{p.stem}" for p in lme.glob("*/*.py") if p.name != "__init__.py")


def found_by_name(module: str) -> bool:
    stage, name = module.split("/")
    if (TESTS / stage / f"test_{name}.py").is_file():
        return True
    return stage == "cli" and any(p.name == f"test_{name}.py" for p in all_test_files())


@pytest.mark.parametrize("module", modules())
def test_each_modules_tests_are_found_by_its_name_or_listed_with_their_file(module):
    if found_by_name(module):
        assert module not in TESTED_UNDER_ANOTHER_NAME, "its tests are found by name now: drop it from the list"
        return
    assert module in TESTED_UNDER_ANOTHER_NAME, (
        f"scripts/lme/{module}.py: name its tests tests/{module.replace('/', '/test_')}.py or list it (file, why)")
    where, why = TESTED_UNDER_ANOTHER_NAME[module]
    assert (TESTS / where).is_file() and why, where


def test_the_list_names_only_modules_that_exist():
    assert set(TESTED_UNDER_ANOTHER_NAME) - set(modules()) == set()
