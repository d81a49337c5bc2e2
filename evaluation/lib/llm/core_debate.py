"""CoRE's multi-agent debate (Chen et al., "Evaluating Conversational Recommender Systems with
Large Language Models: A User-Centric Evaluation Framework", §4.2 and Appendix H).

Four roles debate a 0–100 "how likely would you use this system" score from the twelve factor
scores (``core_factors``); the debate stops when all agree or after four rounds (§6.5), and the
final score is the mean of the roles' last scores.
"""

from __future__ import annotations

import functools
import json
import math
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evaluation.lib.llm.answer_format import AnswerFormat
from evaluation.lib.llm.conversation import ConversationLog, as_log, render_log
from evaluation.lib.llm.core_factors import FactorResult
from evaluation.lib.llm.core_rubrics import DEBATE_ROLES, FACTOR_GUIDELINES, DebateRole
from evaluation.lib.llm.gateway import LLMGateway, ModelConfig, UsageMeter
from evaluation.lib.llm.judging import (
    DEFAULT_MAX_REASKS,
    Parsed,
    ask_until_parsed,
    json_answer,
)

DEBATE_SCORE_RANGE = (0, 100)

# What each role sees of the factor results (``DebateSettings.factor_view``), with the text the
# run page prints for it.
FACTOR_VIEWS = {
    "own_factors": "each role sees only its own three factors' scores and reasons (as published)",
    "all_scores": "each role sees all twelve scores and its own factors' reasons (variant)",
}


def stored_factor_view(debate_config: Mapping[str, Any]) -> str:
    """The factor view a run's stored debate config used; configs written before the setting
    existed (issue 30) had every role see all scores."""
    return str(debate_config.get("factor_view") or "all_scores")


@dataclass(frozen=True)
class DebateSettings:
    """How the debate runs.

    ``agreement_tolerance``: the roles agree when max(score) − min(score) ≤ tolerance. The CoRE
    paper stops only when "all roles provide the same score", i.e. tolerance 0 (the default).

    ``buffer``: what later rounds see of the discussion.
    - ``"all_rounds"`` (default, as in CoRE): every earlier round's four statements.
      The prompt of round r holds r − 1 rounds, so its size grows linearly with r (the paper's
      Table 21 shows the same growth); each statement is cut to ``max_statement_chars``, which
      bounds the growth per round by 4 × that cap.
    - ``"latest_round"``: only the previous round's statements; constant prompt size.

    ``factor_view``: which factor results a role sees (recorded in the run's config).
    - ``"own_factors"`` (default, as published): each role gets the scores and reasons of its own
      three factors only — CoRE §4.2, Round 1: "We provide each role with the factor-wise scores
      and corresponding reasons relevant to their interests"; Fig. 1: "each agent receives inputs
      corresponding to the specific factors associated with its designated role".
    - ``"all_scores"``: a variant (Concord's form before issue 30): all twelve scores go to every
      role, the reasons only for its own factors. Kept to reproduce earlier runs and to study
      whether seeing the other factors moves the roles towards each other.
    """

    max_rounds: int = 4
    agreement_tolerance: float = 0.0
    buffer: str = "all_rounds"
    max_statement_chars: int = 1500
    max_rationale_chars: int = 1500
    domain: str = "films and books"
    max_reasks: int = DEFAULT_MAX_REASKS
    factor_view: str = "own_factors"

    def __post_init__(self) -> None:
        if self.buffer not in ("all_rounds", "latest_round"):
            raise ValueError(f"unknown debate buffer mode {self.buffer!r}")
        if self.factor_view not in FACTOR_VIEWS:
            raise ValueError(
                f"unknown debate factor view {self.factor_view!r}; "
                f"choose one of {', '.join(FACTOR_VIEWS)}"
            )
        if self.max_rounds < 1:
            raise ValueError("max_rounds must be at least 1")


@dataclass(frozen=True)
class DebateTurn:
    round: int
    role: str
    score: float | None
    statement: str
    failure: str | None = None
    # True when this round's answer was unusable and the role's previous score stands in for it
    # (recorded, so the chart and the final score never hide a failed turn).
    carried_over: bool = False
    attempts: int = 1
    # A failed turn's last answer, so a reader sees why it was unusable (as for a failed factor);
    # never shown to the other roles, whose discussion has only usable statements.
    answer: str = ""


@dataclass(frozen=True)
class DebateRound:
    round: int
    turns: tuple[DebateTurn, ...]
    agreed: bool
    spread: float | None


@dataclass(frozen=True)
class DebateResult:
    rounds: tuple[DebateRound, ...]
    final_score: float | None
    stopped: str  # "agreement", "max_rounds" or "failure"
    failure: str | None = None
    role_scores: Mapping[str, float] = field(default_factory=dict)

    def records(self) -> list[dict[str, Any]]:
        """One row per (round, role): the data behind the "agreement over rounds" chart."""
        return [
            {
                "round": turn.round,
                "role": turn.role,
                "score": turn.score,
                "statement": turn.statement,
                "failure": turn.failure,
                "carried_over": turn.carried_over,
            }
            for debate_round in self.rounds
            for turn in debate_round.turns
        ]

    @classmethod
    def from_records(
        cls,
        records: Iterable[Mapping[str, Any]],
        *,
        final_score: float | None = None,
        stopped: str = "",
        failure: str | None = None,
        tolerance: float = 0.0,
    ) -> DebateResult:
        """A stored debate back from ``records()`` rows (any order), with each round's spread
        and agreement recomputed from the roles' latest scores."""
        by_round: dict[int, list[DebateTurn]] = {}
        for row in records:
            by_round.setdefault(int(row["round"]), []).append(
                DebateTurn(
                    int(row["round"]),
                    str(row["role"]),
                    row.get("score"),
                    row.get("statement") or "",
                    row.get("failure") or None,
                    bool(row.get("carried_over")),
                    int(row.get("attempts") or 1),
                )
            )
        rounds, latest = [], {}
        for number in sorted(by_round):
            turns = tuple(by_round[number])
            latest.update({t.role: float(t.score) for t in turns if t.score is not None})
            complete = all(t.score is not None for t in turns) and latest
            spread = max(latest.values()) - min(latest.values()) if complete else None
            agreed = spread is not None and spread <= tolerance
            rounds.append(DebateRound(number, turns, agreed=agreed, spread=spread))
        return cls(tuple(rounds), final_score, stopped, failure, latest)


_DEBATE_TASK = """\
Several evaluators, you among them, have examined a conversational recommender system. {report}

Together you must settle on an overall score from 0 to 100 saying how likely you would be to use \
this system: 0 means you would never use it in any situation, 100 means it would always be your \
first choice. Weigh the factors as your background and expertise suggest, and explain how they \
affect your willingness to use the system.

The conversation is shown below. Its <history> part is earlier context only; the system is judged \
on its <system> turns in the <interaction> part."""

_REPORT_TEXT = {
    "own_factors": "The evaluation report in <evaluation_result> gives the factors you are "
    "responsible for a score from 0 (worst) to 4 (best) with its reason.",
    "all_scores": "The evaluation report in <evaluation_result> gives each factor a score from 0 "
    "(worst) to 4 (best); you answer for the factors marked as yours.",
}

_ROUND_ONE = (
    "This is the first round. Give your own overall score and a statement justifying it, from "
    "your perspective."
)

_LATER_ROUND = (
    "This is round {round}. Read your colleagues' statements in <discussion> critically. "
    "Reconsider your score in the light of their arguments and your own priorities; you may keep "
    "or change it. Where the scores differ a lot, argue for your view and try to persuade the "
    "others, addressing them directly. Aim for a consensus, but do not give in without reason."
)

_DEBATE_FORMAT = """\
Reply with a JSON object only, no other text:
{{"evaluator": "{name}", "statement": "<your statement>", "score": <whole number from 0 to 100>}}"""

_DEBATE_REASK = (
    "Your reply could not be used: {problem}. Reply again with only a JSON object with the keys "
    '"evaluator", "statement" (non-empty text) and "score" (a whole number from 0 to 100).'
)


def build_debate_messages(
    log: ConversationLog | Mapping[str, Any],
    factor_results: Mapping[str, FactorResult],
    role: DebateRole,
    *,
    round_number: int,
    discussion: Sequence[Sequence[DebateTurn]] = (),
    settings: DebateSettings = DebateSettings(),
    item_names: Mapping[str, str] | None = None,
) -> list[dict[str, str]]:
    """Messages for one role in one round. ``discussion`` = earlier rounds' turns, oldest first."""
    sections = [
        _DEBATE_TASK.format(report=_REPORT_TEXT[settings.factor_view]),
        render_log(as_log(log), item_names=item_names),
        _render_evaluation_result(factor_results, role, settings),
    ]
    visible = _visible_discussion(discussion, settings)
    if visible:
        sections.append(_render_discussion(visible, settings.max_statement_chars))
    sections.append(_ROUND_ONE if round_number == 1 else _LATER_ROUND.format(round=round_number))
    sections.append(_DEBATE_FORMAT.format(name=role.name))
    system = (
        f"YOUR ROLE: {role.name}\n"
        + role.description.format(domain=settings.domain)
        + "\nYou take part in a discussion with colleagues to evaluate a conversational "
        "recommender system."
    )
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": "\n\n".join(sections)},
    ]


def _visible_discussion(
    discussion: Sequence[Sequence[DebateTurn]], settings: DebateSettings
) -> list[Sequence[DebateTurn]]:
    rounds = list(discussion)
    return rounds[-1:] if settings.buffer == "latest_round" else rounds


def _render_evaluation_result(
    results: Mapping[str, FactorResult], role: DebateRole, settings: DebateSettings
) -> str:
    # "own_factors" (CoRE §4.2): only the role's own three factors, score and reason.
    # "all_scores" (variant): every score, marked "yours" or not; reasons only for its own.
    own_only = settings.factor_view == "own_factors"
    entries = []
    for guideline in FACTOR_GUIDELINES:
        yours = guideline.key in role.focus
        if own_only and not yours:
            continue
        result = results.get(guideline.key)
        entry: dict[str, Any] = {"factor": guideline.name}
        if not own_only:
            entry["yours"] = yours
        if result is None or result.score is None:
            entry["score"] = None
            entry["note"] = "not available: the evaluation of this factor failed"
        else:
            entry["score"] = result.score
            if yours:
                entry["reason"] = _clip(result.rationale, settings.max_rationale_chars)
        entries.append(entry)
    body = "\n".join(json.dumps(entry, ensure_ascii=False) for entry in entries)
    return f"<evaluation_result>\n{body}\n</evaluation_result>"


def _render_discussion(rounds: Sequence[Sequence[DebateTurn]], max_chars: int) -> str:
    lines = ["<discussion>"]
    for turns in rounds:
        for turn in turns:
            if turn.score is None:
                continue
            entry = {
                "round": turn.round,
                "evaluator": _ROLE_NAMES.get(turn.role, turn.role),
                "statement": _clip(turn.statement, max_chars),
                "score": _plain_number(turn.score),
            }
            lines.append(json.dumps(entry, ensure_ascii=False))
    lines.append("</discussion>")
    return "\n".join(lines)


_ROLE_NAMES = {role.key: role.name for role in DEBATE_ROLES}


def _clip(text: str, max_chars: int) -> str:
    return text if len(text) <= max_chars else text[: max_chars - 1].rstrip() + "…"


def _plain_number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


@dataclass(frozen=True)
class _Statement:
    score: float
    statement: str


STATEMENT_MAX_CHARS = 2000  # CoRE Table 21: about 146 tokens a statement; room for more


def debate_format(role_name: str) -> AnswerFormat:
    """A debate turn's answer as data: one compact JSON object with the role's name, its
    statement and a whole-number score 0–100 (the prompt's `_DEBATE_FORMAT`)."""
    low, high = DEBATE_SCORE_RANGE
    return AnswerFormat(name="core_debate", json_schema={
        "type": "object", "additionalProperties": False,
        "required": ["evaluator", "statement", "score"],
        "properties": {
            "evaluator": {"type": "string", "enum": [role_name]},
            "statement": {"type": "string", "minLength": 1, "maxLength": STATEMENT_MAX_CHARS},
            "score": {"type": "integer", "minimum": int(low), "maximum": int(high)}}})


def parse_debate_reply(text: str,
                       answer_format: AnswerFormat | None = None) -> Parsed[_Statement]:
    parsed = json_answer(text, answer_format)
    if not parsed.ok or parsed.value is None:
        return Parsed(problem=parsed.problem)
    data = parsed.value
    statement = data.get("statement")
    if not isinstance(statement, str) or not statement.strip():
        return Parsed(problem='"statement" is missing or empty')
    raw_score = data.get("score")
    try:
        score = float(str(raw_score).strip())
    except ValueError:
        return Parsed(problem=f'"score" {raw_score!r} is not a number')
    low, high = DEBATE_SCORE_RANGE
    if math.isnan(score) or not low <= score <= high:
        return Parsed(problem=f'"score" {raw_score!r} is outside {low}–{high}')
    return Parsed(_Statement(score=score, statement=statement.strip()))


def run_debate(
    log: ConversationLog | Mapping[str, Any],
    factor_results: Mapping[str, FactorResult],
    *,
    gateway: LLMGateway,
    config: ModelConfig,
    settings: DebateSettings = DebateSettings(),
    roles: Sequence[DebateRole] = DEBATE_ROLES,
    item_names: Mapping[str, str] | None = None,
    meter: UsageMeter | None = None,
) -> DebateResult:
    """Run the debate; every round is recorded.

    Within a round the roles answer independently (concurrently) and see only earlier rounds,
    as in CoRE, where the buffer is appended once all roles have spoken. A role whose answer
    stays unusable keeps its previous score (``carried_over``); if that happens in round 1 the
    role has no score and the debate ends as a recorded failure.
    """
    log = as_log(log)
    rounds: list[DebateRound] = []
    latest: dict[str, float] = {}
    for round_number in range(1, settings.max_rounds + 1):
        speak = functools.partial(
            _debate_turn,
            log=log,
            factor_results=factor_results,
            round_number=round_number,
            discussion=[r.turns for r in rounds],
            previous_scores=dict(latest),
            gateway=gateway,
            config=config,
            settings=settings,
            item_names=item_names,
            meter=meter,
        )
        turns = tuple(gateway.map(speak, list(roles)))
        missing = [t.role for t in turns if t.score is None]
        if missing:
            rounds.append(DebateRound(round_number, turns, agreed=False, spread=None))
            failure = f"round {round_number}: no usable score from {', '.join(missing)}"
            return DebateResult(tuple(rounds), None, "failure", failure, dict(latest))
        latest.update({t.role: float(t.score) for t in turns if t.score is not None})
        spread = max(latest.values()) - min(latest.values())
        agreed = spread <= settings.agreement_tolerance
        rounds.append(DebateRound(round_number, turns, agreed=agreed, spread=spread))
        if agreed:
            break
    final = statistics.fmean(latest[role.key] for role in roles)
    stopped = "agreement" if rounds[-1].agreed else "max_rounds"
    return DebateResult(tuple(rounds), final, stopped, None, dict(latest))


def _debate_turn(
    role: DebateRole,
    *,
    log: ConversationLog,
    factor_results: Mapping[str, FactorResult],
    round_number: int,
    discussion: Sequence[Sequence[DebateTurn]],
    previous_scores: Mapping[str, float],
    gateway: LLMGateway,
    config: ModelConfig,
    settings: DebateSettings,
    item_names: Mapping[str, str] | None,
    meter: UsageMeter | None,
) -> DebateTurn:
    messages = build_debate_messages(
        log,
        factor_results,
        role,
        round_number=round_number,
        discussion=discussion,
        settings=settings,
        item_names=item_names,
    )
    answer_format = debate_format(role.name)
    outcome = ask_until_parsed(
        gateway,
        config,
        messages,
        lambda text: parse_debate_reply(text, answer_format),
        lambda problem: _DEBATE_REASK.format(problem=problem),
        max_reasks=settings.max_reasks,
        meter=meter,
        answer_format=answer_format,
    )
    if outcome.value is not None:
        value = outcome.value
        return DebateTurn(
            round_number, role.key, value.score, value.statement, attempts=outcome.attempts
        )
    previous = previous_scores.get(role.key)
    return DebateTurn(
        round_number,
        role.key,
        previous,
        "",
        failure=outcome.failure,
        carried_over=previous is not None,
        attempts=outcome.attempts,
        answer=outcome.raw_answers[-1] if outcome.raw_answers else "",
    )


def agreement_curve(
    debates: Sequence[DebateResult], *, max_rounds: int = 4, tolerance: float = 0.0
) -> list[dict[str, float]]:
    """Share of debates in "all agree" and "major agree" (≥ 3 roles) state after each round.

    A debate that stopped early keeps its last scores for the remaining rounds, which is how the
    seed's Fig. 5 reads (consensus, once reached, ends the discussion).
    """
    curve = []
    usable = [d for d in debates if d.rounds and d.failure is None]
    for round_number in range(1, max_rounds + 1):
        all_agree = major_agree = 0
        for debate in usable:
            scores = _scores_after_round(debate, round_number)
            all_agree += max(scores) - min(scores) <= tolerance
            major_agree += _largest_agreeing_group(scores, tolerance) >= 3
        n = len(usable)
        curve.append(
            {
                "round": round_number,
                "all_agree": all_agree / n if n else math.nan,
                "major_agree": major_agree / n if n else math.nan,
                "debates": n,
            }
        )
    return curve


def _scores_after_round(debate: DebateResult, round_number: int) -> list[float]:
    latest: dict[str, float] = {}
    for debate_round in debate.rounds[:round_number]:
        latest.update({t.role: t.score for t in debate_round.turns if t.score is not None})
    return list(latest.values())


def _largest_agreeing_group(scores: Sequence[float], tolerance: float) -> int:
    if tolerance == 0:
        return max(Counter(scores).values())
    ordered = sorted(scores)
    return max(
        sum(1 for other in ordered if anchor <= other <= anchor + tolerance) for anchor in ordered
    )
