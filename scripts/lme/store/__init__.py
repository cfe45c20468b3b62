"""The store stage: the run directory, where each ``ResultRow`` lands and ``RunData`` is read back.

Rows and completed marks (append-only, fsynced), run-meta and the manifest, the lock, run ids and finding runs,
rewriting a run for the loop, the files scoring leaves, the prompts a target sent. ``run_store`` is the store's one
face: it holds ``RunData`` and ``load_run`` and re-exports the names its callers use from its sections."""
