"""The synthetic input generator and the timing helper used by the throughput benchmark."""

from evaluation.lib.metrics.suite import evaluate_submission, evaluated_turn_keys
from evaluation.lib.metrics.synthetic import generate_inputs, time_suite


def test_generator_is_deterministic():
    first, second = generate_inputs(40, seed=7), generate_inputs(40, seed=7)
    assert first == second
    assert generate_inputs(40, seed=8).submitted_turns != first.submitted_turns


def test_generator_answers_exactly_the_evaluated_turns():
    inputs = generate_inputs(40)
    submitted = [(turn.dialogue_id, turn.turn_index) for turn in inputs.submitted_turns]
    assert len(submitted) == 40
    assert submitted == evaluated_turn_keys(inputs.dialogues)


def test_synthetic_run_produces_every_non_entailment_metric_without_missing_turns():
    inputs = generate_inputs(80)
    result = evaluate_submission(
        inputs.dialogues, inputs.items, inputs.reviews, inputs.submitted_turns
    )
    assert result.missing_turns == ()
    produced = set(result.means())
    expected = {spec.name for spec in result.specs} - set(result.unavailable)
    assert produced == expected
    assert 0.0 < result.means()["gs"] <= 1.0


def test_time_suite_reports_throughput():
    report = time_suite(40, text_metrics=False)
    assert report["turns"] == 40
    assert report["turns_per_second"] > 0
    assert report["values"] > 40
