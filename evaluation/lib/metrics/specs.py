"""The Trace suite's configuration and its metric catalogue: every knob of the suite
(:class:`SuiteConfig`, whose hash identifies the numbers it produces) and every metric it can
produce under it (:func:`metric_specs`: name, axis, unit, direction, range, and where pages
show it). `suite.py` scores; callers import both names from there too.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass

from evaluation.lib.metrics import accuracy, entailment, grounding, practical, recovery
from evaluation.lib.metrics.types import (
    ACCURACY,
    DIALOGUES,
    GROUNDING,
    PRACTICAL_VALUE,
    RECOVERY,
    SIMULATION,
    SUMMARY,
    TEXT,
    TIERS,
    TURNS,
    MetricSpec,
)

SUITE_NAME = "trace"
# 2.0.0: CD verbatim, PC from the mention's offset, rejection recovery pooled over episodes,
# non-answers missing (Trace Appendix J as written); the earlier readings are named variants.
SUITE_VERSION = "2.0.0"
NON_ANSWER = "non_answer"
NLI_PREFIXES = ("entailment", "cgsent")  # the metrics that need an NLI model start so
CLOSED = "closed"
OPEN = "open"

_DEFAULT_INVENTORY = tuple(
    (family, tuple(terms)) for family, terms in grounding.ASPECT_INVENTORY.items()
)


@dataclass(frozen=True)
class SuiteConfig:
    """Every knob of the suite; :meth:`config_hash` identifies the numbers it produces."""

    k_values: tuple[int, ...] = accuracy.DEFAULT_K_VALUES
    pool_mode: str = CLOSED
    gs_threshold: float = grounding.DEFAULT_GS_THRESHOLD
    gs_threshold_variants: tuple[float, ...] = (70.0, 90.0)
    gs_exact_variant: bool = True
    unlabeled_quote_policy: str = grounding.ANY_CITED
    cd_gate: float = grounding.DEFAULT_CD_GATE
    pc_floor: float = grounding.DEFAULT_PC_FLOOR
    pc_window_chars: int = grounding.DEFAULT_PC_WINDOW
    aspect_inventory: tuple[tuple[str, tuple[str, ...]], ...] = _DEFAULT_INVENTORY
    cgs_formula_variants: bool = True
    spatial_km: float = practical.DEFAULT_SPATIAL_KM
    spatial_km_variants: tuple[float, ...] = (1.0, 3.0, 4.0, 5.0)
    recommended_top_n: int = 1
    hit_k: int = 1
    t2r_no_hit: str = recovery.PENALIZE
    entailment_threshold: float = entailment.DEFAULT_ENTAILMENT_THRESHOLD
    entailment_threshold_variants: tuple[float, ...] = (0.3, 0.4, 0.6, 0.7)
    text_metrics: bool = True

    def __post_init__(self) -> None:
        self._normalize()
        if self.pool_mode not in (CLOSED, OPEN):
            raise ValueError(f"pool_mode must be 'closed' or 'open', not {self.pool_mode!r}")
        if not self.k_values or min(self.k_values) < 1:
            raise ValueError("k_values must be positive integers")
        if self.unlabeled_quote_policy not in (grounding.ANY_CITED, grounding.FAIL):
            raise ValueError(f"unknown unlabeled_quote_policy {self.unlabeled_quote_policy!r}")
        if self.t2r_no_hit not in (recovery.PENALIZE, recovery.EXCLUDE):
            raise ValueError(f"t2r_no_hit must be 'penalize' or 'exclude', not {self.t2r_no_hit!r}")
        if self.recommended_top_n < 1 or self.hit_k < 1:
            raise ValueError("recommended_top_n and hit_k must be at least 1")

    def _normalize(self) -> None:
        """Canonical types, so 80 and 80.0 (or a list from JSON and a tuple) hash the same."""
        floats = ("gs_threshold", "cd_gate", "pc_floor", "spatial_km", "entailment_threshold")
        float_tuples = (
            "gs_threshold_variants",
            "spatial_km_variants",
            "entailment_threshold_variants",
        )
        for name in floats:
            object.__setattr__(self, name, float(getattr(self, name)))
        for name in float_tuples:
            object.__setattr__(self, name, tuple(float(v) for v in getattr(self, name)))
        object.__setattr__(self, "k_values", tuple(int(k) for k in self.k_values))
        inventory = self.aspect_inventory
        pairs = inventory.items() if isinstance(inventory, Mapping) else inventory
        object.__setattr__(
            self, "aspect_inventory", tuple((family, tuple(terms)) for family, terms in pairs)
        )

    def config_hash(self) -> str:
        """SHA-256 of the canonical JSON of the suite name and every setting."""
        payload = json.dumps(
            {"suite": SUITE_NAME, "config": asdict(self)}, sort_keys=True, separators=(",", ":")
        )
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    def thresholds(self) -> dict[str, grounding.Threshold]:
        """Metric-name suffix → GS threshold, the main one first (suffix "")."""
        named: dict[str, grounding.Threshold] = {"": self.gs_threshold}
        for value in self.gs_threshold_variants:
            named[f"_t{value:g}"] = value
        if self.gs_exact_variant:
            named["_exact"] = grounding.EXACT
        return named


# --- metric catalogue -------------------------------------------------------------------------
# The suite's headline metrics carry their place (`headline=`): what leaderboards show by
# default and reports show first; every other metric of the suite is a sensitivity variant (a
# threshold, formula or reading the paper's appendices vary), shown on request. `shown=`: the
# other pages that list the metric (types.SURFACES).


def _spec(
    name: str,
    axis: str,
    unit: str,
    description: str,
    *,
    lower: bool = False,
    high: float | None = 1.0,
    headline: int = 0,
    shown: tuple[str, ...] = (),
) -> MetricSpec:
    return MetricSpec(name, axis, unit, "lower" if lower else "higher", (0.0, high), description,
                      headline, frozenset(shown))


def _grounding_specs(config: SuiteConfig) -> list[MetricSpec]:
    specs = []
    for suffix, threshold in config.thresholds().items():
        main = not suffix  # the main threshold's GS, CD and CGS are headline metrics
        label = (
            "exact substring" if threshold == grounding.EXACT else f"partial_ratio ≥ {threshold:g}"
        )
        specs += [
            _spec(
                f"gs{suffix}",
                GROUNDING,
                "turn",
                f"Share of quotes matching a cited review ({label}); 1 without quotes.",
                headline=5 if main else 0,
                shown=(TIERS, DIALOGUES, SUMMARY, TURNS, SIMULATION) if main else (),
            ),
            _spec(
                f"cd{suffix}" if suffix else "cd",
                GROUNDING,
                "turn",
                "Tokens in verbatim quotes of the cited reviews / response tokens (Trace Table 7)."
                if not suffix
                else f"Sensitivity variant: tokens in quotes matching by {label} / all tokens.",
                headline=6 if main else 0,
                shown=(TURNS, SIMULATION) if main else (),
            ),
            _spec(
                f"cgs{suffix}",
                GROUNDING,
                "turn",
                f"GS × [CD ≥ {config.cd_gate:g}] × ({config.pc_floor:g} + "
                f"{1 - config.pc_floor:g} × PC), GS matching by {label}, CD verbatim.",
                headline=8 if main else 0,
                shown=(TIERS, DIALOGUES, SUMMARY, TURNS) if main else (),
            ),
        ]
    specs.append(
        _spec(
            "cd_fuzzy",
            GROUNDING,
            "turn",
            "Sensitivity variant: tokens in quotes matching by partial_ratio ≥ "
            f"{config.gs_threshold:g} (fuzzy, like GS) / response tokens.",
        )
    )
    specs.append(
        _spec(
            "pc",
            GROUNDING,
            "turn",
            f"Aspect terms with a citation label within ±{config.pc_window_chars} characters "
            "of the mention's offset / aspect terms mentioned; 1 without aspect mentions.",
            headline=7,
            shown=(TURNS, SIMULATION),
        )
    )
    specs.append(
        _spec(
            "pc_gap",
            GROUNDING,
            "turn",
            f"Sensitivity variant of PC: a label within {config.pc_window_chars} characters of "
            "the whole term (gap from its end when the label follows).",
        )
    )
    specs.append(_spec("gs0", GROUNDING, "turn", "GS with 0 instead of 1 for unquoted turns."))
    if config.cgs_formula_variants:
        for name in grounding.cgs_formula_variants(1.0, 1.0, 1.0):
            specs.append(
                _spec(
                    name,
                    GROUNDING,
                    "turn",
                    f"CGS formula variant '{name[4:]}' (Appendix L sensitivity).",
                )
            )
    return specs


def _entailment_names(config: SuiteConfig) -> list[tuple[str, float]]:
    named = [("entailment", config.entailment_threshold)]
    named += [(f"entailment_t{value:g}", value) for value in config.entailment_threshold_variants]
    return named


def metric_specs(config: SuiteConfig | None = None) -> tuple[MetricSpec, ...]:
    """Every metric the suite can produce under ``config``, in a stable order."""
    config = config or SuiteConfig()
    no_hit_rule = recovery.NO_HIT_RULES[config.t2r_no_hit]
    specs: list[MetricSpec] = []
    for k in config.k_values:
        specs += [
            _spec(f"recall@{k}", ACCURACY, "turn", f"Share of gold items in the top {k}.",
                  headline={1: 1, 5: 2}.get(k, 0),
                  shown={1: (TIERS, DIALOGUES, SUMMARY, TURNS, SIMULATION),
                         5: (SIMULATION,)}.get(k, ())),
            _spec(f"hit@{k}", ACCURACY, "turn", f"1 if a gold item is in the top {k}."),
            _spec(
                f"mr_recall@{k}",
                ACCURACY,
                "turn",
                f"1 if the top {k} holds the gold or an acceptable alternative.",
                headline=4 if k == 1 else 0,
            ),
        ]
    specs.append(_spec("mrr", ACCURACY, "turn", "1 / rank of the first gold item, 0 if absent.",
                       headline=3, shown=(TIERS, SUMMARY, TURNS, SIMULATION)))
    specs.append(
        _spec(
            NON_ANSWER,
            ACCURACY,
            "turn",
            "1 if the system gave no answer to the turn (failed call, missing line), else 0; "
            "such turns are missing in every other turn metric.",
            lower=True,
            shown=(SIMULATION,),
        )
    )
    specs.append(
        _spec(
            "out_of_pool_rate",
            ACCURACY,
            "turn",
            f"Share of ranked items outside the {config.pool_mode} candidate pool.",
            lower=True,
        )
    )
    specs += _grounding_specs(config)
    for name, threshold in _entailment_names(config):
        specs.append(
            _spec(
                name,
                GROUNDING,
                "turn",
                f"Share of claim sentences entailed by cited reviews (NLI ≥ {threshold:g}).",
                headline=9 if name == "entailment" else 0,
            )
        )
    specs.append(
        _spec("cgsent", GROUNDING, "turn", "CGS with GS replaced by entailment grounding.")
    )
    if config.text_metrics:
        specs.append(
            _spec(
                "bleu4",
                TEXT,
                "turn",
                "Sentence BLEU-4 (sacrebleu, exp smoothing) vs the reference turn, 0–1.",
                headline=17,
                shown=(SUMMARY, TURNS),
            )
        )
        specs.append(_spec("rouge_l", TEXT, "turn", "ROUGE-L F1 vs the reference turn.",
                           headline=18))
    specs += [
        _spec(
            "tsr",
            RECOVERY,
            "dialogue",
            f"1 if any recommend/compare turn hits gold in its top {config.hit_k}.",
            headline=10,
            shown=(TIERS, SUMMARY, SIMULATION),
        ),
        _spec(
            "t2r",
            RECOVERY,
            "dialogue",
            f"Recommend/compare turns up to the first hit ({no_hit_rule} without a hit).",
            lower=True,
            high=None,
            headline=11,
            shown=(SIMULATION,),
        ),
        _spec(
            "t2r_no_hit",
            RECOVERY,
            "dialogue",
            f"1 if the dialogue has no hit, so its T2R is set by the rule ({no_hit_rule}).",
            lower=True,
        ),
        _spec(
            "rejection_recovery",
            RECOVERY,
            "turn",
            "Reject_and_refine episodes whose next recommend/compare turn hits gold / all "
            "episodes, pooled over dialogues (Trace Appendix J); one unit per episode.",
            headline=12,
            shown=(SIMULATION,),
        ),
        _spec(
            "rejection_recovery_dialogue_mean",
            RECOVERY,
            "dialogue",
            "Sensitivity variant: each dialogue's recovered share of its episodes, averaged over "
            "dialogues.",
        ),
    ]
    for km in _spatial_radii(config):
        main = km == config.spatial_km
        specs.append(
            _spec(
                _spatial_name(config, km),
                PRACTICAL_VALUE,
                "dialogue",
                f"Share of recommended item pairs within {km:g} km.",
                headline=13 if main else 0,
                shown=(SIMULATION,) if main else (),
            )
        )
    specs += [
        _spec(
            "route_km",
            PRACTICAL_VALUE,
            "dialogue",
            "Nearest-neighbour path length through the recommended items, km.",
            lower=True,
            high=None,
            headline=14,
        ),
        _spec(
            "price_alignment",
            PRACTICAL_VALUE,
            "dialogue",
            "Share of recommended items within the user's stated budget.",
            headline=15,
            shown=(SIMULATION,),
        ),
        _spec(
            "itinerary_diversity",
            PRACTICAL_VALUE,
            "dialogue",
            "Distinct recommended item types / 3.",
            headline=16,
            shown=(SIMULATION,),
        ),
    ]
    return tuple(specs)


def _spatial_radii(config: SuiteConfig) -> list[float]:
    return list(dict.fromkeys((config.spatial_km, *config.spatial_km_variants)))


def _spatial_name(config: SuiteConfig, km: float) -> str:
    return "spatial_coherence" if km == config.spatial_km else f"spatial_coherence_{km:g}km"
