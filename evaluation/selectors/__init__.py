"""Reads of the evaluation app: they never write (docs/architecture.md)."""
