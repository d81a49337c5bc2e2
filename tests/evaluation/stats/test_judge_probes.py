"""Judge-bias probes (evaluation/lib/stats/judge_probes.py): the within-dialogue length slope by
hand and its interval's coverage by simulation, position flips with a Wilson interval (checked
against statsmodels' formula written out), and the model families behind the self-preference
flag."""

import numpy as np
import pytest

from evaluation.lib.stats import judge_probes as jp


def test_length_slope_by_hand_ignores_differences_between_dialogues():
    # Dialogue A: lengths 100, 300 words, scores 1, 2 -> within slope 0.5 per 100 words.
    # Dialogue B: lengths 200, 400, scores 5, 6 -> 0.5. Pooled over both, a naive slope would
    # mix in B's higher level; the within slope is 0.5 exactly.
    scores = {"a1": 1.0, "a2": 2.0, "b1": 5.0, "b2": 6.0, "c1": 3.0, "c2": 3.5}
    lengths = {"a1": 100, "a2": 300, "b1": 200, "b2": 400, "c1": 50, "c2": 150}
    clusters = {k: k[0] for k in scores}
    out = jp.length_slope(scores, lengths, clusters)
    assert out["value"] == pytest.approx(0.5)
    assert out["n"] == {"units": 6, "dialogues": 3}
    assert out["ci_low"] == pytest.approx(0.5) and out["ci_high"] == pytest.approx(0.5)


def test_length_slope_needs_dialogues_with_several_turns():
    out = jp.length_slope({"a": 1.0, "b": 2.0}, {"a": 10, "b": 20}, {"a": "x", "b": "y"})
    assert out["value"] is None and "needs" in out["reason"]


@pytest.mark.parametrize("true_slope", [0.0, 0.4])
def test_length_slope_interval_covers_at_95_percent(true_slope):
    """500 simulated runs of 40 dialogues × 2-8 turns; dialogue effects on both length and score
    (which a pooled slope would confound)."""
    rng = np.random.default_rng(int(true_slope * 10))
    hits = []
    for _ in range(500):
        scores, lengths, clusters = {}, {}, {}
        for d in range(40):
            level = rng.normal()
            for t in range(int(rng.integers(2, 9))):
                key = (d, t)
                words = int(max(5, 120 + 60 * level + rng.normal(0, 50)))
                lengths[key] = words
                scores[key] = 3 + level + true_slope * words / 100 + rng.normal(0, 0.8)
                clusters[key] = d
        out = jp.length_slope(scores, lengths, clusters)
        hits.append(out["ci_low"] <= true_slope <= out["ci_high"])
    assert np.mean(hits) == pytest.approx(0.95, abs=0.025)


def test_position_flips_wilson_interval():
    verdicts = [("A", "B")] * 3 + [("A", "A")] * 5 + [("tie", "B")] * 2
    out = jp.position_flips(verdicts)
    assert out["flips"] == 5 and out["value"] == pytest.approx(0.5)
    # Wilson (statsmodels proportion_confint method="wilson"), written out for 5 of 10
    z = 1.959963984540054
    p, n = 0.5, 10
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    assert out["ci_low"] == pytest.approx(centre - half)
    assert out["ci_high"] == pytest.approx(centre + half)
    assert out["ci_low"] == pytest.approx(0.2366, abs=1e-4)  # the textbook value
    assert jp.position_flips([])["value"] is None


def test_position_flips_interval_covers_at_95_percent():
    rng = np.random.default_rng(5)
    hits = []
    for _ in range(2000):
        flips = rng.random(60) < 0.2
        verdicts = [("A", "B") if f else ("A", "A") for f in flips]
        out = jp.position_flips(verdicts)
        hits.append(out["ci_low"] <= 0.2 <= out["ci_high"])
    # Wilson's coverage oscillates with n and p around 0.95 (Brown, Cai & DasGupta 2001): at
    # n = 60, p = 0.2 it is 0.97 exactly-ish; never far below 0.95.
    assert 0.935 <= np.mean(hits) <= 0.98


@pytest.mark.parametrize(("text", "family"), [
    ("openai/gpt-4o-mini", "GPT (OpenAI)"),
    ("gpt-4o", "GPT (OpenAI)"),
    ("anthropic/claude-3-5-sonnet", "Claude (Anthropic)"),
    ("ollama/llama3.1:8b", "Llama (Meta)"),
    ("hosted_vllm/Qwen/Qwen2.5-7B-Instruct", "Qwen (Alibaba)"),
    ("openai/scripted", None),  # an OpenAI-compatible server is not OpenAI's model
    ("ollama/phi3", "Phi (Microsoft)"),
    ("gemini/gemini-1.5-pro", "Gemini (Google)"),
])
def test_judge_family(text, family):
    assert jp.judge_family(text) == family


def test_self_preference_flags_systems_of_the_judges_family():
    systems = [("LLM Zero-Shot", "zero-shot answers from gpt-4o-mini"),
               ("BM25 ranker", "lexical retrieval, no LLM"),
               ("Philosophy bot", "philosophy-themed rule system"),
               ("Llama RAG", "RAG on Llama-3-8B")]
    out = jp.self_preference("openai/gpt-4o", systems)
    assert out == {"judge_family": "GPT (OpenAI)", "systems": ["LLM Zero-Shot"], "flag": True}
    assert jp.self_preference("openai/scripted", systems)["flag"] is False
    assert jp.self_preference("ollama/llama3", systems)["systems"] == ["Llama RAG"]
