"""The configuration of an evaluation run and its hash (metrics.md, preamble: every evaluator
declares a configuration that is hashed; formats.md §3: every value links to it).

A Trace run's configuration is plain JSON:

    {"suite": {...SuiteConfig overrides...}, "suite_config_hash": "…",
     "splits": ["test"], "nli": {"enabled": true, "model_path": "/models/nli" | null}}

(Runs made before issue 30 also carry a "bootstrap" block of 1,000 resamples and seed 42 that
nothing read: every interval is a deterministic jackknife-t interval at 95%.)

`config_hash` is the SHA-256 of its canonical JSON, with the suite represented by the hash of
its fully resolved configuration (so `{}` and the same defaults written out hash alike): two runs
with the same hash were made the same way. Pure Python: no Django imports.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import fields

from evaluation.lib.metrics.suite import SuiteConfig


def _as_tuples(value):
    if isinstance(value, list | tuple):
        return tuple(_as_tuples(v) for v in value)
    return value


def suite_config_from_options(options: Mapping) -> SuiteConfig:
    """A SuiteConfig from JSON overrides (lists become the tuples SuiteConfig uses)."""
    defaults = SuiteConfig()
    names = {f.name for f in fields(SuiteConfig)}
    unknown = sorted(set(options) - names)
    if unknown:
        raise ValueError(f"unknown suite option(s): {', '.join(unknown)}")
    kwargs = {name: _as_tuples(value) if isinstance(getattr(defaults, name), tuple) else value
              for name, value in options.items()}
    return SuiteConfig(**kwargs)


def run_config(*, suite_options: Mapping, splits: Sequence[str], nli_enabled: bool,
               nli_model_path: str | None) -> dict:
    suite = suite_config_from_options(suite_options)
    return {
        "suite": dict(suite_options),
        "suite_config_hash": suite.config_hash(),
        "splits": sorted(splits),
        "nli": {"enabled": nli_enabled, "model_path": (nli_model_path or None) if nli_enabled
                else None},
    }


def config_hash(config: Mapping) -> str:
    resolved = {key: value for key, value in config.items() if key != "suite"}
    payload = json.dumps(resolved, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()
