"""CoRE multi-agent debate (§4.2): stopping rules, final score, records, prompt growth."""

from __future__ import annotations

import itertools
import json

import pytest

from evaluation.lib.llm.core_debate import (
    DebateResult,
    DebateRound,
    DebateSettings,
    DebateTurn,
    agreement_curve,
    build_debate_messages,
    run_debate,
)
from evaluation.lib.llm.core_factors import FactorResult
from evaluation.lib.llm.core_rubrics import DEBATE_ROLES, FACTOR_GUIDELINES
from tests.evaluation.llm.helpers import config_for, debate_role_and_round
from tests.evaluation.llm.sample_logs import ITEM_NAMES, REALISTIC_LOG

ROLE_NAMES = [role.name for role in DEBATE_ROLES]

FACTOR_RESULTS = {
    g.key: FactorResult(
        factor=g.key,
        score=(i % 4) + 1,
        rationale=f"Rationale for {g.name}: evidence {i}.",
        failure=None,
        attempts=1,
        model="openai/scripted-judge",
    )
    for i, g in enumerate(FACTOR_GUIDELINES)
}


def answer(name: str, score, statement: str = "") -> str:
    statement = statement or f"{name} thinks the system deserves {score}."
    return json.dumps({"evaluator": name, "statement": statement, "score": score})


def scripted_debate(scores_by_round: dict[int, dict[str, int]]):
    """A script answering each (role, round) with the given score (last round repeats)."""

    def script(request):
        role, number = debate_role_and_round(request)
        scores = scores_by_round[min(number, max(scores_by_round))]
        return answer(role, scores[role])

    return script


def scores(*values: int) -> dict[str, int]:
    return dict(zip(ROLE_NAMES, values, strict=True))


def debate(server, gateway, settings: DebateSettings | None = None) -> DebateResult:
    return run_debate(
        REALISTIC_LOG,
        FACTOR_RESULTS,
        gateway=gateway,
        config=config_for(server),
        settings=settings or DebateSettings(),
        item_names=ITEM_NAMES,
    )


def test_unanimity_in_round_two_stops_the_debate(llm_server, gateway):
    server = llm_server(scripted_debate({1: scores(60, 70, 80, 50), 2: scores(70, 70, 70, 70)}))

    result = debate(server, gateway)

    assert [r.round for r in result.rounds] == [1, 2]
    assert server.request_count == 8
    assert result.stopped == "agreement" and result.final_score == 70
    assert [r.agreed for r in result.rounds] == [False, True]
    assert result.rounds[0].spread == 30


def test_unanimity_in_round_one_needs_no_discussion(llm_server, gateway):
    server = llm_server(scripted_debate({1: scores(55, 55, 55, 55)}))

    result = debate(server, gateway)

    assert len(result.rounds) == 1 and server.request_count == 4
    assert result.final_score == 55


def test_persistent_disagreement_runs_four_rounds_and_averages_the_last_scores(llm_server, gateway):
    server = llm_server(
        scripted_debate(
            {
                1: scores(20, 40, 90, 0),
                2: scores(30, 40, 70, 0),
                3: scores(35, 40, 55, 0),
                4: scores(40, 41, 50, 0),
            }
        )
    )

    result = debate(server, gateway)

    assert len(result.rounds) == 4 and server.request_count == 16
    assert result.stopped == "max_rounds"
    assert result.final_score == pytest.approx((40 + 41 + 50 + 0) / 4)
    assert result.role_scores == {
        "common_user": 40,
        "domain_expert": 41,
        "linguist": 50,
        "hci_expert": 0,
    }


def test_a_tolerance_turns_close_scores_into_agreement(llm_server, gateway):
    server = llm_server(scripted_debate({1: scores(60, 62, 65, 61)}))

    result = debate(server, gateway, DebateSettings(agreement_tolerance=5))

    assert len(result.rounds) == 1 and result.stopped == "agreement"
    assert result.final_score == pytest.approx(62)


def test_every_round_is_recorded_for_the_agreement_chart(llm_server, gateway):
    server = llm_server(scripted_debate({1: scores(60, 70, 80, 50), 2: scores(70, 70, 70, 70)}))

    records = debate(server, gateway).records()

    assert len(records) == 8
    assert records[0] == {
        "round": 1,
        "role": "common_user",
        "score": 60,
        "statement": "Common User thinks the system deserves 60.",
        "failure": None,
        "carried_over": False,
    }
    assert {r["round"] for r in records} == {1, 2}


def test_later_rounds_see_the_earlier_statements_and_round_one_sees_none(llm_server, gateway):
    server = llm_server(scripted_debate({1: scores(60, 70, 80, 50), 2: scores(70, 70, 70, 70)}))

    debate(server, gateway)

    by_round = {}
    for request in server.requests:
        by_round.setdefault(debate_role_and_round(request)[1], []).append(request.prompt_text)
    assert all("<discussion>" not in prompt for prompt in by_round[1])
    for prompt in by_round[2]:
        for name, score in scores(60, 70, 80, 50).items():
            assert f"{name} thinks the system deserves {score}." in prompt


def _prompt(role, settings: DebateSettings | None = None) -> str:
    return "\n".join(
        m["content"]
        for m in build_debate_messages(
            REALISTIC_LOG, FACTOR_RESULTS, role, round_number=1,
            settings=settings or DebateSettings(),
        )
    )


def test_by_default_each_role_sees_only_its_own_factors_scores_and_reasons_as_published():
    # CoRE §4.2, Round 1: "the factor-wise scores and corresponding reasons relevant to their
    # interests"; Fig. 1: "inputs corresponding to the specific factors associated with its role".
    for role in DEBATE_ROLES:
        prompt = _prompt(role)
        shown = [g for g in FACTOR_GUIDELINES if f'"factor": "{g.name}"' in prompt]
        assert [g.key for g in shown] == [g.key for g in FACTOR_GUIDELINES if g.key in role.focus]
        assert len(shown) == 3
        for guideline in shown:
            result = FACTOR_RESULTS[guideline.key]
            assert (
                f'{{"factor": "{guideline.name}", "score": {result.score}, '
                f'"reason": "{result.rationale}"}}' in prompt
            )
        others = [g for g in FACTOR_GUIDELINES if g.key not in role.focus]
        assert not any(f"Rationale for {g.name}:" in prompt for g in others)
        assert '"yours"' not in prompt and "factors you are responsible for" in prompt


def test_the_all_scores_variant_gives_every_score_and_the_reasons_of_the_own_factors():
    role = DEBATE_ROLES[2]  # the linguist
    prompt = _prompt(role, DebateSettings(factor_view="all_scores"))

    assert "YOUR ROLE: Linguist" in prompt
    assert "That is Finding Nemo (2003)!" in prompt
    for guideline in FACTOR_GUIDELINES:
        assert f'"factor": "{guideline.name}"' in prompt
        has_rationale = f"Rationale for {guideline.name}:" in prompt
        assert has_rationale == (guideline.key in role.focus)
    assert '"factor": "Naturalness", "yours": true' in prompt


def test_an_unknown_factor_view_is_refused():
    with pytest.raises(ValueError, match="unknown debate factor view 'everything'"):
        DebateSettings(factor_view="everything")


def test_malformed_replies_are_reasked_and_a_failed_role_keeps_its_previous_score(
    llm_server, gateway
):
    def script(request):
        role, number = debate_role_and_round(request)
        if role == "Linguist" and number == 2:
            return "I refuse to answer in JSON."
        return answer(role, {1: 50, 2: 60, 3: 60, 4: 60}[number] if role != "Linguist" else 80)

    server = llm_server(script)

    result = debate(server, gateway)

    linguist_round2 = next(t for t in result.rounds[1].turns if t.role == "linguist")
    assert linguist_round2.carried_over and linguist_round2.score == 80
    assert "unparseable after 3 answers" in linguist_round2.failure
    assert linguist_round2.answer == "I refuse to answer in JSON."  # kept, like a failed factor
    assert linguist_round2.statement == ""  # never shown to the other roles
    assert len(result.rounds) == 4  # 60, 60, 60 vs the linguist's 80: no agreement
    assert result.final_score == pytest.approx((60 * 3 + 80) / 4)


def test_a_role_without_any_usable_score_fails_the_debate(llm_server, gateway):
    def script(request):
        role, _ = debate_role_and_round(request)
        return "no json" if role == "HCI Expert" else answer(role, 50)

    server = llm_server(script)

    result = debate(server, gateway)

    assert result.stopped == "failure" and result.final_score is None
    assert "hci_expert" in result.failure
    assert server.request_count == 3 + 3  # three roles answered; the HCI expert was asked 3×


@pytest.mark.parametrize(
    "reply",
    [
        '{"evaluator": "Linguist", "statement": "fine", "score": 101}',
        '{"evaluator": "Linguist", "statement": "", "score": 50}',
        '{"evaluator": "Linguist", "statement": "fine", "score": "high"}',
        "score: 50",
    ],
)
def test_bad_debate_replies_are_rejected(reply):
    from evaluation.lib.llm.core_debate import parse_debate_reply

    assert not parse_debate_reply(reply).ok


def test_debate_replies_in_code_fences_with_string_scores_are_accepted():
    from evaluation.lib.llm.core_debate import parse_debate_reply

    parsed = parse_debate_reply('Sure:\n```json\n{"statement": "ok", "score": "30"}\n```')
    assert parsed.ok and parsed.value.score == 30


# --- prompt growth -----------------------------------------------------------------------------


def prompt_sizes(settings: DebateSettings, statement: str) -> list[int]:
    """User-prompt length of the Common User in rounds 1..4 with fixed-size statements."""
    role = DEBATE_ROLES[0]
    discussion: list[tuple[DebateTurn, ...]] = []
    sizes = []
    for number in range(1, 5):
        messages = build_debate_messages(
            REALISTIC_LOG,
            FACTOR_RESULTS,
            role,
            round_number=number,
            discussion=discussion,
            settings=settings,
        )
        sizes.append(len(messages[1]["content"]))
        discussion.append(tuple(DebateTurn(number, r.key, 50, statement) for r in DEBATE_ROLES))
    return sizes


def test_with_all_rounds_in_the_buffer_the_prompt_grows_linearly_with_the_round():
    sizes = prompt_sizes(DebateSettings(buffer="all_rounds"), "x" * 400)

    increments = [later - earlier for earlier, later in itertools.pairwise(sizes)]
    # Each round adds the same four statements: constant increments mean linear growth.
    assert increments[1] == increments[2] > 0
    # Round 2 also opens the <discussion> block and swaps in the longer later-round instruction.
    assert increments[1] < increments[0] <= increments[1] + 400


def test_statements_are_clipped_so_one_round_adds_a_bounded_amount():
    settings = DebateSettings(buffer="all_rounds", max_statement_chars=500)
    sizes = prompt_sizes(settings, "y" * 20_000)

    per_round = sizes[3] - sizes[2]
    assert per_round <= 4 * (500 + 120)  # four clipped statements plus their JSON framing


def test_with_the_latest_round_only_the_prompt_stops_growing():
    sizes = prompt_sizes(DebateSettings(buffer="latest_round"), "z" * 400)
    assert sizes[1] == sizes[2] == sizes[3]


def test_the_debate_prompt_grows_linearly_over_http(llm_server, gateway):
    server = llm_server(scripted_debate({1: scores(20, 40, 90, 0)}))

    debate(server, gateway)

    sizes = {}
    for request in server.requests:
        role, number = debate_role_and_round(request)
        if role == "Common User":
            sizes[number] = len(request.prompt_text)
    increments = [sizes[n + 1] - sizes[n] for n in (1, 2, 3)]
    assert increments[1] == increments[2]


# --- agreement curve ---------------------------------------------------------------------------


def _debate_with(*rounds_scores: tuple[int, int, int, int]) -> DebateResult:
    rounds = []
    for number, values in enumerate(rounds_scores, start=1):
        turns = tuple(
            DebateTurn(number, role.key, v, "s")
            for role, v in zip(DEBATE_ROLES, values, strict=True)
        )
        rounds.append(DebateRound(number, turns, len(set(values)) == 1, max(values) - min(values)))
    return DebateResult(tuple(rounds), None, "max_rounds")


def test_agreement_curve_counts_all_and_major_agreement_per_round():
    early = _debate_with((50, 60, 70, 80), (60, 60, 60, 60))  # unanimous from round 2
    majority = _debate_with((10, 20, 30, 40), (30, 30, 30, 0), (30, 30, 30, 0), (30, 30, 30, 0))

    curve = agreement_curve([early, majority])

    assert [point["all_agree"] for point in curve] == [0.0, 0.5, 0.5, 0.5]
    assert [point["major_agree"] for point in curve] == [0.0, 1.0, 1.0, 1.0]
