"""Token budget of CoRE on a realistic log (Appendix E, Tables 20 and 21).

The prompts are the real ones; the scripted server counts them with a GPT-4-class BPE
(cl100k_base, bundled with litellm, so no download). Answers are scripted at lengths close to
CoRE's averages (≈ 380 output tokens per factor, ≈ 150 per debate statement), so the output
side is an assumption and the input side is a measurement. CoRE reports ≈ 21k tokens per log
for the twelve factors and ≈ 51k for a four-round debate.

Run with ``-s`` to print the figures.
"""

from __future__ import annotations

import json

from evaluation.lib.llm.core_debate import run_debate
from evaluation.lib.llm.core_factors import score_factors
from evaluation.lib.llm.core_rubrics import DEBATE_ROLES
from evaluation.lib.llm.gateway import UsageMeter
from tests.evaluation.llm.helpers import config_for, debate_role_and_round, factor_name
from tests.evaluation.llm.sample_logs import ITEM_NAMES, REALISTIC_LOG

FACTOR_ANSWER_WORDS = 280  # ≈ 380 BPE tokens of English reasoning
STATEMENT_WORDS = 110  # ≈ 150 BPE tokens


def bpe_tokens(text: str) -> int:
    # litellm's own tokenizer, imported here: litellm takes seconds to import at collection
    from litellm.litellm_core_utils.default_encoding import encoding

    return len(encoding.encode(text))


def prose(words: int, topic: str) -> str:
    sentence = (
        f"Looking at the {topic}, the system turn addresses the user's request about ocean "
        "films, but one reply drifts from what was asked, so I count it as a miss."
    )
    out: list[str] = []
    while len(out) < words:
        out.extend(sentence.split())
    return " ".join(out[:words])


def factor_answer(request) -> str:
    name = factor_name(request)
    return f"{prose(FACTOR_ANSWER_WORDS, name)}\n<rating>3</rating>"


def debate_answer(request) -> str:
    role, number = debate_role_and_round(request)
    # Scores that never converge, so all four rounds run (CoRE's worst case).
    score = {"Common User": 40, "Domain Expert": 55, "Linguist": 70, "HCI Expert": 20}[role]
    statement = prose(STATEMENT_WORDS, f"{role} view in round {number}")
    return json.dumps({"evaluator": role, "statement": statement, "score": score + number})


def test_tokens_per_log_for_twelve_factors_and_a_four_round_debate(llm_server, gateway):
    factors_server = llm_server(factor_answer, token_counter=bpe_tokens)
    debate_server = llm_server(debate_answer, token_counter=bpe_tokens)
    factor_meter, debate_meter = UsageMeter(), UsageMeter()

    results = score_factors(
        REALISTIC_LOG,
        gateway=gateway,
        config=config_for(factors_server),
        item_names=ITEM_NAMES,
        meter=factor_meter,
    )
    debate = run_debate(
        REALISTIC_LOG,
        results,
        gateway=gateway,
        config=config_for(debate_server),
        item_names=ITEM_NAMES,
        meter=debate_meter,
    )

    # Accounting: the meters hold exactly what the servers reported.
    for meter, server in ((factor_meter, factors_server), (debate_meter, debate_server)):
        served = server.usage_totals()
        assert (meter.prompt_tokens, meter.completion_tokens) == (
            served["prompt_tokens"],
            served["completion_tokens"],
        )
    assert factors_server.request_count == 12 and debate_server.request_count == 16
    assert len(debate.rounds) == 4

    per_round_input = {}
    for request in debate_server.requests:
        role, number = debate_role_and_round(request)
        if role == DEBATE_ROLES[0].name:
            per_round_input[number] = sum(bpe_tokens(m["content"]) for m in request.messages)

    print(
        "\nCoRE token budget on a 12-turn log (10 rated turns), cl100k_base tokens:"
        f"\n  12 factors: input {factor_meter.prompt_tokens}, output "
        f"{factor_meter.completion_tokens}, total {factor_meter.total_tokens}"
        f"\n  debate (4 rounds x 4 roles): input {debate_meter.prompt_tokens}, output "
        f"{debate_meter.completion_tokens}, total {debate_meter.total_tokens}"
        f"\n  Common User input per round: {per_round_input}"
    )
    # Sanity bands around what a ~1k-token log should cost (seed: ~21k and ~51k tokens).
    assert 8_000 < factor_meter.total_tokens < 40_000
    assert 15_000 < debate_meter.total_tokens < 80_000
    increments = [per_round_input[n + 1] - per_round_input[n] for n in (2, 3)]
    assert abs(increments[0] - increments[1]) <= 20  # linear growth per round
