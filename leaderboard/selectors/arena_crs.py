"""What a CRS arena adds to an arena's ratings (docs/arena.md): per system the satisfaction and
acceptance rates (Wilson intervals), Bradley–Terry under style control, vote quality (flags,
the ratings without flagged votes, annotator-ability weighting) and ratings per scenario facet.
Everything is read from the counted votes the ratings read (the same filters), computed by the
pure modules, and kept in the cache under a hash of those votes. Reads only."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from django.core.cache import cache
from django.db.models import Q

from evaluation.lib.arena_signals import RATE_METHOD, SideSignal, system_rates
from evaluation.lib.stats.arena import STABILITY_THRESHOLD, TOP_K, arena_table
from evaluation.lib.stats.arena_facets import FacetTable, facet_ratings
from evaluation.lib.stats.arena_quality import (
    FLAGS,
    VoteRecord,
    ability_weighted_ratings,
    vote_flags,
)
from evaluation.lib.stats.arena_style import (
    StyleControlledTable,
    StyledVote,
    style_controlled_ratings,
)
from evaluation.models import Arena, Vote

ABILITY_METHOD = ("Bradley–Terry with a discrimination per voter (am-ELO, arXiv 2505.03475) "
                  "and a N(1, 0.5²) prior on it; voters by session; effect = this rating − the "
                  "plain Bradley–Terry rating of the same votes")
QUALITY_RESAMPLES = 200  # the bootstrap of the ratings without flagged votes
# Facets a battle's scenario may carry (docs/arena.md, "Ratings per scenario facet").
FACETS = {"city": "city", "item_type": "item type", "difficulty": "difficulty tier",
          "rejections": "rejection present"}
# What `crs_rows` adds to each row (the CSV's columns).
CRS_COLUMNS = [f"{name}_{part}" for name in ("satisfaction", "acceptance")
               for part in ("rate", "ci_low", "ci_high", "n")] + [
    "style_rating", "style_ci_low", "style_ci_high", "style_rank", "rating_unflagged",
    "rating_ability_weighted", "ability_effect"]
FIELDS = ("pk", "system_a_id", "system_b_id", "outcome", "satisfaction_a", "satisfaction_b",
          "accepted_item_a", "accepted_item_b", "battle_id", "style", "seconds_to_vote",
          "words_shown", "session_ref", "voter_ref", "excluded_reason", "battle__scenario")


@dataclass
class CrsExtras:
    rates: dict  # system id -> {"satisfaction": Rate, "acceptance": Rate}
    style: StyleControlledTable
    flag_counts: dict[str, int]
    unflagged: dict  # system id -> rating without flagged votes (the board's method)
    unflagged_votes: int
    ability: dict  # system id -> ability-weighted Bradley–Terry rating
    plain_bt: dict  # system id -> plain Bradley–Terry rating of the same votes
    voters: int
    facets: dict[str, FacetTable] = field(default_factory=dict)  # facet -> its table


def facet_value(scenario: dict | None, facet: str) -> str | None:
    """The scenario's value of FACET as a label, or None when it does not carry it."""
    scenario = scenario or {}
    if facet == "rejections":  # present or not: a count or a list of rejections
        return None if facet not in scenario else ("yes" if scenario[facet] else "no")
    value = scenario.get(facet)
    if value is None or value == "" or value == []:
        return None
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(sorted(str(v) for v in value))
    return str(value)


def _votes(arena: Arena, dataset: str, scenario: str) -> list[dict]:
    votes = Vote.objects.filter(arena=arena)
    if dataset:
        votes = votes.filter(battle__scenario__source_dataset=dataset)
    if scenario:
        votes = votes.filter(Q(battle__scenario__dialogue_id=scenario)
                             | Q(battle__scenario__id=scenario))
    return list(votes.order_by("position").values(*FIELDS))


def _compute(votes: list[dict], method: str) -> CrsExtras:
    counted = [v for v in votes if not v["excluded_reason"]]
    sides = [SideSignal(v[f"system_{side}_id"], v[f"satisfaction_{side}"],
                        None if v["battle_id"] is None else bool(v[f"accepted_item_{side}"]))
             for v in counted for side in ("a", "b")]
    styled = [StyledVote(v["system_a_id"], v["system_b_id"], v["outcome"], v["style"]["a"],
                         v["style"]["b"]) for v in counted if v["style"]]
    records = [VoteRecord(v["pk"], v["session_ref"] or v["voter_ref"] or f"vote-{v['pk']}",
                          v["outcome"], v["seconds_to_vote"], v["words_shown"] or 0,
                          v["excluded_reason"] == Vote.Excluded.OWNER) for v in votes]
    flags = vote_flags(records)
    flag_counts = {name: sum(name in found for found in flags.values()) for name in FLAGS}
    kept = [(v["system_a_id"], v["system_b_id"], v["outcome"]) for v in counted
            if not flags[v["pk"]]]
    unflagged = arena_table(kept, method=method, n_resamples=QUALITY_RESAMPLES)
    ability = ability_weighted_ratings(
        [(v["system_a_id"], v["system_b_id"], v["outcome"],
          v["session_ref"] or v["voter_ref"] or f"vote-{v['pk']}") for v in counted])
    plain = arena_table([(v["system_a_id"], v["system_b_id"], v["outcome"]) for v in counted],
                        method="bt", n_resamples=1)
    facets = {}
    for facet in FACETS:
        tagged = [(v["system_a_id"], v["system_b_id"], v["outcome"],
                   facet_value(v["battle__scenario"], facet)) for v in counted]
        tagged = [t for t in tagged if t[3] is not None]
        if tagged:
            facets[facet] = facet_ratings(tagged)
    return CrsExtras(
        rates=system_rates(sides), style=style_controlled_ratings(styled),
        flag_counts=flag_counts,
        unflagged={row.system: row.rating for row in unflagged.rows}, unflagged_votes=len(kept),
        ability=ability.ratings if ability else {},
        plain_bt={row.system: row.rating for row in plain.rows},
        voters=len(ability.abilities) if ability else 0, facets=facets)


def crs_extras(arena: Arena, *, method: str, dataset: str = "", scenario: str = "") -> CrsExtras:
    votes = _votes(arena, dataset, scenario)
    key = "arena-crs:" + hashlib.sha256(repr((method, votes)).encode()).hexdigest()
    extras = cache.get(key)
    if extras is None:
        extras = _compute(votes, method)
        cache.set(key, extras, 3600)
    return extras


def _number(value, digits=4):
    return None if value is None else round(value, digits)


def crs_rows(board, extras: CrsExtras) -> None:
    """Add each system's CRS columns to BOARD's rows (page, CSV, JSON, API, command)."""
    styled = {row.system: row for row in extras.style.rows}
    for pk, row in zip(_pks(board), board.rows, strict=True):
        for name in ("satisfaction", "acceptance"):
            rate = extras.rates.get(pk, {}).get(name)
            row[f"{name}_rate"] = _number(rate.rate) if rate else None
            row[f"{name}_ci_low"] = _number(rate.ci_low) if rate else None
            row[f"{name}_ci_high"] = _number(rate.ci_high) if rate else None
            row[f"{name}_n"] = rate.n if rate else 0
        style = styled.get(pk)
        row["style_rating"] = style.rating if style else None
        row["style_ci_low"] = style.ci_low if style else None
        row["style_ci_high"] = style.ci_high if style else None
        row["style_rank"] = style.rank if style else None
        row["rating_unflagged"] = extras.unflagged.get(pk)
        row["rating_ability_weighted"] = weighted = extras.ability.get(pk)
        plain = extras.plain_bt.get(pk)
        row["ability_effect"] = None if weighted is None or plain is None else weighted - plain


def crs_payload(board, extras: CrsExtras) -> dict:
    """The CRS additions to the JSON export, API and `arena_ratings --json`."""
    table = board.table
    names = {pk: row["system"] for pk, row in zip(_pks(board), board.rows, strict=True)}
    return {
        "rates_method": RATE_METHOD,
        "style_control": {
            "method": extras.style.method, "method_label": extras.style.method_label,
            "votes": extras.style.n_votes, "undefined_reason": extras.style.undefined_reason,
            "coefficients": [{"feature": c.feature, "label": c.label,
                              "coefficient": c.coefficient, "ci_low": c.ci_low,
                              "ci_high": c.ci_high, "note": c.note}
                             for c in extras.style.coefficients],
            "ranking": [names.get(r.system, str(r.system)) for r in extras.style.rows]},
        "stability": {"k": TOP_K, "threshold": STABILITY_THRESHOLD,
                      "share": table.top_k_stable_share, "stable": table.top_k_stable,
                      "method": f"share of the {table.params.get('n_resamples')} bootstrap "
                                f"replicates whose top {TOP_K} order is the ratings' own"},
        "vote_quality": {"flags": extras.flag_counts,
                         "flag_labels": FLAGS,
                         "unflagged_votes": extras.unflagged_votes,
                         "unflagged_method": f"{board.method} point ratings of the counted "
                                             "votes no flag marks",
                         "ability_method": ABILITY_METHOD,
                         "ability_voters": extras.voters},
        "facets": {facet: {"label": FACETS[facet], "method_label": t.method_label,
                           "undefined_reason": t.undefined_reason,
                           "rows": [{"value": r.facet_value,
                                     "system": names.get(r.system, str(r.system)),
                                     "rating": r.rating, "ci_low": r.ci_low,
                                     "ci_high": r.ci_high, "votes": r.votes} for r in t.rows]}
                   for facet, t in extras.facets.items()},
    }


def _pks(board) -> list[int]:
    """The system id of each of BOARD's rows (in row order)."""
    return [row.system for row in board.table.rows]
