"""CoRE's token cost per log on the demo benchmark (real prompts, scripted answers of CoRE's
average lengths) and the debate's prompt growth, which must be at most linear in rounds."""

import io

import pytest
from django.core.management import call_command

from evaluation.lib.demo import generate_demo_bundle
from evaluation.lib.llm.adapters import reference_log
from evaluation.lib.llm.cost_report import SEED_FACTOR_ANSWER_TOKENS, measure_core_cost


@pytest.fixture(scope="module")
def demo():
    return generate_demo_bundle(42)


def test_debate_prompt_grows_linearly_in_rounds_on_demo_logs(demo):
    logs = [reference_log(d) for d in demo["dialogues"][:3]]
    report = measure_core_cost(logs, item_names={i["id"]: i["name"] for i in demo["items"]},
                               domain="tourism", max_rounds=4)

    assert [log.rounds for log in report.logs] == [4, 4, 4]  # the scripted roles never agree
    for log in report.logs:
        assert log.factors["output"] == pytest.approx(12 * SEED_FACTOR_ANSWER_TOKENS, rel=0.03)
        for role, rounds in log.round_inputs.items():
            sizes = [rounds[n] for n in (1, 2, 3, 4)]
            steps = [b - a for a, b in zip(sizes, sizes[1:], strict=False)]
            # From round 2 on each round adds the previous round's four statements: the same
            # number of tokens every time (the first step also adds the discussion's frame).
            assert abs(steps[2] - steps[1]) <= 10, (role, sizes)
            assert 0 < steps[1] <= steps[0] <= steps[1] + 120, (role, sizes)
            assert sizes[3] <= sizes[0] + 3 * steps[0]  # never faster than linear
    growth = report.growth()
    assert growth["max_increment_change"] <= 120
    summary = report.summary()
    # Prompt sizes are real; with CoRE's answer lengths the totals land near its figures.
    assert 8_000 < summary["per_log"]["factors"]["total"] < 30_000
    assert 25_000 < summary["per_log"]["debate"]["total"] < 80_000


def test_cost_report_command_prints_figures_beside_the_seeds():
    out = io.StringIO()
    call_command("llm_cost_report", logs=2, stdout=out)
    text = out.getvalue()
    assert "CoRE tokens per log on 2 conversations" in text
    assert "21,114" in text and "51,337" in text  # CoRE's totals, side by side
    assert "increment per round" in text and "r4:" in text
