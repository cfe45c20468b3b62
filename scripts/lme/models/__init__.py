"""The models stage: every model call (the target's and the judge's) through the ``anthropic`` / ``openai`` SDKs.

One call shape (``ChatRequest`` -> ``Completion``), where a call goes, error kinds and retries, pacing, the SQLite
call cache, the run's ``LLM`` (``RunGateway``), prices, the Batches API, the probe before a run, and the target
endpoint through which a user's own system makes its calls. The targets and
the judge call models through it; nothing here knows a question."""

from lme import lazy_face

_EXPORTS = {
    "Gateway": "lme.models.providers", "complete": "lme.models.providers",
    "ProviderError": "lme.models.provider_errors",
    "ProviderSettings": "lme.models.provider_routes",
    "RunGateway": "lme.models.run_gateway",
    "CallCache": "lme.models.call_cache",
    "Pacer": "lme.models.rate_pacer",
    "estimate_tokens": "lme.models.token_counts",
    "cost_usd": "lme.models.prices", "call_cost": "lme.models.prices",
    "refuse_locally": "lme.models.provider_probe",
    "Passed": "lme.models.recent_probes",
    "TargetEndpoint": "lme.models.target_endpoint", "EndpointRoutes": "lme.models.endpoint_forward",
}
"""Name -> the module that holds it (full dotted path, so a rename is found by grep)."""

__all__ = tuple(_EXPORTS)
__getattr__, __dir__ = lazy_face(__name__, _EXPORTS)
