"""The loop stage: the autonomous iteration over runs and scorecards (keep or revert, round by round).

Its rules (``rules``: configuration and hard limits, handed to a ``--loop`` run as ``RunOptions(loop_check=...)``),
git on the loop branch, its state and round counter, the session that drives it, keep-or-revert, the skill's steps,
the plugin's Stop hook, the noise floor and the model stack. Stdlib-only parts run in the hooks on a bare python."""
