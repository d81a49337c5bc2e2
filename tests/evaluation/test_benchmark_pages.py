import pytest
from django.urls import reverse

from tests.leaderboard.test_arena_ratings import folder  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db


def test_benchmark_list_shows_counts(client, tiny_benchmark):
    page = client.get(reverse("benchmark_list")).content.decode()
    assert "Tiny Tourism" in page and ">4<" in page and ">3<" in page


def test_benchmark_page_shows_splits_difficulty_types_and_cities(client, tiny_benchmark):
    page = client.get(reverse("benchmark_detail", args=["tiny"])).content.decode()
    for text in ("Splits", "Difficulty mix", "Item types", "Cities", "Philadelphia", "restaurant",
                 "hard"):
        assert text in page
    assert "/dialogues/d1/" in page and "/dialogues/d2/" in page
    assert "/dialogues/d3/" not in page, "hidden dialogues are listed publicly"
    assert "hidden</strong> split are counted but not shown" in page


def test_staff_sees_hidden_dialogues(client, staff, tiny_benchmark):
    client.force_login(staff)
    page = client.get(reverse("benchmark_detail", args=["tiny"])).content.decode()
    assert "/dialogues/d3/" in page


def test_htmx_filter_returns_only_the_table(client, tiny_benchmark):
    response = client.get(reverse("benchmark_detail", args=["tiny"]), {"split": "test"},
                          HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert "<html" not in body and "/dialogues/d2/" in body and "/dialogues/d1/" not in body


def test_hidden_split_filter_is_ignored_for_the_public(client, tiny_benchmark):
    body = client.get(reverse("benchmark_detail", args=["tiny"]), {"split": "hidden"}).content
    assert b"/dialogues/d3/" not in body


def test_dialogue_viewer_marks_quotes_and_links_reviews(client, tiny_benchmark):
    page = client.get(reverse("dialogue_detail", args=["tiny", "d1"])).content.decode()
    assert ('<mark class="quote" data-review-id="v1"><a href="#review-v1"' in page)
    assert '<article class="review" id="review-v1">' in page
    assert '<mark class="quote-span">The crab cakes were incredible</mark>' in page
    assert "Reject and refine" in page and "gold" in page


def test_hidden_dialogue_is_404_for_anonymous_and_outsiders(client, outsider, tiny_benchmark):
    url = reverse("dialogue_detail", args=["tiny", "d3"])
    assert client.get(url).status_code == 404
    client.force_login(outsider)
    assert client.get(url).status_code == 404


def test_hidden_dialogue_opens_for_staff(client, staff, tiny_benchmark):
    client.force_login(staff)
    assert client.get(reverse("dialogue_detail", args=["tiny", "d3"])).status_code == 200


def test_private_benchmark_is_404_for_strangers(client, outsider, researcher, tiny_benchmark):
    tiny_benchmark.is_public = False
    tiny_benchmark.owner = researcher
    tiny_benchmark.save()
    client.force_login(outsider)
    assert client.get(reverse("benchmark_detail", args=["tiny"])).status_code == 404
    client.force_login(researcher)
    assert client.get(reverse("benchmark_detail", args=["tiny"])).status_code == 200


def test_untrusted_text_is_escaped(client, tiny_benchmark):
    turn = tiny_benchmark.dialogues.get(external_id="d1").turns.get(index=0)
    turn.text = "<script>alert(1)</script> quiet please"
    turn.save()
    page = client.get(reverse("dialogue_detail", args=["tiny", "d1"])).content.decode()
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_login_and_logout(client, researcher):
    from tests.conftest import PASSWORD

    response = client.post(reverse("login"), {"username": "researcher", "password": PASSWORD})
    assert response.status_code == 302
    assert "researcher" in client.get(reverse("home")).content.decode()
    client.post(reverse("logout"))
    assert "Log in" in client.get(reverse("home")).content.decode()


def test_a_benchmark_without_places_or_items_shows_no_tourism_layout(
        client, tiny_benchmark, tmp_path, settings, staff, folder):  # noqa: F811
    """Issue 34: an imported data set of conversations (no items, no reviews, no cities) shows
    no "Cities: none recorded", no "0 items, 0 reviews" and no bundle "items" it lacks."""
    import io

    from django.core.management import call_command

    from evaluation.models import Benchmark

    settings.MEDIA_ROOT = tmp_path / "media"
    call_command("import_public", "crs_arena_dial", str(folder), stdout=io.StringIO())
    benchmark = Benchmark.objects.exclude(pk=tiny_benchmark.pk).get()
    assert not benchmark.items.exists()
    page = client.get(f"/benchmarks/{benchmark.slug}/").content.decode()
    tiles = page.split('class="tiles"')[1].split("</section>")[0]
    assert ">items<" not in tiles and ">reviews<" not in tiles and ">dialogues<" in tiles
    charts = page.split('class="chart-grid"')[1].split("</section>")[0]
    assert "Cities" not in charts and "Item types" not in charts and "none recorded" not in charts
    assert "items, reviews and every dialogue" not in page and "every dialogue of" in page
    assert "<th>City</th>" not in page
    tiny = client.get("/benchmarks/tiny/").content.decode()  # a tourism benchmark keeps them
    assert "Cities" in tiny and "<th>City</th>" in tiny and ">items<" in tiny
