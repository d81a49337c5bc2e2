"""An arena's ratings (online Elo or Bradley–Terry, docs/statistics.md "Arena") for its page,
export, API and `arena_ratings`: the votes in cast order, optionally only those of one data set
or one scenario, rated by `evaluation.lib.stats.arena.arena_table`. Votes whose
`excluded_reason` is set (an answer named its system, or a system's owner voted: docs/arena.md,
"Which votes count") are left out and counted by reason. Reads only."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from django.core.cache import cache
from django.db.models import Count, Q, QuerySet

from evaluation.lib import charts
from evaluation.lib.stats.arena import METHODS, ArenaTable, arena_table
from evaluation.lib.stats.bootstrap import DEFAULT_RESAMPLES
from evaluation.lib.stats.methods import interval_versions_key
from evaluation.models import Arena, System, Vote
from leaderboard.selectors.arena_crs import CrsExtras, crs_extras, crs_payload, crs_rows

METHOD_LABELS = {"elo": "online Elo (CRS Arena)", "bt": "Bradley–Terry (Chatbot Arena)"}
RANK_NOTE = ("rank = 1 + systems with a higher rating; rank interval = the 2.5th–97.5th "
             "percentile of the system's rank over the bootstrap replicates")


@dataclass
class ArenaBoard:
    arena: Arena
    method: str
    dataset: str
    scenario: str
    table: ArenaTable
    rows: list[dict]
    forest: dict | None
    heatmap: dict | None
    excluded: dict[str, int] = field(default_factory=dict)  # votes left out, per reason
    crs: CrsExtras | None = None  # satisfaction, style control, vote quality, facets

    @property
    def excluded_notes(self) -> list[tuple[int, str]]:
        """(count, what it counts) for each reason votes were left out."""
        counts = [(self.excluded.get(reason, 0), note) for reason, note in EXCLUDED_NOTES.items()]
        return [(n, note.format(s="" if n == 1 else "s")) for n, note in counts if n]


EXCLUDED_NOTES = {  # what the page, export and command say of each reason's votes
    Vote.Excluded.IDENTITY_LEAKED.value: "battle{s} excluded: an answer named its system",
    Vote.Excluded.OWNER.value: "vote{s} excluded: cast by the owner of a system in the battle",
}


def arena_vote_counts(arenas: QuerySet[Arena]) -> list[Arena]:
    """The arenas, each with `vote_count` (for the index)."""
    return list(arenas.annotate(vote_count=Count("votes")))


def arena_votes(arena: Arena, *, dataset: str = "",
                scenario: str = "") -> tuple[list[tuple], dict[str, int]]:
    """The counted votes as (system_a id, system_b id, outcome) in cast order, and how many were
    left out per `Vote.excluded_reason` (each one range of the index `vote_arena_counted`).
    ``dataset`` keeps the votes of battles whose scenario has that `source_dataset`,
    ``scenario`` those whose scenario is that benchmark dialogue (`dialogue_id` or `id`);
    imported votes have no battle and no scenario."""
    votes = Vote.objects.filter(arena=arena)
    if dataset:
        votes = votes.filter(battle__scenario__source_dataset=dataset)
    if scenario:
        votes = votes.filter(Q(battle__scenario__dialogue_id=scenario)
                             | Q(battle__scenario__id=scenario))
    counted = list(votes.filter(excluded_reason=Vote.Excluded.COUNTED).order_by("position")
                   .values_list("system_a_id", "system_b_id", "outcome"))
    excluded = dict(votes.filter(excluded_reason__in=list(EXCLUDED_NOTES)).order_by()
                    .values_list("excluded_reason").annotate(n=Count("pk")))
    return counted, excluded


def rated(votes: list[tuple], *, method: str, n_resamples: int) -> ArenaTable:
    """``arena_table`` of these votes, kept in this process's cache under a hash of the votes
    themselves (so a new vote, or different votes, can never get a stale table): the page, its
    export and the API then bootstrap once per set of votes, not once per request."""
    key = "arena-table:" + hashlib.sha256(
        repr((method, n_resamples, interval_versions_key(), votes)).encode()).hexdigest()
    table = cache.get(key)
    if table is None:
        table = arena_table(votes, method=method, n_resamples=n_resamples)
        cache.set(key, table, 3600)
    return table


def arena_board(arena: Arena, *, method: str = "elo", dataset: str = "", scenario: str = "",
                n_resamples: int = DEFAULT_RESAMPLES) -> ArenaBoard:
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, not {method!r}")
    votes, excluded = arena_votes(arena, dataset=dataset, scenario=scenario)
    table = rated(votes, method=method, n_resamples=n_resamples)
    systems = System.objects.in_bulk([row.system for row in table.rows])
    rows = [{"system": systems[row.system].name, "slug": systems[row.system].slug,
             "rating": row.rating, "ci_low": row.ci_low, "ci_high": row.ci_high,
             "rank": row.rank, "rank_low": row.rank_low, "rank_high": row.rank_high,
             "votes": row.votes, "wins": row.wins, "losses": row.losses, "ties": row.ties,
             "ci_note": row.ci_note}
            for row in table.rows]
    centre = table.params["initial"]
    forest = charts.forest(
        [(row["system"], row["rating"] - centre,
          None if row["ci_low"] is None else row["ci_low"] - centre,
          None if row["ci_high"] is None else row["ci_high"] - centre,
          row["ci_low"] is not None and (row["ci_low"] > centre or row["ci_high"] < centre))
         for row in rows if row["rating"] is not None], centre=centre, digits=0
    ) if any(row["rating"] is not None for row in rows) else None
    heatmap = None
    if len(rows) >= 2:
        order = [row.system for row in table.rows]
        names = [systems[s].name for s in order]
        values = [[None if a == b else table.win_rates.get((a, b)) for b in order]
                  for a in order]
        heatmap = charts.heatmap(names, values, colour=charts.win_rate_colour,
                                 value_label="share of games won (ties half)")
    board = ArenaBoard(arena, method, dataset, scenario, table, rows, forest, heatmap, excluded)
    board.crs = crs_extras(arena, method=method, dataset=dataset, scenario=scenario)
    crs_rows(board, board.crs)
    return board


def arena_board_payload(board: ArenaBoard) -> dict:
    """The page's numbers as JSON (export, API)."""
    table = board.table
    return {"arena": board.arena.slug, "name": board.arena.name,
            "benchmark": board.arena.benchmark.slug if board.arena.benchmark else None,
            "method": board.method, "method_label": METHOD_LABELS[board.method],
            "filters": {"dataset": board.dataset or None, "scenario": board.scenario or None},
            "votes": table.n_votes,
            "excluded": {reason: board.excluded.get(reason, 0) for reason in EXCLUDED_NOTES},
            "params": table.params,
            "valid_resamples": table.valid_resamples,
            "undefined_reason": table.undefined_reason,
            "ci_note": table.ci_note,
            "ci": "95% percentile bootstrap over votes (docs/statistics.md, Arena)"
                  + (": the spread of the order-dependent Elo, not an interval for strength"
                     if board.method == "elo" else ""),
            "rank": RANK_NOTE, "systems": board.rows,
            "win_rates": [{"system": board.rows[i]["system"], "opponent": o["system"],
                           "win_rate": table.win_rates[(a.system, b.system)]}
                          for i, a in enumerate(table.rows)
                          for o, b in zip(board.rows, table.rows, strict=True)
                          if (a.system, b.system) in table.win_rates],
            **crs_payload(board, board.crs)}
