"""The data stage (see docs/architecture.md)."""
