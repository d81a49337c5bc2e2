"""Result records shared by every statistic (spec: statistics.md, preamble and "Exports").

Every reported number carries its n (units, annotators, pairable values, dialogues…), the
method that produced it and, where meaningful, a bootstrap confidence interval. A statistic that
is undefined for the data at hand (one annotator, no variance, no pairable values) has
``value=None`` and an ``undefined_reason`` in words; these records never hold NaN.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


def finite_or_none(value: Any) -> float | None:
    """``value`` as a Python float, or None when it is missing, NaN or infinite."""
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _plain(value: Any) -> Any:
    """Recursively turn numpy scalars and tuples into JSON-friendly Python values."""
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if hasattr(value, "tolist") and not isinstance(value, str):
        return _plain(value.tolist())  # numpy scalars and arrays
    if isinstance(value, float):
        return finite_or_none(value)
    return value


@dataclass(frozen=True)
class Estimate:
    """One reported number with its n, method, optional CI, and why it is missing if it is."""

    value: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    n: Mapping[str, int] = field(default_factory=dict)
    method: str = ""
    undefined_reason: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Normalise so that NaN can never leak out, whatever the caller passed in.
        for name in ("value", "ci_low", "ci_high"):
            object.__setattr__(self, name, finite_or_none(getattr(self, name)))
        object.__setattr__(self, "n", {key: int(count) for key, count in self.n.items()})
        object.__setattr__(self, "params", dict(self.params))
        if self.value is None and self.undefined_reason is None:
            object.__setattr__(self, "undefined_reason", "no value could be computed")

    @classmethod
    def undefined(
        cls,
        reason: str,
        *,
        method: str,
        n: Mapping[str, int] | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> Estimate:
        return cls(None, n=n or {}, method=method, undefined_reason=reason, params=params or {})

    @property
    def is_defined(self) -> bool:
        return self.value is not None

    def ci_excludes(self, reference: float = 0.0) -> bool:
        """True when a CI exists and lies entirely above or below ``reference``."""
        if self.ci_low is None or self.ci_high is None:
            return False
        return self.ci_low > reference or self.ci_high < reference

    def with_ci(self, low: float | None, high: float | None, **params: Any) -> Estimate:
        return Estimate(
            self.value,
            low,
            high,
            n=self.n,
            method=self.method,
            undefined_reason=self.undefined_reason,
            params={**self.params, **params},
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "n": dict(self.n),
            "method": self.method,
            "undefined_reason": self.undefined_reason,
            "params": _plain(self.params),
        }


@dataclass(frozen=True)
class Correlation:
    """A correlation coefficient with its p-value, n and optional bootstrap CI."""

    statistic: float | None
    p_value: float | None
    n: int
    method: str
    ci_low: float | None = None
    ci_high: float | None = None
    undefined_reason: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("statistic", "p_value", "ci_low", "ci_high"):
            object.__setattr__(self, name, finite_or_none(getattr(self, name)))
        object.__setattr__(self, "n", int(self.n))
        object.__setattr__(self, "params", dict(self.params))
        if self.statistic is None and self.undefined_reason is None:
            object.__setattr__(self, "undefined_reason", "no value could be computed")

    @property
    def is_defined(self) -> bool:
        return self.statistic is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "statistic": self.statistic,
            "p_value": self.p_value,
            "n": self.n,
            "method": self.method,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "undefined_reason": self.undefined_reason,
            "params": _plain(self.params),
        }


@dataclass(frozen=True)
class PairedTest:
    """A per-dialogue paired t-test between two systems (difference = A − B)."""

    t: float | None
    p_value: float | None
    n: int
    mean_difference: float | None
    mean_a: float | None
    mean_b: float | None
    method: str = "paired_t_test"
    undefined_reason: str | None = None

    def __post_init__(self) -> None:
        for name in ("t", "p_value", "mean_difference", "mean_a", "mean_b"):
            object.__setattr__(self, name, finite_or_none(getattr(self, name)))
        object.__setattr__(self, "n", int(self.n))
        if self.t is None and self.undefined_reason is None:
            object.__setattr__(self, "undefined_reason", "no value could be computed")

    def to_dict(self) -> dict[str, Any]:
        return {
            "t": self.t,
            "p_value": self.p_value,
            "n": self.n,
            "mean_difference": self.mean_difference,
            "mean_a": self.mean_a,
            "mean_b": self.mean_b,
            "method": self.method,
            "undefined_reason": self.undefined_reason,
        }


@dataclass(frozen=True)
class RankedSystem:
    """A system's leaderboard mean (with CI) and its tie-aware rank (None: not ranked, e.g. an
    evaluator whose correlation is undefined)."""

    system: str
    estimate: Estimate
    rank: int | None
    significantly_better: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "system": self.system,
            "rank": self.rank,
            "significantly_better": list(self.significantly_better),
            **self.estimate.to_dict(),
        }
