"""The models stage (see docs/architecture.md)."""
