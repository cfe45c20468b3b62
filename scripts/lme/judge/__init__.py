"""The judge stage (see docs/architecture.md)."""
