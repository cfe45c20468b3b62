"""The loop stage: the autonomous iteration over runs and scorecards (keep or revert, round by round).

Its rules (``rules``: configuration and hard limits, handed to a ``--loop`` run as ``RunOptions(loop_check=...)``),
git on the loop branch, its state and round counter, the session that drives it, keep-or-revert, the skill's steps,
the plugin's Stop hook, the noise floor and the model stack. Stdlib-only parts run in the hooks on a bare python."""

from lme import lazy_face

_EXPORTS = {
    "loop_config": "lme.loop.rules", "LoopRunRequest": "lme.loop.rules", "check_loop_run": "lme.loop.rules",
    "check_settings": "lme.loop.rules", "target_correct": "lme.loop.rules", "loop_judge": "lme.loop.rules",
    "RoundFigures": "lme.loop.state",
    "run_decision": "lme.loop.decide",
    "current_session": "lme.loop.session", "SESSION_ENV": "lme.loop.session",
    "set_stack": "lme.loop.model_stack", "stack_of": "lme.loop.model_stack",
    "use_copy": "lme.loop.target",
    "measured_for": "lme.loop.noise_floor",
}
"""Name -> the module that holds it (full dotted path, so a rename is found by grep)."""

__all__ = tuple(_EXPORTS)
__getattr__, __dir__ = lazy_face(__name__, _EXPORTS)
