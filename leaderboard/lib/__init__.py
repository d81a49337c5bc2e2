"""Pure computation: no Django, no database, no app above (docs/architecture.md)."""
