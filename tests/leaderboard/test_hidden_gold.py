"""Gold answers of the hidden split never leave the server: not in any leaderboard page, API
response, export or error message, for anyone; hidden-split results appear only inside
aggregates (no per-dialogue row, no drill-down)."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from tests.support.bundles import tiny_data, write_tiny
from tests.support.submissions import tiny_lines

pytestmark = pytest.mark.django_db

SECRET_ID, SECRET_NAME = "x-secret", "Secret Garden Cafe"


@pytest.fixture
def secret_benchmark(tmp_path):
    """The tiny benchmark whose hidden dialogue d3 has a gold item found nowhere else."""
    from evaluation.services.benchmarks import benchmark_import

    data = tiny_data()
    data["benchmark"]["slug"] = "secret"
    data["items"].append({"id": SECRET_ID, "name": SECRET_NAME, "type": "restaurant",
                          "city": "Philadelphia"})
    d3 = next(d for d in data["dialogues"] if d["id"] == "d3")
    d3["candidate_item_ids"].append(SECRET_ID)
    d3["turns"][1]["gold_item_ids"] = [SECRET_ID]
    benchmark = benchmark_import(path=write_tiny(tmp_path / "secret", data))
    # the hidden phase is over: runs score d3, and its values may appear, in aggregates only
    benchmark.hidden_released_at = benchmark.created_at
    benchmark.save(update_fields=["hidden_released_at"])
    return benchmark


def test_hidden_gold_is_in_no_response(secret_benchmark, researcher, staff, outsider,
                                       finished_submission):
    from evaluation.services.submissions import system_create

    system = system_create(name="Echo", owner=researcher)
    submission, run = finished_submission(system, public=True, benchmark=secret_benchmark)
    uuid = submission.uuid
    urls = [
        reverse("leaderboard:index"),
        reverse("leaderboard:board", args=["secret", "turn"]),
        reverse("leaderboard:board", args=["secret", "turn"]) + "?columns=all",
        reverse("leaderboard:board_export", args=["secret", "turn", "csv"]),
        reverse("leaderboard:board_export", args=["secret", "turn", "json"]),
        reverse("leaderboard:system_detail", args=["echo"]),
        reverse("leaderboard:submission_detail", args=[uuid]),
        reverse("leaderboard:submission_status", args=[uuid]),
        reverse("leaderboard:submission_dialogue", args=[uuid, "d1"]),
        reverse("leaderboard:submission_dialogue", args=[uuid, "d2"]),
        reverse("leaderboard:submission_dialogue", args=[uuid, "d3"]),
        reverse("leaderboard:compare") + "?benchmark=secret",
        reverse("run_detail", args=[run.pk]),
        reverse("leaderboard:api_benchmarks"),
        reverse("leaderboard:api_benchmark", args=["secret"]),
        reverse("leaderboard:api_leaderboard", args=["secret"]),
        reverse("leaderboard:api_run", args=[run.pk]),
        reverse("leaderboard:api_submissions"),
        reverse("leaderboard:api_submission", args=[uuid]),
        reverse("leaderboard:api_systems"),
        reverse("leaderboard:api_schema"),
    ]
    bodies = []
    for user in (None, outsider, researcher, staff):
        client = Client()
        if user:
            client.force_login(user)
        for url in urls:
            response = client.get(url)
            assert response.status_code in (200, 404), url
            bodies.append((url, response.status_code, b"".join(response)
                           if response.streaming else response.content))
            if url.endswith("/dialogues/d3/"):
                assert response.status_code == 404, "hidden dialogues have no drill-down"
    # an upload that gets the hidden dialogue wrong is rejected without revealing its gold
    lines = tiny_lines()
    lines[3]["ranked_item_ids"] = ["a1"]  # not in d3's pool
    del lines[2]
    client = Client()
    client.force_login(researcher)
    file = SimpleUploadedFile("s.jsonl", "".join(json.dumps(x) + "\n" for x in lines).encode())
    response = client.post(reverse("leaderboard:submission_create", args=["echo"]),
                           {"benchmark": "secret", "file": file}, HTTP_HX_REQUEST="true")
    assert "not in the hidden dialogue&#x27;s candidate pool" in response.content.decode()
    bodies.append(("upload", response.status_code, response.content))
    for url, _status, body in bodies:
        text = body.decode()
        assert SECRET_ID not in text and SECRET_NAME not in text, url


def test_hidden_dialogues_appear_only_inside_aggregates(client, secret_benchmark, researcher,
                                                        finished_submission):
    from evaluation.services.submissions import system_create

    system = system_create(name="Echo", owner=researcher)
    finished_submission(system, public=True, benchmark=secret_benchmark)
    page = client.get(reverse("leaderboard:system_detail", args=["echo"])).content.decode()
    dialogue_table = page.split('id="dialogues"')[1].split("</table>")[0]
    assert ">d1</a>" in dialogue_table and ">d2</a>" in dialogue_table
    assert ">d3</a>" not in dialogue_table
    # the overall recall@1 still counts d3 (its answer misses the secret gold): 2 hits of 4
    recall_row = page.split("recall@1 <span")[1].split("</tr>")[0]
    assert ">0.500</a>" in recall_row and '<td class="num">4</td>' in recall_row
