"""The hidden split answers no questions about single turns (issue 18, point 1).

The attack that worked: answer one hidden turn, upload it again and again with its ranking
permuted, and read the change in the aggregate MRR; each upload's number says whether the item
put first is the gold one. Now hidden dialogues are scored only when the benchmark's owner ends
the hidden phase, and only as a whole; rejected uploads say "hidden dialogue" and nothing more.
"""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from evaluation.lib.formats.submission import HIDDEN_WHOLE
from evaluation.models import Run, Submission, UnitScore
from tests.support.bundles import tiny_data, write_tiny
from tests.support.submissions import tiny_lines

pytestmark = pytest.mark.django_db


@pytest.fixture
def phase_benchmark(tmp_path, researcher):
    """The tiny benchmark, owned by someone else, with its hidden phase still running."""
    from django.contrib.auth import get_user_model

    from evaluation.services.benchmarks import benchmark_import

    data = tiny_data()
    data["benchmark"]["slug"] = "phase"
    d4 = json.loads(json.dumps(next(d for d in data["dialogues"] if d["id"] == "d3")))
    data["dialogues"].append({**d4, "id": "d4"})  # a second hidden dialogue, same gold r1
    owner = get_user_model().objects.create_user("phase-owner", password="x")
    return benchmark_import(path=write_tiny(tmp_path / "phase", data), owner=owner)


def phase_lines() -> list[dict]:
    lines = tiny_lines()
    return [*lines, {**lines[3], "dialogue_id": "d4"}]


def _upload(client, system, lines):
    body = "".join(json.dumps(line) + "\n" for line in lines).encode()
    return client.post(reverse("leaderboard:submission_create", args=[system.slug]),
                       {"benchmark": "phase", "file": SimpleUploadedFile("s.jsonl", body)},
                       HTTP_HX_REQUEST="true")


def _visible_numbers(client, submission):
    """Every number the submitter can read about an upload: the API's run results and
    submission, and the submission page and its status fragment with ids and dates removed."""
    run = submission.runs.get()
    data = client.get(reverse("leaderboard:api_run", args=[run.pk])).json()
    seen = {"metrics": data["metrics"], "splits": data["splits"], "status": data["status"]}
    for name in ("submission_detail", "submission_status"):
        html = client.get(reverse(f"leaderboard:{name}", args=[submission.uuid])).content.decode()
        for noise in (str(submission.uuid), f"/runs/{run.pk}/", f"/jobs/{run.job_id}/",
                      f"#{run.pk}<", submission.created_at.strftime("%Y-%m-%d %H:%M")):
            html = html.replace(noise, "")
        seen[name] = [line for line in html.splitlines() if "csrf" not in line.lower()]
    return seen


def test_permuted_rankings_of_one_hidden_turn_learn_nothing(
        client, settings, phase_benchmark, researcher, django_capture_on_commit_callbacks):
    from evaluation.services.submissions import system_create

    settings.DAILY_SUBMISSION_QUOTA = 3  # the attacker's whole quota, one upload per item
    client.force_login(researcher)
    system = system_create(name="Probe", owner=researcher)
    observed = {}
    for first in ("r1", "r2", "h1"):  # d3's candidate pool; its gold is r1
        lines = phase_lines()
        lines[3]["ranked_item_ids"] = [first] + [i for i in ("r1", "r2", "h1") if i != first]
        with django_capture_on_commit_callbacks(execute=True):
            response = _upload(client, system, lines)
        assert response.status_code == 200, response.content.decode()[:2000]
        submission = Submission.objects.filter(system=system).latest("created_at")
        assert submission.runs.get().job.status == "succeeded"
        observed[first] = _visible_numbers(client, submission)
    # every upload reads exactly alike: which item came first changed nothing the submitter sees
    assert observed["r1"] == observed["r2"] == observed["h1"]
    assert observed["r1"]["splits"] == ["test", "train"]
    # and no stored number covers a hidden dialogue, so no page or export could show one
    assert not UnitScore.objects.filter(run__submission__benchmark=phase_benchmark,
                                        dialogue_id="d3").exists()
    # a fourth try is refused: the quota is the account's, a second system does not reset it
    other = system_create(name="Probe 2", owner=researcher)
    response = _upload(client, other, phase_lines())
    assert "Daily quota reached" in response.content.decode()
    assert Submission.objects.filter(system__owner=researcher).count() == 3


def test_ending_the_hidden_phase_scores_every_hidden_answer_once(
        client, phase_benchmark, researcher, django_capture_on_commit_callbacks):
    from evaluation.services.submissions import system_create

    client.force_login(researcher)
    system = system_create(name="Final", owner=researcher)
    with django_capture_on_commit_callbacks(execute=True):
        _upload(client, system, phase_lines())
    submission = Submission.objects.get(system=system)
    page = client.get(reverse("benchmark_detail", args=["phase"])).content.decode()
    assert "How hidden scores are released" in page and "End the hidden phase" not in page
    # only the owner may end the phase
    release = reverse("benchmark_hidden_release", args=["phase"])
    assert client.post(release).status_code in (403, 404)
    client.force_login(phase_benchmark.owner)
    assert "End the hidden phase" in client.get(
        reverse("benchmark_detail", args=["phase"])).content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post(release).status_code == 302
    final = Run.objects.filter(submission=submission).latest("created_at")
    assert final.config["splits"] == ["hidden", "test", "train"]
    assert final.job.status == "succeeded"
    assert UnitScore.objects.filter(run=final, dialogue_id="d3").exists()
    # the worked values of tests/support/submissions.py, d4 answered like d3: MRR 4.5/5
    mrr = final.summaries.get(metric="mrr")
    assert (mrr.value, mrr.n) == (pytest.approx(0.9), 5)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(release)  # a second release is refused, nothing is queued twice
    assert Run.objects.filter(submission=submission).count() == 2


def test_rejected_uploads_say_hidden_dialogue_and_nothing_more(client, phase_benchmark,
                                                               researcher):
    from evaluation.services.submissions import system_create

    client.force_login(researcher)
    system = system_create(name="Errors", owner=researcher)
    lines = phase_lines()
    lines.append({**lines[3], "turn_index": 0})  # a user turn of hidden d3
    lines[3]["ranked_item_ids"] = ["a1"]  # outside d3's pool
    text = _upload(client, system, lines).content.decode()
    assert "turn 0 of hidden dialogue &#x27;d3&#x27; is not a turn systems answer" in text
    assert "not in the hidden dialogue&#x27;s candidate pool" in text
    for detail in ("provide_preference", "user", "answered turns"):
        assert detail not in text.split("Fix these")[0].split("<ul")[-1], detail
    # leaving out a hidden dialogue refuses the hidden part with one message, not a list
    body = _upload(client, system, tiny_lines()).content.decode()  # d3 answered, d4 not
    assert HIDDEN_WHOLE.replace("'", "&#x27;") in body
    assert "d4" not in body
    assert not Submission.objects.filter(system=system).exists()


def test_an_upload_of_hidden_answers_alone_waits_for_no_one(client, phase_benchmark,
                                                            researcher):
    from evaluation.services.submissions import system_create

    client.force_login(researcher)
    system = system_create(name="Only hidden", owner=researcher)
    text = _upload(client, system, phase_lines()[3:]).content.decode()
    assert "answers only hidden dialogues" in text
    assert not Submission.objects.filter(system=system).exists()
