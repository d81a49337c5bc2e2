"""The demo's entrant with loosened quotes and its simulated annotators (pure code)."""

import random

from evaluation.lib.demo import annotators, loose_quotes
from evaluation.lib.metrics.grounding import best_match, quote_core
from evaluation.lib.metrics.quotes import extract_quotes

REVIEW = ("The patio is quiet in the evening and the staff are friendly. "
          "Parking is easy on weekdays but tight on Saturdays.")
OTHER = "The rooftop bar serves cocktails until midnight every day."
LINE = {"dialogue_id": "d1", "turn_index": 2, "ranked_item_ids": ["i1"],
        "response": 'I recommend Casa. One visitor wrote "The patio is quiet in the evening and '
                    'the staff are friendly" [R1], and another said "Parking is easy on '
                    'weekdays but tight on Saturdays" [R2].',
        "citations": [{"label": "R1", "review_id": "r1",
                       "quote": "The patio is quiet in the evening and the staff are friendly"},
                      {"label": "R2", "review_id": "r1",
                       "quote": "Parking is easy on weekdays but tight on Saturdays"}]}


def _gs(line, reviews):
    cited = {c["label"]: reviews[c["review_id"]] for c in line["citations"]}
    quotes = extract_quotes(line["response"])
    return [best_match(quote_core(q.text), [cited[q.label]])[0] >= 80 for q in quotes]


def test_misattributed_quotes_fail_grounding_and_the_line_claims_what_it_shows():
    out, counts = loose_quotes.loosen([LINE] * 200, [OTHER], seed=1)
    assert counts[loose_quotes.MISATTRIBUTED] > 0 and counts[loose_quotes.VERBATIM] > 0
    reviews = {"r1": REVIEW}
    for line in out:
        shown = [q.text for q in extract_quotes(line["response"])]
        assert shown == [c["quote"] for c in line["citations"]]  # text and citations agree
        for quote, grounded in zip(shown, _gs(line, reviews), strict=True):
            if quote == OTHER:
                assert not grounded
            if quote in REVIEW:
                assert grounded
    rate = sum(not ok for line in out for ok in _gs(line, reviews)) / (2 * len(out))
    assert 0.1 < rate < 0.5  # about the misattributed share plus the reworded that fail
    assert loose_quotes.loosen([LINE] * 50, [OTHER], seed=1) == loose_quotes.loosen(
        [LINE] * 50, [OTHER], seed=1)


def test_reword_keeps_most_words_but_is_no_longer_verbatim():
    rng = random.Random(3)
    quote = "The patio is quiet in the evening and the staff are friendly"
    new = loose_quotes.reword(quote, rng)
    assert new != quote and len(new.split()) == len(quote.split()) - 1
    assert annotators.quote_verdict(new, REVIEW) == annotators.PARTIAL
    assert loose_quotes.reword("too short", rng) == "too short"


def test_quote_verdicts_read_the_cited_review():
    assert annotators.quote_verdict("the PATIO is quiet  in the evening", REVIEW) == \
        annotators.SUPPORTED
    assert annotators.quote_verdict(OTHER, REVIEW) == annotators.NOT_SUPPORTED
    assert annotators.quote_verdict("anything", None) == annotators.NOT_SUPPORTED


def test_a_careful_annotator_rates_the_faithful_right_answer_above_a_misquoting_wrong_one():
    careful = annotators.Annotator("a", slip=0.0, noise=0.0)
    good = annotators.judge(careful, response=LINE["response"], cited={"R1": REVIEW,
                            "R2": REVIEW}, gold_names=["Casa"], rng=random.Random(0))
    assert good == annotators.Judgement(("supported", "supported"), 5, 4)
    bad_text = LINE["response"].replace("Casa", "Elsewhere").replace(
        "Parking is easy on weekdays but tight on Saturdays", OTHER)
    bad = annotators.judge(careful, response=bad_text, cited={"R1": REVIEW, "R2": REVIEW},
                           gold_names=["Casa"], rng=random.Random(0))
    assert bad == annotators.Judgement(("supported", "not_supported"), 2, 2)
    unquoted = annotators.judge(careful, response="I recommend Casa.", cited={},
                                gold_names=["Casa"], rng=random.Random(0))
    assert unquoted == annotators.Judgement((), 3, 3)


def test_slips_and_noise_are_seeded_and_stay_on_the_scale():
    noisy = annotators.Annotator("n", slip=0.5, noise=3.0, leniency=1.0)
    runs = [annotators.judge(noisy, response=LINE["response"], cited={"R1": REVIEW},
                             gold_names=[], rng=random.Random(seed)) for seed in range(50)]
    assert all(1 <= j.informativeness <= 5 and 1 <= j.naturalness <= 5 for j in runs)
    assert len({j.verdicts for j in runs}) > 1  # slips happen
    assert runs[7] == annotators.judge(noisy, response=LINE["response"], cited={"R1": REVIEW},
                                       gold_names=[], rng=random.Random(7))
