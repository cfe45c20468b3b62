"""The score stage (see docs/architecture.md)."""
