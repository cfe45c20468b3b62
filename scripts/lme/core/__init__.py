"""The core stage (see docs/architecture.md)."""
