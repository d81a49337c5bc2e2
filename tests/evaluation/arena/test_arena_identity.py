"""An arena answer that names its system (docs/arena.md, "Which votes count"): the pure screen,
one row per phrase it must catch and per phrase it must let through."""

import pytest

from evaluation.lib.arena_identity import identity_leak

TFIDF = {"names": ["TF-IDF", "baseline-tfidf"], "family": "retrieval"}


@pytest.mark.parametrize("text, found", [
    ("I am TF-IDF, and I recommend Harbor Grill.", "TF-IDF"),
    ("i am tf-idf", "tf-idf"),
    ("Ranked by TFIDF: Harbor Grill.", "TFIDF"),
    ("tf idf says: Harbor Grill", "tf idf"),
    ("(baseline_tfidf) Harbor Grill", "baseline_tfidf"),
    ("I'm a retrieval system: Harbor Grill.", "I'm a retrieval"),
    ("I am ChatGPT.", "ChatGPT"),
    ("As an AI developed by OpenAI, I suggest Harbor Grill.", "AI developed by OpenAI"),
    ("I am a large language model trained by Google.", "language model trained by Google"),
    ("Hi, I'm Claude! Try Harbor Grill.", "I'm Claude"),
    ("I’m Claude.", "I’m Claude"),
    ("This is Llama 3 speaking.", "This is Llama"),
    ("You're talking to Gemini.", "You're talking to Gemini"),
    ("My name is Qwen.", "My name is Qwen"),
    ("Built on GPT-4o, I recommend it.", "GPT-4o"),
    ("GPT-3.5 thinks so", "GPT-3.5"),
    ("Anthropic's assistant recommends it", "Anthropic"),
])
def test_an_answer_that_names_its_system_is_caught(text, found):
    assert identity_leak(text, **TFIDF) == found


@pytest.mark.parametrize("text", [
    "I recommend Harbor Grill in Portland. One visitor wrote \"great crab cakes\" [R1].",
    "Watch Gemini Man tonight; the llama farm tour is fun too.",
    "The retrieval of your bags is free; a dense, quiet neighbourhood.",
    "This is a retrieval-friendly spot.",  # a family needs a first-person introduction
    "Stiffidf is not a word",  # whole words only
    "Harbor Grill is made by Google Maps reviewers' favourites",  # no AI word before it
    "",
])
def test_an_ordinary_answer_passes(text):
    assert identity_leak(text, **TFIDF) is None


def test_short_names_are_ignored_and_other_systems_names_do_not_count():
    assert identity_leak("I am s0 and a b", names=["s0", "A"]) is None
    assert identity_leak("BM25 would say so", names=["TF-IDF"]) is None
    assert identity_leak("Popularity first: Harbor Grill", names=["Popularity"]) == "Popularity"
    assert identity_leak("the most popular place", names=["Popularity"]) is None
