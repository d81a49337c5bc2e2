"""Label these next (annotation/lib/label_plan.py) on the small imported study of
test_anchored: the report's human-anchored section projects the CI width against the number of
labels for both handout policies, equal to evaluation/lib/stats/active.py on the same numbers,
and names the system pairs still uncertain."""

import numpy as np
import pytest

from annotation import report_selectors
from evaluation.lib.stats import active
from tests.annotation.test_anchored import HUMAN, JUDGE, UNITS, fresh_cache, study  # noqa: F401

pytestmark = pytest.mark.django_db


def test_the_plan_projects_both_policies_from_the_labels_so_far(client, study, staff):  # noqa: F811
    plan = report_selectors.study_anchored(study=study, evaluator="external:judge",
                                           aspect="overall", metric="overall")["label_plan"]
    assert plan["labelled"] == 20 and plan["pool"] == 40
    assert [r["labels"] for r in plan["rows"]] == sorted(r["labels"] for r in plan["rows"])
    assert plan["rows"][-1]["labels"] == 40
    # one system here: its projection is active.width_curve on the same numbers
    f = np.array([JUDGE[u] for u in sorted(UNITS)])
    labelled = [i for i, u in enumerate(sorted(UNITS)) if u in UNITS[:20]]
    y = np.array([HUMAN[sorted(UNITS)[i]] for i in labelled])
    error = active.predicted_error(f, labelled, y)
    first = plan["rows"][0]
    # the judge reports no uncertainty: the handout's first of four waves is uniform, so a
    # quarter of the projected active variance is uniform's
    assert plan["systems"][0]["uniform_share"] == 0.25
    expected = active.width_curve(error, float(np.std(y, ddof=1)), [first["labels"]],
                                  uniform_share=0.25)[0]
    one_shot = active.width_curve(error, float(np.std(y, ddof=1)), [first["labels"]])[0]
    assert first["uniform"] == pytest.approx(expected["uniform"])
    assert first["active"] == pytest.approx(expected["active"])
    assert first["active"] == pytest.approx(np.sqrt(0.25 * one_shot["uniform"] ** 2
                                                    + 0.75 * one_shot["active"] ** 2))
    assert first["active"] != pytest.approx(one_shot["active"])
    assert plan["uncertain"] == []  # one system: no pair
    client.force_login(staff)
    page = client.get(f"/studies/{study.slug}/report/",
                      {"evaluator": "external:judge", "aspect": "overall"}).content.decode()
    assert 'id="label-plan"' in page and 'id="label-plan-chart"' in page
    assert 'data-policy="active"' in page and 'data-policy="uniform"' in page
    assert "one system: there is no ranking to settle" in page


def test_a_judge_that_stores_its_uncertainty_drives_the_plan(client, study, staff):  # noqa: F811
    """The judge's own uncertainty (UnitScore.detail["uncertainty"]["sd"], as FACE stores it)
    is the error predictor when it is there: the plan says so and projects from
    active.error_model with it."""
    from evaluation.models import UnitScore

    units = sorted(UNITS)
    reported = {u: 0.2 + 0.05 * (n % 9) for n, u in enumerate(units)}
    for score in UnitScore.objects.filter(run__evaluator="external:judge", metric="overall"):
        score.detail = {"uncertainty": {"sd": reported[score.unit_id], "source": "test"}}
        score.save(update_fields=["detail"])
    plan = report_selectors.study_anchored(study=study, evaluator="external:judge",
                                           aspect="overall", metric="overall")["label_plan"]
    assert [p["key"] for p in plan["predictors"]] == ["uncertainty"]
    assert plan["systems"][0]["predictor"] == "uncertainty"
    assert plan["systems"][0]["with_uncertainty"] == 40
    f = np.array([JUDGE[u] for u in units])
    labelled = [i for i, u in enumerate(units) if u in UNITS[:20]]
    y = np.array([HUMAN[units[i]] for i in labelled])
    model = active.error_model(f, labelled, y, uncertainty=[reported[u] for u in units])
    assert model.predictor == "uncertainty"
    assert plan["systems"][0]["uniform_share"] == 0.0  # every wave follows the uncertainty
    first = plan["rows"][0]
    expected = active.width_curve(model.error, float(np.std(y, ddof=1)), [first["labels"]])[0]
    assert first["uniform"] == pytest.approx(expected["uniform"])
    assert first["active"] == pytest.approx(expected["active"])
    client.force_login(staff)
    page = client.get(f"/studies/{study.slug}/report/",
                      {"evaluator": "external:judge", "aspect": "overall"}).content.decode()
    assert 'id="label-plan-predictor"' in page and 'data-predictor="uncertainty"' in page
    assert "the judge&#x27;s own uncertainty" in page


def test_without_stored_uncertainty_the_plan_names_the_quintile_predictor(study):  # noqa: F811
    plan = report_selectors.study_anchored(study=study, evaluator="external:judge",
                                           aspect="overall", metric="overall")["label_plan"]
    assert [p["key"] for p in plan["predictors"]] == ["quintiles"]
    assert plan["systems"][0]["with_uncertainty"] == 0
