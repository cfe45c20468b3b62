"""The cli stage (see docs/architecture.md)."""
