"""The arena ratings page beside the human labels and metrics of its battle dialogues
(docs/arena.md, "Studies from battles"): the numbers shown, who sees them, and reads only."""

import io
import json
import re

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from scipy import stats

from annotation.arena_studies import arena_study_create
from annotation.imports import scores_import
from annotation.lib import taskforms
from annotation.selectors import item_layout
from annotation.services.annotations import annotation_submit
from annotation.services.handout import assignment_next
from annotation.services.members import study_member_add
from evaluation.models import Arena, System
from leaderboard.selectors.arenas import arena_board
from tests.annotation.conftest import full_answers
from tests.annotation.test_arena_study import make_battle
from tests.evaluation.formats.test_public_crs_arena_dial import _conversation
from tests.leaderboard.test_arena_ratings import CLOSED, OPEN, _write

pytestmark = pytest.mark.django_db

# face.overall (0-4) each annotator gives each system's conversations
OVERALL = {"Alpha": (4, 3), "Beta": (1, 1), "Gamma": (2, 4)}


@pytest.fixture
def arena(tiny_benchmark, researcher, media_root):
    arena = Arena.objects.create(slug="tiny", name="Tiny arena", benchmark=tiny_benchmark)
    a, b, c = (System.objects.create(slug=n.lower(), name=n, owner=researcher)
               for n in OVERALL)
    make_battle(arena, a, b, outcome="a")
    make_battle(arena, b, c, outcome="b")
    make_battle(arena, c, a, outcome="b")
    make_battle(arena, a, c, outcome="a")
    return arena


def _label(study, user, which):
    member = study_member_add(study=study, user=user)
    while (assignment := assignment_next(member=member)) is not None:
        data = full_answers(item_layout(assignment.item, study))
        data["face-overall"] = str(OVERALL[assignment.item.system.name][which])
        annotation_submit(assignment=assignment, data=data)


@pytest.fixture
def study(arena, author, annotator, other_annotator):
    study = arena_study_create(arena=arena, author=author, title="Battle study",
                               forms=(taskforms.FACE,), overlap_k=2)
    _label(study, annotator, 0)
    _label(study, other_annotator, 1)
    return study


def _cells(html: str, system: str) -> list[str]:
    row = re.search(rf"<tr><td>{system}</td>(.*?)</tr>", html, re.S).group(1)
    return [re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>",
                                                                         row, re.S)]


def test_the_author_sees_ratings_beside_human_means_metrics_and_rank_agreement(
        client, arena, study, author, tmp_path):
    # An automatic metric on the same conversations: imported scores of two systems.
    dialogues = dict(study.benchmark.dialogues.values_list("external_id", "scenario"))
    scores = tmp_path / "scores.jsonl"
    scores.write_text("".join(json.dumps({
        "metric": "sat_pred", "unit_type": "dialogue", "unit_id": d, "value": value})
        + "\n" for d, scenario in sorted(dialogues.items())
        for value in [{"Alpha": 0.9, "Beta": 0.2}.get(scenario["system"])] if value is not None))
    scores_import(path=scores, benchmark=study.benchmark, evaluator="satpred", user=author)

    client.force_login(author)
    url = reverse("leaderboard:arena_ratings", args=[arena.slug])
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200
    assert not [q for q in queries.captured_queries
                if re.match(r"\s*(INSERT|UPDATE|DELETE)", q["sql"], re.I)]
    html = response.content.decode()
    assert "Ratings and human labels of the battle dialogues" in html
    assert reverse("annotation:arena_study_create", args=[arena.slug]) in html
    board = arena_board(arena)
    ratings = {row["system"]: row["rating"] for row in board.rows}
    # Each system fought 2 or 3 battles, so it has that many conversations, each labelled by
    # both annotators: the mean is the mean of its pair of values.
    conversations = {"Alpha": 3, "Beta": 2, "Gamma": 3}
    for system, (first, second) in OVERALL.items():
        cells = _cells(html, system)
        assert cells[0] == f"{ratings[system]:.1f}"
        assert cells[1] == f"{(first + second) / 2:.2f}"
        n = conversations[system]
        assert cells[3] == f"{2 * n} / {n}"
    # Every conversation of a system has the same pair of labels, so its mean does not vary
    # between conversations: the interval clustered by conversation has zero width.
    assert _cells(html, "Alpha")[2] == "[3.50, 3.50]" and _cells(html, "Beta")[2] == "[1.00, 1.00]"
    assert _cells(html, "Alpha")[4].startswith("0.900") and _cells(html, "Gamma")[4] == "—"
    human = {s: sum(v) / 2 for s, v in OVERALL.items()}
    order = sorted(ratings)
    rho = stats.spearmanr([ratings[s] for s in order], [human[s] for s in order]).statistic
    tau = stats.kendalltau([ratings[s] for s in order], [human[s] for s in order]).statistic
    agreement = re.search(r'<tr class="human-agreement">(.*?)</tr>', html, re.S).group(1)
    cells = [re.sub(r"<[^>]+>", " ", c).split()[0]
             for c in re.findall(r"<td[^>]*>(.*?)</td>", agreement, re.S)]
    assert cells[1:] == [f"{rho:.3f}", f"{tau:.3f}", "3"]
    # the metric has two systems: its rank agreement is undefined, and says why
    metric_row = re.search(r"<tr><td>sat_pred.*?</tr>", html, re.S).group(0)
    assert "fewer than 3" in metric_row and metric_row.count("—") == 2


def test_only_the_author_staff_and_public_studies_show_labels(client, arena, study, annotator,
                                                               staff):
    url = reverse("leaderboard:arena_ratings", args=[arena.slug])
    assert "human-agreement" not in client.get(url).content.decode()  # anonymous
    client.force_login(annotator)
    page = client.get(url).content.decode()
    assert "human-agreement" not in page and "New study from these battles" not in page
    client.force_login(staff)
    assert "human-agreement" in client.get(url).content.decode()
    study.is_public = True
    study.save(update_fields=["is_public"])
    client.logout()
    assert "human-agreement" in client.get(url).content.decode()


def test_the_study_form_on_the_web(client, arena, author, annotator):
    url = reverse("annotation:arena_study_create", args=[arena.slug])
    client.force_login(annotator)
    assert client.get(url).status_code == 403
    client.force_login(author)
    page = client.get(url)
    assert page.status_code == 200 and b"4 voted battles" in page.content
    refused = client.post(url, {"title": "x", "task_forms": ["citation"], "seed": 0,
                                "overlap_k": 1, "seconds_per_item": 60,
                                "assignment_timeout_minutes": 30})
    assert refused.status_code == 200 and b"citation is not one of" in refused.content
    made = client.post(url, {"title": "Satisfaction of battles", "task_forms": ["face", "core"],
                             "sample_size": 3, "seed": 1, "overlap_k": 1,
                             "seconds_per_item": 60, "assignment_timeout_minutes": 30})
    assert made.status_code == 302
    assert client.get(made.url).status_code == 200
    assert client.get(reverse("annotation:arena_study_create", args=["nope"])).status_code == 404


def test_crs_arenas_own_satisfaction_labels_beside_its_imported_ratings(client, staff,
                                                                        tmp_path):
    """CRSArena-Dial: the votes' arena and the users' satisfied/frustrated verdicts on the
    same conversations; the page shows each system's share of satisfied conversations."""

    verdicts = {"kbrd_redial": ["satisfied", "frustrated", "satisfied"],
                "barcor_redial": ["frustrated", "frustrated"],
                "<b>evil</b>_redial": ["satisfied", "satisfied"]}
    (tmp_path / "crs_arena_dial_open.json").write_text(json.dumps(
        [_conversation(f"{system}_u{n}", sentiment=verdict)
         for system, given in verdicts.items() for n, verdict in enumerate(given)]))
    _write(tmp_path / "votes_open.csv", OPEN)
    _write(tmp_path / "votes_closed.csv", CLOSED)
    call_command("import_public", "crs_arena_dial", str(tmp_path), stdout=io.StringIO())
    arena = Arena.objects.get()
    html = client.get(reverse("leaderboard:arena_ratings", args=[arena.slug])).content.decode()
    assert 'value="satisfaction=satisfied" selected' in html
    shares = {system: given.count("satisfied") / len(given)
              for system, given in verdicts.items()}
    for system, share in shares.items():
        cells = _cells(html, system.replace("<", "&lt;").replace(">", "&gt;"))
        assert cells[1] == f"{share:.2f}"
        assert cells[3] == f"{len(verdicts[system])} / {len(verdicts[system])}"
    assert "<b>evil</b>" not in html
    ratings = {row["system"]: row["rating"] for row in arena_board(arena).rows}
    order = sorted(shares)
    rho = stats.spearmanr([ratings[s] for s in order], [shares[s] for s in order]).statistic
    agreement = re.search(r'<tr class="human-agreement">(.*?)</tr>', html, re.S).group(1)
    assert f"{rho:.3f}" in agreement and agreement.rstrip().endswith('<td class="num">3</td>')
