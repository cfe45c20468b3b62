"""Maintainers' tools, on no run path: the generator of the shipped synthetic sample (``sample_data``)."""
