"""BLEU-4 and ROUGE-L: hand-computed values and equality with sacrebleu / rouge-score."""

import pytest
import sacrebleu
from hypothesis import given, settings
from hypothesis import strategies as st
from rouge_score import rouge_scorer
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

from evaluation.lib.metrics.text import bleu_tokens, rouge_l_f1, rouge_tokens, sentence_bleu4

ROUGE = rouge_scorer.RougeScorer(["rougeL"])
TOKENIZER_13A = Tokenizer13a()


def test_identical_response_scores_one_on_both():
    text = "The Harbor House has incredible crab cakes and easy parking."
    assert sentence_bleu4(text, text) == pytest.approx(1.0)
    assert rouge_l_f1(text, text) == pytest.approx(1.0)


def test_disjoint_response_scores_zero_on_both():
    assert sentence_bleu4("alpha beta gamma", "delta epsilon zeta") == 0.0
    assert rouge_l_f1("alpha beta gamma", "delta epsilon zeta") == 0.0


def test_rouge_l_hand_computed():
    # LCS("the cat on the mat", "the cat sat on the mat") = 5: P = 5/5, R = 5/6, F = 10/11.
    assert rouge_l_f1("the cat on the mat", "the cat sat on the mat") == pytest.approx(10 / 11)


def test_bleu_hand_computed_with_brevity_penalty():
    # Hypothesis "the cat sat on" vs reference "the cat sat on the mat": all 1–4-gram precisions
    # are 1 (4/4, 3/3, 2/2, 1/1), so BLEU = BP = exp(1 - 6/4).
    import math

    assert sentence_bleu4("the cat sat on", "the cat sat on the mat") == pytest.approx(
        math.exp(1 - 6 / 4)
    )


def test_bleu_is_on_a_zero_to_one_scale_equal_to_sacrebleu_over_100():
    hyp = "Try Harbor House: reviewers say the crab cakes were incredible [R1]."
    ref = "I'd suggest Harbor House; one reviewer said the crab cakes were incredible [R2]."
    expected = sacrebleu.sentence_bleu(hyp, [ref]).score / 100
    assert sentence_bleu4(hyp, ref) == pytest.approx(expected, abs=1e-12)
    assert 0.0 < sentence_bleu4(hyp, ref) < 1.0


def test_empty_texts_score_zero():
    assert sentence_bleu4("", "something") == 0.0
    assert rouge_l_f1("", "something") == 0.0
    assert rouge_l_f1("something", "") == 0.0


# Characters chosen to hit every branch of the 13a rules (periods, commas, digits, hyphens,
# escaped entities, symbols) and rouge-score's alphanumeric filter.
_pieces = list("ab Z1 9.,-&;:'\"/{}~[]`()+@é\n\t") + [
    "&amp;",
    "&quot;",
    "<skipped>",
    "-\n",
    "1.5",
    "9-",
    "..",
    ",,",
]
_tricky = st.lists(st.sampled_from(_pieces), max_size=40).map("".join)


@settings(max_examples=400)
@given(_tricky)
def test_13a_tokenization_matches_sacrebleu(line):
    assert bleu_tokens(line) == tuple(TOKENIZER_13A(line.rstrip()).split())


@settings(max_examples=300)
@given(_tricky, _tricky)
def test_bleu_matches_sacrebleu_sentence_bleu(hyp, ref):
    expected = sacrebleu.sentence_bleu(hyp, [ref]).score / 100
    assert sentence_bleu4(hyp, ref) == pytest.approx(expected, abs=1e-12)


@settings(max_examples=300)
@given(_tricky, _tricky)
def test_rouge_l_matches_rouge_score(hyp, ref):
    assert rouge_tokens(hyp) == tuple(ROUGE._tokenizer.tokenize(hyp))
    expected = ROUGE.score(ref, hyp)["rougeL"].fmeasure
    assert rouge_l_f1(hyp, ref) == pytest.approx(expected, abs=1e-12)
