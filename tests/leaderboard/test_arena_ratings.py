"""Arena ratings on the Django side (issue 15): CRS Arena's vote files imported into an arena,
`arena_ratings`, the ratings page with its charts, the CSV/JSON export, the API, access, and
reads that never write."""

import csv
import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from evaluation.lib.stats.arena import bradley_terry_ratings, elo_ratings
from evaluation.models import Arena, Benchmark, System, Vote
from tests.evaluation.formats.test_public_crs_arena_dial import _conversation

HEADER = ["session_id", "user_id", "crs1", "crs2", "vote", "feedback"]
OPEN = [
    ["1", "u1", "kbrd_redial", "barcor_redial", "kbrd_redial", "kbrd knew the film"],
    ["2", "u2", "barcor_redial", "<b>evil</b>_redial", "tie", "<script>alert(1)</script>"],
    ["3", "u3", "<b>evil</b>_redial", "kbrd_redial", "<b>evil</b>_redial", ""],
]
CLOSED = [
    ["4", "p1", "kbrd_redial", "barcor_redial", "barcor_redial", ""],
    ["5", "p2", "barcor_redial", "kbrd_redial", "barcor_redial", ""],
    ["6", "p3", "kbrd_redial", "<b>evil</b>_redial", "tie", ""],
]
# CRS Arena's order: votes_open.csv, then votes_closed.csv, each in file order.
EXPECTED = [("kbrd_redial", "barcor_redial", "a"), ("barcor_redial", "<b>evil</b>_redial", "tie"),
            ("<b>evil</b>_redial", "kbrd_redial", "a"), ("kbrd_redial", "barcor_redial", "b"),
            ("barcor_redial", "kbrd_redial", "a"), ("kbrd_redial", "<b>evil</b>_redial", "tie")]


def _write(path, rows):
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows([HEADER, *rows])
    path.write_text(out.getvalue())


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "crs_arena_dial_open.json").write_text(json.dumps(
        [_conversation(), _conversation("barcor_redial_u2")]))
    _write(tmp_path / "votes_open.csv", OPEN)
    _write(tmp_path / "votes_closed.csv", CLOSED)
    return tmp_path


@pytest.fixture
def arena(db, staff, folder):
    out = io.StringIO()
    call_command("import_public", "crs_arena_dial", str(folder), stdout=out)
    assert "Arena crs-arena-dial: 6 votes" in out.getvalue()
    return Arena.objects.get()


def test_the_votes_are_stored_in_crs_arenas_order(arena):
    assert arena.name == "CRSArena-Dial" and arena.benchmark.slug == "crs-arena-dial"
    votes = list(Vote.objects.filter(arena=arena).order_by("position")
                 .select_related("system_a", "system_b"))
    assert [(v.system_a.name, v.system_b.name, v.outcome) for v in votes] == EXPECTED
    assert [v.position for v in votes] == list(range(6))
    assert votes[0].reason == "kbrd knew the film" and votes[3].voter_ref == "p1"
    assert all(v.battle_id is None for v in votes)
    # the dialogues' systems are reused; a system only in the votes is created
    assert System.objects.filter(name="kbrd_redial").count() == 1


def test_a_bad_vote_row_stores_nothing(db, staff, folder):
    _write(folder / "votes_closed.csv", [*CLOSED, ["7", "p4", "kbrd_redial", "barcor_redial",
                                                   "unicrs_redial", ""]])
    systems = System.objects.count()
    with pytest.raises(CommandError) as caught:
        call_command("import_public", "crs_arena_dial", str(folder))
    assert "votes_closed.csv:5: $.vote: expected 'kbrd_redial', 'barcor_redial' or 'tie'" in str(
        caught.value)
    assert not Arena.objects.exists() and not Vote.objects.exists()
    assert not Benchmark.objects.exists() and System.objects.count() == systems


@pytest.mark.parametrize("method", ["elo", "bt"])
def test_arena_ratings_json_maps_each_system_to_its_rating_and_ci(arena, method):
    out = io.StringIO()
    call_command("arena_ratings", arena.slug, "--method", method, "--json", "--resamples", "200",
                 stdout=out)
    printed = json.loads(out.getvalue())
    reference = (elo_ratings(EXPECTED) if method == "elo" else bradley_terry_ratings(EXPECTED))
    assert {row["system"]: row["rating"] for row in printed["systems"]} \
        == pytest.approx(reference)
    for value in printed["systems"]:
        # 6 votes: no system has the 10 votes an interval needs (and for Bradley–Terry most
        # resamples have no MLE)
        assert value["ci_low"] is None and value["ci_high"] is None
    by_name = {row["system"]: row for row in printed["systems"]}
    assert by_name["kbrd_redial"]["rating"] == pytest.approx(reference["kbrd_redial"], abs=1e-9)


def test_arena_ratings_text_and_errors(arena):
    out = io.StringIO()
    call_command("arena_ratings", arena.slug, "--resamples", "50", stdout=out)
    assert "online Elo (CRS Arena), 6 votes" in out.getvalue()
    assert "kbrd_redial" in out.getvalue()
    with pytest.raises(CommandError, match="no arena 'nope'"):
        call_command("arena_ratings", "nope")


def test_the_page_table_charts_and_escaping(client, arena):
    url = reverse("leaderboard:arena_ratings", args=[arena.slug])
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url + "?method=bt")
    assert response.status_code == 200
    assert not [q for q in queries.captured_queries
                if q["sql"].lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))]
    html = response.content.decode()
    assert "Bradley–Terry" in html and 'class="forest"' in html and 'class="heatmap"' in html
    assert "&lt;b&gt;evil&lt;/b&gt;_redial" in html and "<b>evil</b>" not in html
    ratings = bradley_terry_ratings(EXPECTED)
    assert f"{ratings['barcor_redial']:.1f}" in html
    assert client.get(url + "?method=glicko").status_code == 404
    empty = client.get(url + "?dataset=opendialkg").content.decode()
    assert "No votes match these filters" in empty  # imported votes have no scenario
    index = client.get(reverse("leaderboard:arena_index") + "?benchmark=crs-arena-dial")
    assert arena.name in index.content.decode()
    assert reverse("leaderboard:arena_index") in client.get(
        reverse("leaderboard:index")).content.decode()
    home = client.get(reverse("leaderboard:arena_home", args=[arena.benchmark.slug]))
    assert url in home.content.decode()  # the battle page links to the ratings


def test_exports_and_api(client, arena):
    export = reverse("leaderboard:arena_ratings_export", args=[arena.slug, "csv"])
    rows = list(csv.DictReader(io.StringIO(client.get(export).content.decode())))
    assert [row["system"] for row in rows][0] == max(elo_ratings(EXPECTED).items(),
                                                     key=lambda kv: kv[1])[0]
    assert {row["system"] for row in rows} == {"kbrd_redial", "barcor_redial",
                                              "<b>evil</b>_redial"}
    payload = client.get(reverse("leaderboard:arena_ratings_export",
                                 args=[arena.slug, "json"]) + "?method=bt").json()
    assert payload["method"] == "bt" and payload["votes"] == 6
    api = client.get(reverse("leaderboard:api_arena_ratings", args=[arena.slug])).json()
    assert api["method"] == "elo"
    assert {s["system"]: s["rating"] for s in api["systems"]} == pytest.approx(
        elo_ratings(EXPECTED))
    assert {(w["system"], w["opponent"]) for w in api["win_rates"]} >= {
        ("kbrd_redial", "barcor_redial")}
    assert client.get(reverse("leaderboard:api_arena_ratings", args=[arena.slug])
                      + "?method=x").status_code == 400
    listing = client.get(reverse("leaderboard:api_arenas")).json()
    assert listing["results"][0]["votes"] == 6
    # A new vote is rated at once: the cached table is keyed by the votes themselves.
    first = Vote.objects.get(arena=arena, position=0)
    Vote.objects.create(arena=arena, system_a=first.system_b, system_b=first.system_a,
                        outcome="a", position=6)
    again = client.get(reverse("leaderboard:api_arena_ratings", args=[arena.slug])).json()
    assert again["votes"] == 7
    assert {s["system"]: s["rating"] for s in again["systems"]} == pytest.approx(
        elo_ratings([*EXPECTED, ("barcor_redial", "kbrd_redial", "a")]))


def test_an_arena_of_a_private_benchmark_is_hidden_from_strangers(client, arena, outsider,
                                                                 staff):
    Benchmark.objects.filter(pk=arena.benchmark_id).update(is_public=False)
    client.force_login(outsider)
    for url in (reverse("leaderboard:arena_ratings", args=[arena.slug]),
                reverse("leaderboard:arena_ratings_export", args=[arena.slug, "json"]),
                reverse("leaderboard:api_arena_ratings", args=[arena.slug])):
        assert client.get(url).status_code == 404
    assert arena.name not in client.get(reverse("leaderboard:arena_index")).content.decode()
    client.force_login(staff)
    assert client.get(reverse("leaderboard:arena_ratings", args=[arena.slug])).status_code == 200
