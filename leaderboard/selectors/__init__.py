"""Reads of the leaderboard app, one module per page (selectors never write).

- ``runs``: which runs a viewer sees on a leaderboard (per system and evaluator).
- ``columns``: the metric columns (which, in which order, with what range) and number format.
- ``ranks``: the stored rank snapshots behind the tie-aware ranks.
- ``boards``: the leaderboard page, its scatter, its export and the benchmarks' counts.
- ``systems``: the system page (results by axis, radar, tiers, dialogues, submissions).
- ``drilldown``: the per-turn drill-down of one dialogue.
- ``compare``: two systems side by side (paired differences).
"""
