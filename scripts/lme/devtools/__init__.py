"""Maintainers' tools, on no run path: the generator of the shipped synthetic sample (``sample_data``).

Above every run-time stage and below the commands; nothing on the way dataset -> scorecard imports it."""
