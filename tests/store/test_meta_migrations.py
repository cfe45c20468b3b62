"""An old run's run-meta is brought up to date by numbered migrations where the store reads it, and only there."""

from __future__ import annotations

import json

import factories
from lme.core.facts import OFFICIAL_JUDGE_MODEL
from lme.store import meta_migrations, run_store


def test_migrations_are_numbered_from_one_without_gaps_and_say_what_they_do():
    numbers = [m.number for m in meta_migrations.MIGRATIONS]
    assert numbers == list(range(1, len(numbers) + 1))
    assert all(m.what for m in meta_migrations.MIGRATIONS)


def test_an_old_runs_judge_alias_is_read_as_its_snapshot_and_the_file_is_left_as_it_was(tmp_path):
    run_dir = factories.write_run(tmp_path / "old", {"q1": "single-session-user"}, [],
                                  judge={"provider": "openai", "model": "gpt-4o", "official": True})
    before = (run_dir / "run-meta.json").read_bytes()
    assert run_store.read_meta(run_dir).judge["model"] == OFFICIAL_JUDGE_MODEL
    assert run_store.load_run(run_dir).judge == {"provider": "openai", "model": OFFICIAL_JUDGE_MODEL, "official": True}
    assert (run_dir / "run-meta.json").read_bytes() == before


def test_a_current_run_meta_passes_through_every_migration_unchanged():
    meta = factories.run_meta("r", 2, judge={"provider": "anthropic", "model": "claude-haiku-4-5", "official": False})
    snapshot = json.dumps(meta, sort_keys=True)
    assert meta_migrations.migrate(meta) == meta
    assert json.dumps(meta, sort_keys=True) == snapshot  # the caller's object is not changed either
