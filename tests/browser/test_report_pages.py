"""The study report and the metric leaderboard in Chromium: the SVG heatmap and scatter plots
have one mark per factor pair and per joined unit; screenshots for people to look at."""

import json

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache

from annotation.imports import public_dataset_import, scores_import
from annotation.lib import taskforms
from tests.annotation.conftest import make_study, make_submissions
from tests.annotation.test_report import label_all, score_file
from tests.browser.conftest import screenshot
from tests.browser.test_annotation_forms import log_in
from tests.evaluation.formats.public_data import dataset
from tests.support.broker import unreachable_broker

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    cache.clear()


def test_native_report_draws_the_coupling_heatmap_and_a_scatter_per_metric(
        page, live_server, tiny_benchmark, author, annotator, other_annotator, researcher,
        tmp_path):
    submissions = make_submissions(tiny_benchmark, researcher)
    forms = (taskforms.CITATION, taskforms.CHECKLIST, taskforms.LIKERT, taskforms.CORE)
    study = make_study(tiny_benchmark, author, forms=forms, submissions=submissions,
                       overlap_k=3, tie_break_extra=False, slug="browser-study")
    for user, style in ((annotator, "plain"), (other_annotator, "mild"),
                        (User.objects.create_user("odd-one"), "odd")):
        label_all(study, user, style)
    scores_import(path=score_file(tmp_path, submissions), benchmark=tiny_benchmark,
                  evaluator="toy")
    log_in(page, live_server, author)
    page.goto(f"/studies/{study.slug}/report/?evaluator=external:toy")
    heatmaps = page.locator("#coupling svg.heatmap")
    assert heatmaps.count() == 1  # the humans; no judge scored the CoRE factors
    assert heatmaps.first.locator("rect.cell").count() == 12 * 12
    scatter = page.locator("#correlation svg.scatter")
    assert scatter.count() == 1
    assert scatter.first.locator("circle.pt").count() == 4  # 2 systems × 2 labelled turns
    assert page.locator("#table-agreement tbody tr").count() > 10
    assert "nan" not in page.locator("main").inner_text().lower().split()
    screenshot(page, "report-native-study")


def test_crs_arena_eval_report_and_public_metric_leaderboard(page, live_server, staff,
                                                             tmp_path):
    folder = dataset("crs_arena_eval")
    benchmark, study, _ = public_dataset_import(name="crs_arena_eval", path=folder,
                                                author=staff)
    data = json.loads((folder / "crs_arena_eval.json").read_text())
    lengths, questions = [], []
    for conversation in data:
        for turn in conversation["dialogue"]:
            if turn["role"] == "ASST":
                unit = f"{conversation['conv_id']}#{turn['turn_ind']}"
                lengths.append({"metric": "response_length", "unit_type": "turn",
                                "unit_id": unit, "value": len(turn["utterance"].split())})
                questions.append({"metric": "question_marks", "unit_type": "turn",
                                  "unit_id": unit, "value": turn["utterance"].count("?")})
        lengths.append({"metric": "assistant_turns", "unit_type": "dialogue",
                        "unit_id": conversation["conv_id"],
                        "value": sum(t["role"] == "ASST" for t in conversation["dialogue"])})
    for name, lines in (("length", lengths), ("questions", questions)):
        path = tmp_path / f"{name}.jsonl"
        path.write_text("\n".join(json.dumps(line) for line in lines))
        scores_import(path=path, benchmark=benchmark, evaluator=name)

    log_in(page, live_server, staff)
    page.goto(f"/studies/{study.slug}/report/?evaluator=external:length&by=source_dataset")
    heatmap = page.locator("#coupling svg.heatmap").first
    assert heatmap.locator("rect.cell").count() == 7 * 7  # the seven dialogue-level labels
    assert not page.locator("#coupling").evaluate("d => d.open")  # collapsed
    # Plots of the chosen aspect and metric only: the filters choose them.
    page.select_option("#correlation select[name=aspect]", "relevance")
    page.wait_for_function("() => document.querySelector('#plots figure')"
                           " && document.querySelector('#plots figure').dataset.aspect"
                           " === 'relevance'")
    assert "aspect=relevance" in page.url  # htmx pushed the filter into the address
    plots = page.locator("#correlation figure.scatter-figure")
    assert plots.count() == 1
    assert plots.first.get_attribute("data-metric") == "response_length"
    assert plots.first.locator("circle.pt").count() == 2230
    page.goto(f"/studies/{study.slug}/report/?evaluator=external:length&by=source_dataset"
              "&aspect=dialogue_overall")
    plots = page.locator("#correlation figure.scatter-figure")
    assert {plots.nth(i).get_attribute("data-metric") for i in range(plots.count())} == {
        "assistant_turns"}
    assert plots.first.locator("circle.pt").count() == 467
    # sample efficiency (the "label these next" chart, #label-plan-chart, is another figure)
    curves = page.locator("#correlation figure.curve-figure:not(#label-plan-chart)")
    assert curves.count() == 1 and curves.first.locator("circle.curve-dot").count() >= 3
    assert curves.first.locator("polygon.curve-band").count() == 1
    assert page.locator("#table-item_level").count() == 0  # every row: when asked for
    page.locator("#correlation-all summary").click()  # htmx computes and shows every row
    page.wait_for_selector("#correlation-all[open] #table-item_level")
    assert "opendialkg" in page.locator("#table-item_level").inner_text()
    screenshot(page, "report-crs-arena-eval")

    page.context.clear_cookies()  # a public data set's metric leaderboard is public
    page.goto(f"/studies/{study.slug}/metric-leaderboard/?aspect=relevance")
    rows = page.locator("#metric-board tbody tr")
    evaluators = [rows.nth(k).locator("td").nth(1).inner_text() for k in range(rows.count())]
    # the imported metric, and the reference-free baselines the import ran (the embedding one
    # by its job, which ran when the import committed)
    assert {"external:length", "reference_free", "reference_free_embedding"} <= set(evaluators)
    assert evaluators.count("reference_free") == 4, evaluators  # the four lexical metrics
    assert evaluators.count("reference_free_embedding") == 1, evaluators
    assert page.locator("#reference-free-note").count() == 1
    screenshot(page, "metric-leaderboard-crs-arena-eval")


def test_ab_redial_report_shows_agreement_with_intervals_and_leave_one_out(page, live_server,
                                                                           staff):
    # The report's human agreement only: the import's worker jobs (the embedding baseline over
    # every ReDial answer, 36 s of CPU, and the trust refreshes) are not sent; the CRSArena-Eval
    # test above and tests/annotation/test_reference_free_import.py run them.
    with unreachable_broker():
        _, study, summary = public_dataset_import(name="ab_redial", path=dataset("ab_redial"),
                                                  author=staff)
    assert summary["embedding_job"] is None
    log_in(page, live_server, staff)
    page.goto(f"/studies/{study.slug}/report/")
    rows = page.locator("#table-agreement_headline tbody tr")
    assert rows.count() == 8  # the headline: each field at its own level
    assert "[" in rows.first.inner_text()  # every alpha has its interval
    assert page.locator("#table-agreement tbody tr").count() == 16  # collapsed: both levels
    assert page.locator("#table-leave_one_out tbody tr").count() == 5
    assert page.locator("#table-worst_pairs tbody tr").count() == 5
    assert page.locator("#coupling svg.heatmap rect.cell").count() == 5 * 5
    screenshot(page, "report-ab-redial")


def test_the_pairwise_summary_fits_both_screen_sizes(page, live_server, tiny_benchmark, author,
                                                     annotator, other_annotator, researcher):
    submissions = make_submissions(tiny_benchmark, researcher)
    study = make_study(tiny_benchmark, author, forms=(taskforms.PAIRWISE,),
                       submissions=submissions, overlap_k=3, tie_break_extra=False,
                       slug="pairwise-study")
    for user in (annotator, other_annotator, User.objects.create_user("third")):
        label_all(study, user, "plain")
    log_in(page, live_server, author)
    page.goto(f"/studies/{study.slug}/report/")
    section = page.locator("#pairwise-preferences")
    assert section.locator("table").count() == 2
    assert "Bradley–Terry strengths" in section.inner_text()
    for width, height in ((1366, 768), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        # the section's tables scroll inside it (the page head's buttons are issue 34.8's)
        box = section.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= width, (width, box)
        section.scroll_into_view_if_needed()
        screenshot(page, f"report-pairwise-{width}")
