"""The store stage (see docs/architecture.md)."""
