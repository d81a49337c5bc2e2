"""Quote and label extraction (Trace grounding input)."""

from hypothesis import given
from hypothesis import strategies as st

from evaluation.lib.metrics.quotes import (
    extract_labels,
    extract_quotes,
    scan,
    strip_labels,
    unattached_labels,
)


def test_straight_quote_with_label_is_extracted_with_offsets():
    text = 'Go to Luigi\'s: "the crab cakes were incredible" [R2].'
    [quote] = extract_quotes(text)
    assert quote.text == "the crab cakes were incredible"
    assert text[quote.start : quote.end] == quote.text
    assert quote.label == "R2"
    assert quote.labels == ("R2",)


def test_curly_quote_with_label_is_extracted():
    text = "One guest wrote “lovely rooftop bar” [R1] last May."
    [quote] = extract_quotes(text)
    assert quote.text == "lovely rooftop bar"
    assert quote.label == "R1"
    assert text[quote.start : quote.end] == "lovely rooftop bar"


def test_mixed_curly_and_straight_marks_still_pair():
    [quote] = extract_quotes('A guest said “friendly staff" [R3].')
    assert (quote.text, quote.label) == ("friendly staff", "R3")


def test_quote_without_label_has_none():
    [quote] = extract_quotes('People call it "the best brunch in town" and I agree.')
    assert quote.label is None
    assert quote.labels == ()


def test_label_without_quote_is_reported_as_unattached():
    text = 'Great views [R4]. Also "quiet rooms" [R5].'
    labels = extract_labels(text)
    assert [(m.label, m.attached) for m in labels] == [("R4", False), ("R5", True)]
    assert [m.label for m in unattached_labels(text)] == ["R4"]
    assert text[labels[0].start : labels[0].end] == "[R4]"


def test_commas_apostrophes_and_periods_stay_inside_the_quote():
    text = 'She wrote "It\'s loud, crowded, and worth it." [R1] Then left.'
    [quote] = extract_quotes(text)
    assert quote.text == "It's loud, crowded, and worth it."
    assert quote.label == "R1"


def test_quote_ending_with_period_inside_mark_keeps_label():
    [quote] = extract_quotes('Reviewers agree: "Best tacos ever." [R7]')
    assert quote.text == "Best tacos ever."
    assert quote.label == "R7"


def test_empty_and_blank_quotes_are_ignored_and_their_labels_count_as_unattached():
    text = 'He said "" and " " and "..." [R1] then left.'
    assert extract_quotes(text) == []
    assert [(m.label, m.attached) for m in extract_labels(text)] == [("R1", False)]


def test_several_quotes_are_returned_in_order_with_their_own_labels():
    text = '"fresh oysters" [R1], "slow service" [R2] and "great wine" [R3]'
    assert [(q.text, q.label) for q in extract_quotes(text)] == [
        ("fresh oysters", "R1"),
        ("slow service", "R2"),
        ("great wine", "R3"),
    ]


def test_multiple_labels_attach_in_one_or_several_brackets():
    one = extract_quotes('"cozy lobby" [R1, R2]')[0]
    several = extract_quotes('"cozy lobby" [R1][R2]')[0]
    assert one.labels == ("R1", "R2")
    assert several.labels == ("R1", "R2")


def test_label_inside_closing_mark_attaches_and_is_not_part_of_the_text():
    text = 'They loved "the garden patio [R6]" a lot.'
    [quote] = extract_quotes(text)
    assert quote.text == "the garden patio"
    assert quote.label == "R6"
    assert text[quote.start : quote.end] == "the garden patio"
    assert extract_labels(text)[0].attached


def test_label_separated_by_words_is_not_attached():
    [quote] = extract_quotes('"great pool" said one guest [R2]')
    assert quote.label is None
    assert [m.attached for m in extract_labels('"great pool" said one guest [R2]')] == [False]


def test_single_quotes_are_not_quotes():
    assert extract_quotes("The 'best' pizza, as one guest's review says [R1].") == []


def test_blank_padding_inside_marks_is_trimmed_from_text_and_offsets():
    text = 'Said "  nice view  " [R1]'
    [quote] = extract_quotes(text)
    assert quote.text == "nice view"
    assert text[quote.start : quote.end] == "nice view"


def test_multiline_response_keeps_offsets():
    text = 'Option A:\n- "friendly staff" [R1]\n- "clean rooms" [R2]\n'
    quotes = extract_quotes(text)
    assert [text[q.start : q.end] for q in quotes] == ["friendly staff", "clean rooms"]


def test_scan_returns_quotes_and_labels_together():
    quotes, labels = scan('"a b c" [R1] and [R2]')
    assert [q.text for q in quotes] == ["a b c"]
    assert [(m.label, m.attached) for m in labels] == [("R1", True), ("R2", False)]


def test_strip_labels_removes_brackets_only():
    assert strip_labels('Nice "view" [R1] and pool [R2, R3].') == 'Nice "view"  and pool .'


_quote_body = st.text(
    alphabet=st.characters(blacklist_characters='"“”[]', blacklist_categories=("Cs",)),
    min_size=1,
    max_size=30,
).filter(lambda s: any(c.isalnum() for c in s))


@given(
    st.lists(
        st.tuples(_quote_body, st.one_of(st.none(), st.from_regex(r"R[0-9]{1,2}", fullmatch=True))),
        min_size=1,
        max_size=5,
    )
)
def test_offsets_always_point_at_the_quote_text(parts):
    text = " then ".join(f'"{body}"' + (f" [{label}]" if label else "") for body, label in parts)
    quotes = extract_quotes(text)
    assert len(quotes) == len(parts)
    for quote, (body, label) in zip(quotes, parts, strict=True):
        assert text[quote.start : quote.end] == quote.text == body.strip()
        assert quote.label == label
