"""The targets stage (see docs/architecture.md)."""
