"""The built-in server's regular-expression engine (evaluation/lib/llm/local_regex.py): it
matches exactly what Python's `re.fullmatch` matches, and the tokens it allows after a state
are only tokens that keep the answer matchable, with always a way on."""

from __future__ import annotations

import random
import re

import pytest

from evaluation.lib.llm.core_factors import FACTOR_FORMAT
from evaluation.lib.llm.face.aspects import ASPECTS
from evaluation.lib.llm.face.prompts import DECOMPOSITION_FORMAT, score_format
from evaluation.lib.llm.local_regex import RegexTokens, UnsupportedPattern, compiled
from evaluation.lib.llm.trace_judge import ANSWER_FORMAT as TRACE_FORMAT

SMALL = [r"a{2,4}b", r"(?:ab|cd){1,3}x*", r"[^<>]{0,5}<t>(?:1|2)</t>\s{0,2}",
         r"[^`]{0,4}Score: (?:2|1|0)\s{0,2}", r"x(?:y|z)?\d+", r"[a-c]{0,3}(?:b|bc)c"]
ALPHABET = "abcdx<>/t12 Score:`y9"


@pytest.mark.parametrize("pattern", SMALL)
def test_it_matches_exactly_what_re_matches_on_random_strings(pattern):
    program, rng = compiled(pattern), random.Random(7)
    for _ in range(4000):
        text = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 14)))
        assert program.fullmatch(text) == (re.fullmatch(pattern, text, re.DOTALL) is not None)


def test_the_declared_formats_compile_linearly_and_match_their_examples():
    examples = {TRACE_FORMAT.regex: "Short.\n" + "".join(
                    f"<{c}>4</{c}>\n" for c in ("relevance", "informativeness",
                                                "grounding_quality", "natural_flow",
                                                "justification")),
                FACTOR_FORMAT.regex: "Two turns.\n<rating>2</rating>",
                score_format(ASPECTS["relevance"]).regex: "Fits.\nScore: 2",
                DECOMPOSITION_FORMAT.regex: 'One.\n```json\n[{"dialogue_act":"others",'
                                            '"mention":"Hi","user_feedback":""}]\n```'}
    for pattern, example in examples.items():
        program = compiled(pattern)
        assert program.fullmatch(example) and re.fullmatch(pattern, example, re.DOTALL)
        assert not program.fullmatch(example + "`<>")
        assert len(program.code) < 8 * len(pattern) + 10_000  # unrolled, not determinised


def test_allowed_tokens_keep_the_answer_matchable_and_always_leave_a_way_on():
    pattern = r"[^<>]{0,6}<r>(?:1|2)</r>\s{0,2}"
    # Every character of the pattern is also a token alone (as in a byte-level vocabulary).
    vocabulary = ["a", "ab", "abcdefg", " x", "<", "<r", ">", "r>", "1", "2", "3", "</r>",
                  "</", "b<r>1", "\n", "<r>2</r>", "/", "r"]
    tokens = RegexTokens(compiled(pattern), list(enumerate(vocabulary)), end=99,
                         vocab_size=100)
    program, rng = tokens.program, random.Random(3)
    for _ in range(300):  # random walks through the allowed tokens
        state, text = program.start, ""
        while True:
            allowed = tokens.allowed(state)
            assert allowed, f"stuck after {text!r}"
            choice = rng.choice(allowed)
            if choice == 99:
                break
            text += vocabulary[choice]
            state = program.feed(state, vocabulary[choice])
            assert state, f"{text!r} left the pattern"
        assert re.fullmatch(pattern, text, re.DOTALL), text
    start = set(tokens.allowed(program.start))
    assert vocabulary.index("abcdefg") not in start  # longer than the 6 reasoning characters
    assert vocabulary.index("b<r>1") in start and vocabulary.index("3") in start
    assert vocabulary.index(">") not in start and 99 not in start


def test_patterns_it_cannot_run_are_refused():
    for pattern in (r"^a", r"(a)\1", r"(?=a)a", "("):
        with pytest.raises(UnsupportedPattern):
            compiled(pattern)
