"""The API keeps its own contract (issue 18, point 9): bounded, validated pagination and
parameters, JSON 404s for unknown API paths, text fields that are text."""

import pytest
from django.urls import reverse

from evaluation.models import System

pytestmark = pytest.mark.django_db

LISTS = ("leaderboard:api_benchmarks", "leaderboard:api_systems", "leaderboard:api_submissions")


@pytest.mark.parametrize("name", LISTS)
def test_limit_and_offset_are_bounded_and_checked(client, name):
    url = reverse(name)
    for query in ("limit=9223372036854775808", "limit=101", "limit=0", "limit=-1",
                  "limit=abc", "offset=9223372036854775808", "offset=-3", "offset=1.5",
                  "limit=\u0661"):
        response = client.get(f"{url}?{query}")
        assert response.status_code == 400, query
        key = query.split("=")[0]
        assert "expected a whole number" in response.json()[key][0], query
    assert client.get(f"{url}?limit=100&offset=0").status_code == 200


def test_a_leaderboard_refuses_an_unknown_order(client, tiny_benchmark):
    url = reverse("leaderboard:api_leaderboard", args=["tiny"])
    assert client.get(f"{url}?order=sideways").json() == {"order": ["expected asc or desc"]}
    assert client.get(f"{url}?order=desc").status_code == 200


def test_unknown_api_paths_answer_json_404(client):
    for path in ("/api/nothing/", "/api/runs/abc/", "/api/benchmarks/a/b/c/"):
        response = client.get(path)
        assert response.status_code == 404 and response["Content-Type"] == "application/json"
        assert response.json()["detail"].startswith("No such API endpoint")


def test_a_system_name_must_be_text(client, researcher):
    client.force_login(researcher)
    response = client.post(reverse("leaderboard:api_systems"), {"name": 0},
                           content_type="application/json")
    assert response.status_code == 400 and "name" in response.json()
    assert not System.objects.exists()
    ok = client.post(reverse("leaderboard:api_systems"), {"name": "Zero"},
                     content_type="application/json")
    assert ok.status_code == 201, ok.content
