"""The ratings page, its export and the API show no interval for a system below the vote floor
(issue 30.7), with the reason; the six-vote CRS Arena sample has no system with 10 votes."""

import re

from django.urls import reverse

from tests.leaderboard.test_arena_ratings import arena, folder  # noqa: F401 (fixtures)


def test_the_page_says_too_few_votes_and_shows_no_rank_interval(client, arena):  # noqa: F811
    html = client.get(reverse("leaderboard:arena_ratings", args=[arena.slug])).content.decode()
    for votes in (5, 4, 3):  # kbrd, barcor, evil
        assert f"too few votes ({votes}) for an interval" in html
    assert not re.search(r"<td class=\"num\">\d+–\d+</td>", html)  # no rank interval
    assert "[1008.0, 1008.0]" not in html
    payload = client.get(reverse("leaderboard:arena_ratings_export",
                                 args=[arena.slug, "json"])).json()
    for system in payload["systems"]:
        assert system["ci_low"] is None and system["rank_low"] is None
        assert system["ci_note"].startswith("too few votes for an interval")
