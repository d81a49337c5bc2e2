"""Shared helpers every app may use, below them all (docs/architecture.md): the four roles,
the hot path's hand-written statements, the session store and user backend built on them, login
throttling and rate limits, and the navigation bar's links. It imports no app and not `config`
(the site wiring, which imports it)."""
