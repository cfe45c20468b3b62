"""The models stage: every model call (the target's and the judge's) through the ``anthropic`` / ``openai`` SDKs.

One call shape (``ChatRequest`` -> ``Completion``), where a call goes, error kinds and retries, pacing, the SQLite
call cache, the run's ``LLM`` (``RunGateway``), prices, the Batches API, the probe before a run, and the target
endpoint through which a user's own system makes its calls. The targets and
the judge call models through it; nothing here knows a question."""
