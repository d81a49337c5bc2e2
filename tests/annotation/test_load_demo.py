"""`load_demo` adds a study of real public human labels (AB-ReDial) read from the public data
folder beside the clone (never from the repository), and says so when the folder is absent."""

import io
import re

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from annotation.management.commands.load_demo import Command
from annotation.models import Study
from tests.evaluation.formats.public_data import dataset

pytestmark = pytest.mark.django_db


def _command() -> tuple[Command, io.StringIO]:
    out = io.StringIO()
    command = Command(stdout=out)
    return command, out


def test_public_study_is_loaded_from_the_public_folder(settings, client, tmp_path):
    settings.PUBLIC_DATA_DIR = dataset("ab_redial").parent
    settings.MEDIA_ROOT = tmp_path / "media"
    author = get_user_model().objects.create_user("author")
    command, out = _command()
    command._public_study()
    study = Study.objects.get(benchmark__slug="ab-redial")
    assert study.author == author
    assert re.search(r"Public study ab_redial: \d+ labels from 4 annotators", out.getvalue())
    command._public_study()  # idempotent
    assert "already loaded" in out.getvalue() and Study.objects.count() == 1
    client.force_login(author)
    page = client.get(reverse("annotation:study_report", args=[study.slug])).content.decode()
    agreement = page.split('id="table-agreement"')[1].split("</table>")[0]
    assert len(re.findall(r"\b0\.\d{3}\b", agreement)) >= 16  # real alphas, not dashes


def test_absent_public_folder_is_said_plainly(settings, tmp_path):
    settings.PUBLIC_DATA_DIR = tmp_path / "nowhere"
    command, out = _command()
    command._public_study()
    assert "Public study ab_redial: skipped, no folder" in out.getvalue()
    assert "CONCORD_PUBLIC_DATA_DIR" in out.getvalue()
    assert not Study.objects.exists()


def test_the_demo_opens_an_arena_of_the_seven_rankers(tiny_benchmark, client):
    from evaluation.models import Arena
    from evaluation.services.live import live_baselines_ensure

    command, out = _command()
    live = live_baselines_ensure()
    command._arena(tiny_benchmark, live)
    command._arena(tiny_benchmark, live)  # idempotent
    arena = Arena.objects.get()
    assert sorted(arena.systems.values_list("slug", flat=True)) == [
        "baseline-aspect", "baseline-dense", "baseline-hybrid-rrf", "baseline-itinerary",
        "baseline-popularity", "baseline-spatial", "baseline-tfidf"]
    assert f"Arena: /arena/{tiny_benchmark.slug}/ (blind battles between 7" in out.getvalue()
    page = client.get(f"/arena/{tiny_benchmark.slug}/").content.decode()
    assert "No arena is open" not in page
