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


# --- the schema tells the truth (checked end to end by test_api_schemathesis.py) -------------

def _schema(client) -> dict:
    return client.get(reverse("leaderboard:api_schema") + "?format=json").json()


def test_the_schema_lists_the_error_answers_each_operation_gives(client):
    schema = _schema(client)
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            codes = operation["responses"]
            assert "401" in codes, (method, path)  # an unknown token, on any operation
            if method in ("post", "patch"):
                assert {"400", "403"} <= set(codes), (method, path)
            if "{" in path:
                assert "404" in codes, (method, path)
            for code, answer in codes.items():
                if code >= "400":
                    body = answer["content"]["application/json"]["schema"]["$ref"]
                    assert body.endswith("/ValidationErrors" if code == "400" else "/Error")
    lists = schema["paths"]["/api/systems/"]["get"]
    assert "400" in lists["responses"]  # a bad limit or offset


def test_a_400_body_is_field_errors_and_detail_is_optional(client):
    errors = _schema(client)["components"]["schemas"]["ValidationErrors"]
    assert "required" not in errors
    assert errors["additionalProperties"] == {"type": "array", "items": {"type": "string"}}
    # what the API really answers: field errors only, no "detail"
    answer = client.get(reverse("leaderboard:api_systems") + "?limit=0").json()
    assert set(answer) == {"limit"} and isinstance(answer["limit"][0], str)


def test_public_reads_need_no_credentials_and_writes_do(client):
    paths = _schema(client)["paths"]
    for path in ("/api/systems/", "/api/submissions/", "/api/simulations/", "/api/benchmarks/",
                 "/api/arenas/", "/api/runs/{run_id}/"):
        assert {} in paths[path]["get"]["security"], path
    for path, method in (("/api/systems/", "post"), ("/api/submissions/", "post"),
                         ("/api/systems/{slug}/", "patch")):
        assert {} not in paths[path][method]["security"], (method, path)


def test_the_schema_says_what_the_api_accepts_and_answers(client):
    schema = _schema(client)
    components = schema["components"]["schemas"]
    assert components["System"]["properties"]["owner"]["nullable"] is True  # baselines
    limit, offset = (p for p in schema["paths"]["/api/systems/"]["get"]["parameters"]
                     if p["name"] in ("limit", "offset"))
    assert (limit["schema"]["minimum"], limit["schema"]["maximum"]) == (1, 100)
    assert (offset["schema"]["minimum"], offset["schema"]["maximum"]) == (0, 10**9)
    bundle = schema["paths"]["/api/benchmarks/{slug}/public.zip"]["get"]["responses"]["200"]
    assert list(bundle["content"]) == ["application/zip"]
    sample = schema["paths"]["/api/benchmarks/{slug}/sample-submission.jsonl"]["get"]
    assert list(sample["responses"]["200"]["content"]) == ["application/x-ndjson"]
    names = {p["name"] for p in schema["paths"]["/api/submissions/"]["get"]["parameters"]}
    assert {"system", "benchmark"} <= names
    request = components["SystemRequest"]["properties"]
    assert "pattern" in request["name"] and "pattern" in request["code_url"]["oneOf"][0]
    assert components["System"]["properties"]["code_url"] == {"type": "string"}


def test_an_unknown_token_is_a_401_even_on_a_public_read(client):
    response = client.get(reverse("leaderboard:api_benchmarks"),
                          HTTP_AUTHORIZATION="Token not-a-token")
    assert response.status_code == 401 and response.json() == {"detail": "Invalid token."}


def test_the_token_endpoint_answers_a_json_list_with_400_not_500(client):
    response = client.post(reverse("leaderboard:api_token_obtain"), ["researcher"],
                           content_type="application/json")
    assert response.status_code == 400 and "non_field_errors" in response.json()


def test_a_post_to_an_unknown_api_path_is_a_json_404_not_a_csrf_page():
    from django.test import Client

    response = Client(enforce_csrf_checks=True).post("/api/simulations/abc/cancel/")
    assert response.status_code == 404 and response["Content-Type"] == "application/json"


def test_leaderboard_parameters_outside_their_enum_are_refused(client, tiny_benchmark):
    url = reverse("leaderboard:api_leaderboard", args=["tiny"])
    assert client.get(f"{url}?baselines=maybe").json() == {"baselines": ["expected true or false"]}
    assert client.get(f"{url}?order=").json() == {"order": ["expected asc or desc"]}
    assert client.get(f"{url}?baselines=false&order=asc").status_code == 200


@pytest.mark.parametrize("field, value", [
    ("name", "   "), ("name", "a\x00b"), ("code_url", "http://j.r.example:529#a#b"),
    ("code_url", "https://example.org/\u0003"), ("paper_url", "ftp://example.org/paper"),
    ("paper_url", 5)])
def test_system_fields_refuse_what_the_schema_refuses(client, researcher, field, value):
    client.force_login(researcher)
    body = {"name": "Ok", field: value}
    response = client.post(reverse("leaderboard:api_systems"), body,
                           content_type="application/json")
    assert response.status_code == 400 and field in response.json(), response.content
    assert not System.objects.exists()


def test_system_fields_accept_what_the_schema_allows(client, researcher):
    client.force_login(researcher)
    response = client.post(reverse("leaderboard:api_systems"), {
        "name": "Good", "description": "", "code_url": "",
        "paper_url": "https://arxiv.org/abs/2401.01234v2?context=cs.IR#sec-3"},
        content_type="application/json")
    assert response.status_code == 201, response.content


def test_publishing_takes_a_boolean_as_the_schema_says(client, researcher, board_world):
    client.force_login(researcher)
    submission, _run = board_world["runs"]["draft"]
    url = reverse("leaderboard:api_submission_publish", args=[submission.uuid])
    for body in ({"public": 1}, {"public": "true"}, {"public": "yes"}, {"public": None}, {}):
        response = client.post(url, body, content_type="application/json")
        assert response.status_code == 400 and "public" in response.json(), body
    submission.refresh_from_db()
    assert not submission.is_public
    assert client.post(url, {"public": "maybe"}).status_code == 400  # form data
    assert client.post(url, {"public": "true"}).json()["is_public"] is True
    assert client.post(url, {"public": False}, content_type="application/json").json()[
        "is_public"] is False
