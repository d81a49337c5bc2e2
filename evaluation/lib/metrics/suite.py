"""The Trace non-LLM metric suite as one pure entry point (§3 and Appendices J, L).

:func:`evaluate_submission` scores a ``turn``-protocol submission (formats.md §2) against a
benchmark's reference dialogues and returns one value per (metric, unit):
- turn metrics on every reference system turn whose action is recommend or compare
  (unit id ``"{dialogue_id}#{turn_index}"``): accuracy, grounding, entailment, text;
- dialogue metrics (unit id = dialogue id): recovery and practical value.
A value that is undefined for a unit (no gold, no stated budget, …) is left out rather than
stored as 0 or 1, so system means are over the units where the metric applies. An evaluated
turn the submission lacks, or marks as unanswered (``metadata.no_answer``), counts as a non-answer:
``non_answer`` = 1 and every other turn metric is missing for it (the validator normally rejects
uploads that lack turns).
"""

from __future__ import annotations

import gc
import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import NamedTuple

from evaluation.lib.metrics import accuracy, entailment, grounding, practical, recovery, text
from evaluation.lib.metrics.quotes import scan
from evaluation.lib.metrics.types import (
    ACCURACY,
    DIALOGUES,
    GROUNDING,
    PRACTICAL_VALUE,
    RECOVERY,
    REJECT_ACTION,
    SIMULATION,
    SUMMARY,
    TEXT,
    TIERS,
    TURNS,
    ItemInfo,
    MetricSpec,
    ReferenceDialogue,
    ReferenceTurn,
    ReviewInfo,
    SubmittedTurn,
    Unavailable,
    turn_unit_id,
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


class MetricValue(NamedTuple):
    """One stored number: ``(metric, unit_type, unit_id, dialogue_id, value)``."""

    metric: str
    unit_type: str
    unit_id: str
    dialogue_id: str
    value: float


@dataclass(frozen=True)
class SuiteResult:
    """Per-unit values, what each metric means, and what could not be computed (and why)."""

    values: list[MetricValue]
    specs: tuple[MetricSpec, ...]
    unavailable: Mapping[str, str]
    config_hash: str
    missing_turns: tuple[str, ...] = ()
    suite_version: str = SUITE_VERSION

    def by_metric(self) -> dict[str, list[float]]:
        """Values grouped by metric name (unit order preserved)."""
        grouped: dict[str, list[float]] = {}
        for row in self.values:
            grouped.setdefault(row.metric, []).append(row.value)
        return grouped

    def means(self) -> dict[str, float]:
        """System-level value of each metric: the mean over its units (statistics such as
        standard deviations and cluster CIs are computed elsewhere from ``values``)."""
        return {name: sum(vals) / len(vals) for name, vals in self.by_metric().items()}

    def counts(self) -> dict[str, int]:
        """How many units each metric was computed on."""
        return {name: len(vals) for name, vals in self.by_metric().items()}


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


# --- turn selection ---------------------------------------------------------------------------


def evaluated_turn_keys(dialogues: Iterable[ReferenceDialogue]) -> list[tuple[str, int]]:
    """(dialogue_id, turn_index) of every turn a submission must answer (formats.md §2).

    These are the system turns that recommend or compare, plus the first system turn after each
    reject_and_refine user turn. Only the former are scored turn by turn; rejection recovery
    reads the next recommend/compare turn after a rejection, as the paper defines it.
    """
    keys: list[tuple[str, int]] = []
    for dialogue in dialogues:
        wanted: dict[int, None] = {}
        awaiting_repair = False
        for turn in dialogue.turns:
            if turn.role == "user" and turn.action == REJECT_ACTION:
                awaiting_repair = True
            elif turn.role == "system":
                if turn.is_recommendation or awaiting_repair:
                    wanted[turn.index] = None
                awaiting_repair = False
        keys += [(dialogue.id, index) for index in sorted(wanted)]
    return keys


# --- evaluation -------------------------------------------------------------------------------


@lru_cache(maxsize=8)
def _aspect_matcher(inventory: tuple[tuple[str, tuple[str, ...]], ...]) -> grounding.AspectMatcher:
    return grounding.AspectMatcher(dict(inventory))


class _Catalogue:
    """Items and reviews indexed once per run, with normalised review texts cached lazily."""

    def __init__(
        self,
        items: Iterable[ItemInfo] | Mapping[str, ItemInfo],
        reviews: Iterable[ReviewInfo] | Mapping[str, ReviewInfo],
    ) -> None:
        item_list = items.values() if isinstance(items, Mapping) else items
        review_list = reviews.values() if isinstance(reviews, Mapping) else reviews
        self.items: dict[str, ItemInfo] = {item.id: item for item in item_list}
        self.review_texts: dict[str, str] = {review.id: review.text for review in review_list}
        self._normalized: dict[str, str] = {}
        self._city_type_index: accuracy.CityTypeIndex | None = None

    def normalized(self, review_id: str) -> str:
        text = self._normalized.get(review_id)
        if text is None:
            text = grounding.normalize_for_match(self.review_texts[review_id])
            self._normalized[review_id] = text
        return text

    def pool(self, dialogue: ReferenceDialogue, mode: str) -> frozenset[str]:
        if mode == CLOSED:
            return frozenset(dialogue.candidate_item_ids)
        if self._city_type_index is None:
            self._city_type_index = accuracy.build_city_type_index(self.items.values())
        return frozenset(
            accuracy.open_pool(dialogue.candidate_item_ids, self.items, self._city_type_index)
        )


@dataclass
class _PendingClaims:
    """Claims of one turn waiting for the NLI model, with what CGSent needs afterwards."""

    unit_id: str
    dialogue_id: str
    claims: list[tuple[str, list[str]]]  # (hypothesis, premises) per claim sentence
    cd: float
    pc: float


class _Run:
    """State of one evaluation; methods score a turn or a dialogue and append rows."""

    def __init__(self, config: SuiteConfig, catalogue: _Catalogue, want_claims: bool) -> None:
        self.config = config
        self.catalogue = catalogue
        self.want_claims = want_claims
        self.matcher = _aspect_matcher(config.aspect_inventory)
        self.thresholds = config.thresholds()
        numeric = [t for t in self.thresholds.values() if t != grounding.EXACT]
        self.score_cutoff = min(numeric) if numeric else 100.0
        self.rows: list[MetricValue] = []
        self.pending: list[_PendingClaims] = []

    def emit(
        self, metric: str, unit_type: str, unit_id: str, dialogue_id: str, value: float | None
    ) -> None:
        if value is not None:
            self.rows.append(MetricValue(metric, unit_type, unit_id, dialogue_id, value))

    def score_accuracy(
        self, unit: str, did: str, ranked: Sequence[str], ref: ReferenceTurn, pool: frozenset[str]
    ) -> None:
        values = accuracy.turn_accuracy(
            ranked, ref.gold_item_ids, ref.alternative_item_ids, self.config.k_values
        )
        for metric, value in values.items():
            self.emit(metric, "turn", unit, did, value)
        self.emit("out_of_pool_rate", "turn", unit, did, accuracy.out_of_pool_rate(ranked, pool))

    def sources_by_label(self, submitted: SubmittedTurn, normalized: bool) -> dict[str, list[str]]:
        texts = self.catalogue.review_texts
        sources: dict[str, list[str]] = {}
        for citation in submitted.citations:
            if citation.review_id in texts:
                text = (
                    self.catalogue.normalized(citation.review_id)
                    if normalized
                    else texts[citation.review_id]
                )
                sources.setdefault(citation.label, []).append(text)
        return sources

    def score_grounding(self, unit: str, did: str, submitted: SubmittedTurn) -> None:
        config = self.config
        response = submitted.response
        sources = self.sources_by_label(submitted, normalized=True)
        quotes, labels = scan(response)
        matches = [
            grounding.match_quote(quote, sources, config.unlabeled_quote_policy, self.score_cutoff)
            for quote in quotes
        ]
        known_labels = [mention for mention in labels if mention.label in sources]
        mentions = self.matcher.mentions(response)
        pc = grounding.provenance_coverage(mentions, known_labels, config.pc_window_chars)
        pc_gap = grounding.provenance_coverage(
            mentions, known_labels, config.pc_window_chars, measure="gap"
        )
        tokens = grounding.count_tokens(response)
        # CD counts verbatim quotes only (Trace Table 7), whatever GS's threshold; the CGS
        # variants change how GS matches, never what opens the CD gate.
        cd = grounding.citation_density(matches, tokens)
        main_gs = 1.0
        for suffix, threshold in self.thresholds.items():
            gs = grounding.grounding_score(matches, threshold)
            self.emit(f"gs{suffix}", "turn", unit, did, gs)
            self.emit(
                f"cd{suffix}" if suffix else "cd",
                "turn",
                unit,
                did,
                grounding.fuzzy_citation_density(matches, tokens, threshold) if suffix else cd,
            )
            self.emit(
                f"cgs{suffix}",
                "turn",
                unit,
                did,
                grounding.composite_grounding_score(gs, cd, pc, config.cd_gate, config.pc_floor),
            )
            if suffix == "":
                main_gs = gs
        main_cd = cd
        self.emit(
            "cd_fuzzy",
            "turn",
            unit,
            did,
            grounding.fuzzy_citation_density(matches, tokens, config.gs_threshold),
        )
        self.emit("pc", "turn", unit, did, pc)
        self.emit("pc_gap", "turn", unit, did, pc_gap)
        self.emit(
            "gs0",
            "turn",
            unit,
            did,
            grounding.grounding_score_zero_if_unquoted(matches, config.gs_threshold),
        )
        if config.cgs_formula_variants:
            for name, value in grounding.cgs_formula_variants(main_gs, main_cd, pc).items():
                self.emit(name, "turn", unit, did, value)
        if self.want_claims:
            self.queue_claims(unit, did, submitted, main_cd, pc)

    def queue_claims(
        self, unit: str, did: str, submitted: SubmittedTurn, cd: float, pc: float
    ) -> None:
        raw_sources = self.sources_by_label(submitted, normalized=False)
        claims = entailment.claim_sentences(submitted.response)
        pending = [(claim.text, entailment.claim_premises(claim, raw_sources)) for claim in claims]
        self.pending.append(_PendingClaims(unit, did, pending, cd, pc))

    def score_text(self, unit: str, did: str, submitted: SubmittedTurn, ref: ReferenceTurn) -> None:
        self.emit("bleu4", "turn", unit, did, text.sentence_bleu4(submitted.response, ref.text))
        self.emit("rouge_l", "turn", unit, did, text.rouge_l_f1(submitted.response, ref.text))

    def score_dialogue(
        self, dialogue: ReferenceDialogue, hits: dict[int, bool], recommended: list[ItemInfo]
    ) -> None:
        config, did = self.config, dialogue.id
        flags = list(hits.values())
        self.emit("tsr", "dialogue", did, did, recovery.task_success(flags))
        self.emit(
            "t2r", "dialogue", did, did, recovery.turns_to_first_hit(flags, config.t2r_no_hit)
        )
        self.emit("t2r_no_hit", "dialogue", did, did, None if not flags else float(not any(flags)))
        episodes = recovery.rejection_episodes(dialogue, hits)
        for user_turn, recovered in episodes:
            # One unit per episode (keyed by the rejecting user turn), so the mean over units is
            # the pooled rate of Appendix J and intervals still resample whole dialogues.
            self.emit(
                "rejection_recovery", "turn", turn_unit_id(did, user_turn), did, float(recovered)
            )
        self.emit(
            "rejection_recovery_dialogue_mean",
            "dialogue",
            did,
            did,
            recovery.pooled_rejection_recovery([episodes]),
        )
        distances = practical.pair_distances_km(recommended)
        for km in _spatial_radii(config):
            self.emit(
                _spatial_name(config, km),
                "dialogue",
                did,
                did,
                practical.spatial_coherence_from_distances(distances, km),
            )
        self.emit("route_km", "dialogue", did, did, practical.route_length_km(recommended))
        ceiling = practical.stated_budget_ceiling(
            turn.text for turn in dialogue.turns if turn.role == "user"
        )
        self.emit(
            "price_alignment", "dialogue", did, did, practical.price_alignment(recommended, ceiling)
        )
        self.emit(
            "itinerary_diversity", "dialogue", did, did, practical.itinerary_diversity(recommended)
        )

    def score_entailment(self, scorer: entailment.EntailmentScorer) -> None:
        # One call for the whole run, so the model batches across turns.
        pairs = [
            (premise, hypothesis)
            for turn in self.pending
            for hypothesis, premises in turn.claims
            for premise in premises
        ]
        probabilities = iter(scorer.entailment_probabilities(pairs) if pairs else [])
        config = self.config
        for turn in self.pending:
            per_claim = [[next(probabilities) for _ in premises] for _, premises in turn.claims]
            for name, threshold in _entailment_names(config):
                value = entailment.entailment_grounding(per_claim, threshold)
                self.emit(name, "turn", turn.unit_id, turn.dialogue_id, value)
                if name == "entailment":
                    self.emit(
                        "cgsent",
                        "turn",
                        turn.unit_id,
                        turn.dialogue_id,
                        grounding.composite_grounding_score(
                            value, turn.cd, turn.pc, config.cd_gate, config.pc_floor
                        ),
                    )


@contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while scoring.

    Scoring allocates millions of short-lived tuples and no reference cycles; with a large live
    input, CPython's generational collector then spends a third of the run re-scanning objects
    that are still in use. Reference counting still frees everything as usual.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _resolve_scorer(
    nli: entailment.EntailmentScorer | Unavailable | None,
) -> tuple[entailment.EntailmentScorer | None, str | None]:
    if nli is None:
        return None, "no NLI model configured"
    if isinstance(nli, Unavailable):
        return None, nli.reason
    return nli, None


def evaluate_submission(
    dialogues: Sequence[ReferenceDialogue],
    items: Iterable[ItemInfo] | Mapping[str, ItemInfo],
    reviews: Iterable[ReviewInfo] | Mapping[str, ReviewInfo],
    submitted_turns: Iterable[SubmittedTurn],
    config: SuiteConfig | None = None,
    nli: entailment.EntailmentScorer | Unavailable | None = None,
) -> SuiteResult:
    """Score one system's ``turn``-protocol submission with every non-LLM Trace metric.

    ``reviews`` may be limited to the reviews the submission cites. ``nli`` is an
    :class:`~evaluation.lib.metrics.entailment.NLIModel` (or any object with
    ``entailment_probabilities``), an :class:`Unavailable`, or None; without a usable model the
    entailment metrics are listed in ``unavailable`` with the reason and everything else runs.
    """
    config = config or SuiteConfig()
    scorer, reason = _resolve_scorer(nli)
    run = _Run(config, _Catalogue(items, reviews), want_claims=scorer is not None)
    submissions = {(turn.dialogue_id, turn.turn_index): turn for turn in submitted_turns}
    missing: list[str] = []
    with _cyclic_gc_paused():
        for dialogue in dialogues:
            _score_dialogue_turns(run, dialogue, submissions, missing)
    unavailable: dict[str, str] = {}
    if scorer is not None:
        try:
            run.score_entailment(scorer)
        except Exception as error:  # noqa: BLE001 - a broken model must not sink the run
            reason = f"NLI scoring failed: {type(error).__name__}: {error}"
            run.rows = [
                row for row in run.rows if not row.metric.startswith(NLI_PREFIXES)
            ]
    if reason is not None:
        for name, _ in _entailment_names(config):
            unavailable[name] = reason
        unavailable["cgsent"] = reason
    return SuiteResult(
        values=run.rows,
        specs=metric_specs(config),
        unavailable=unavailable,
        config_hash=config.config_hash(),
        missing_turns=tuple(missing),
    )


def _score_dialogue_turns(
    run: _Run,
    dialogue: ReferenceDialogue,
    submissions: Mapping[tuple[str, int], SubmittedTurn],
    missing: list[str],
) -> None:
    config, did = run.config, dialogue.id
    pool = run.catalogue.pool(dialogue, config.pool_mode)
    items = run.catalogue.items
    hits: dict[int, bool] = {}
    recommended: dict[str, ItemInfo] = {}
    for ref in dialogue.turns:
        if not ref.is_recommendation:
            continue
        unit = turn_unit_id(did, ref.index)
        submitted = submissions.get((did, ref.index))
        if submitted is None:
            missing.append(unit)
            submitted = SubmittedTurn(did, ref.index, "", answered=False)
        ranked = submitted.ranked_item_ids
        run.emit(NON_ANSWER, "turn", unit, did, 0.0 if submitted.answered else 1.0)
        if submitted.answered:
            # A turn without an answer is missing in every turn metric: a placeholder text
            # must not earn GS = 1 (no quotes), PC = 1 (no aspects) or BLEU on its own words.
            run.score_accuracy(unit, did, ranked, ref, pool)
            if submitted.response.strip():
                # No response, no grounding: GS and PC would otherwise be 1 (vacuous).
                run.score_grounding(unit, did, submitted)
            if config.text_metrics:
                run.score_text(unit, did, submitted, ref)
        gold = set(ref.gold_item_ids)
        hits[ref.index] = any(item in gold for item in ranked[: config.hit_k])
        for item_id in ranked[: config.recommended_top_n]:
            if item_id in items:
                recommended.setdefault(item_id, items[item_id])
    run.score_dialogue(dialogue, hits, list(recommended.values()))
