"""The loop stage (see docs/architecture.md)."""
