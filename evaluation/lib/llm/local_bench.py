"""Measure a model on the built-in server per evaluator: the parse rate with and without the
answer format's constraint, tokens per second, wall time per call, and the smallest run's time
(`manage.py bench_llm_local`; docs/llm.md, "Measured").

Each evaluator gets one request per sample dialogue (two short recommendation dialogues) in
both modes, constrained and not. By default the request is the evaluator's own prompt, built
by its own prompt builder from the sample, with the answer format its registered object
declares for that prompt (``LLMEvaluator.prompts``; a simulator's ``prompts``; the zero-shot
baseline's per-call ``ranked_answer_format``), and an answer counts as parsed when the
evaluator's own parser reads it. The simulators' requests are a short user-role request in
their prompt's words for that format (their full prompts need a simulated user's state).
With ``representative`` each evaluator gets instead the earlier representative request (the
dialogue and a one-line task) and a representative JSON format written here, checked against
that format. The constrained calls are capped by the format's own cap
(``AnswerFormat.max_tokens``, what the gateway sends for a constrained call), the
unconstrained ones at ``FREE_TOKENS`` (128), so the unconstrained column shows what the prompt
alone achieves within a CPU-friendly length. The smallest run's time is the measured mean wall
per call times the calls that run makes (``Task.calls``), not a run of the evaluator itself.

Pure Python apart from the gateway it is handed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evaluation.lib.llm.answer_format import AnswerFormat, AnswerFormatError
from evaluation.lib.llm.core_factors import build_factor_messages, parse_factor_rating
from evaluation.lib.llm.core_rubrics import FACTOR_KEYS
from evaluation.lib.llm.face.aspects import ASPECTS as FACE_ASPECTS
from evaluation.lib.llm.face.particles import parse_particles
from evaluation.lib.llm.face.prompts import (
    SCORE_MARKER,
    decomposer_messages,
    initial_instruction,
    scoring_messages,
)
from evaluation.lib.llm.judging import (
    Parsed,
    copied_placeholder,
    format_parser,
    parse_tagged_scores,
    prompt_placeholders,
)
from evaluation.lib.llm.pepper_judge import PEPPER_ASPECTS, build_pepper_messages
from evaluation.lib.llm.responders import (
    DialogueContext,
    parse_ranked_answer,
    ranked_answer_format,
    zero_shot_messages,
)
from evaluation.lib.llm.trace_judge import TRACE_CRITERIA, JudgedTurn, build_trace_judge_messages

# The sample dialogues: a user's request, the system turn every evaluator judges, the user's
# reply to it. CANDIDATES are the places and films the zero-shot baseline ranks.
SAMPLES: tuple[tuple[tuple[str, str], ...], ...] = (
    (("user", "I want a quiet seafood place for a date, not too pricey."),
     ("system", "Try Harbor Lantern (id h12): candle-lit, grilled fish, mains around $20. "
                "Reviews say it is calm on weekdays."),
     ("user", "Sounds nice, is there parking?")),
    (("user", "Any sci-fi film like Arrival for tonight?"),
     ("system", "How about Contact (id m7)? A scientist decodes a signal from space; slow and "
                "thoughtful like Arrival."),
     ("user", "Seen it. Something newer?")),
)
DIALOGUES = tuple("\n".join(f"{role.capitalize()}: {text}" for role, text in sample)
                  for sample in SAMPLES)
CANDIDATES = ("h12", "m7", "m300", "p41")
_CANDIDATE_CARDS = ({"id": "h12", "name": "Harbor Lantern", "type": "restaurant",
                     "categories": ["seafood"], "price_level": 2},
                    {"id": "m7", "name": "Contact", "type": "film", "categories": ["sci-fi"]},
                    {"id": "m300", "name": "Project Hail Mary", "type": "film",
                     "categories": ["sci-fi"]},
                    {"id": "p41", "name": "Pier 41 Oyster Bar", "type": "restaurant",
                     "categories": ["seafood", "bar"]})


def _scores(names: Sequence[str], low: int, high: int, reason: str, length: int) -> dict:
    properties = {reason: {"type": "string", "maxLength": length}}
    properties.update({name: {"type": "integer", "enum": list(range(low, high + 1))}
                       for name in names})
    return {"type": "object", "additionalProperties": False,
            "required": [reason, *names], "properties": properties}


@dataclass(frozen=True)
class Task:
    """One evaluator's call: KEY (the evaluator or simulator name), what is asked (INSTRUCTION,
    appended to each dialogue), the representative FORMAT, CALLS in its smallest run, and
    PROMPT: (the registry's name, the registered prompt's name) of the declared request."""

    key: str
    label: str
    instruction: str
    format: AnswerFormat
    calls: int
    calls_note: str
    prompt: tuple[str, str] = ("", "")
    # Calls of other tasks the same smallest run makes ((task key, calls), ...): FACE's run
    # decomposes its turns before it scores their particles.
    with_calls: tuple[tuple[str, int], ...] = ()


TASKS = (
    Task("trace_judge", "Trace judge (one turn)",
         "Rate the system's last response from 1 to 5 for relevance, informativeness, "
         "grounding_quality, natural_flow and justification, with a short rationale. Answer "
         "as JSON.",
         AnswerFormat("trace_judge", json_schema=_scores(
             ("relevance", "informativeness", "grounding_quality", "natural_flow",
              "justification"), 1, 5, "rationale", 160)),
         1, "1 turn", ("trace_judge", "judge")),
    Task("pepper_judge", "PEPPER judge (one log)",
         "Rate the recommender from 1 to 5 for proactiveness, coherence and personalization, "
         "with a short rationale. Answer as JSON.",
         AnswerFormat("pepper_judge", json_schema=_scores(
             ("proactiveness", "coherence", "personalization"), 1, 5, "rationale", 160)),
         1, "1 log", ("pepper_judge", "judge")),
    Task("core", "CoRE factor (one log, no debate)",
         "Score the recommender from 0 to 4 on how well it elicits the user's preferences, "
         "reasoning first. Answer as JSON.",
         AnswerFormat("core_factor", json_schema=_scores(("score",), 0, 4, "reasoning", 200)),
         13, "12 factors + persuasiveness", ("core", "factor")),
    Task("face", "FACE particle score (one log, one aspect)",
         "How relevant is the system's last response to the user? Answer 'Score: N' with N "
         "from 1 to 5.",
         AnswerFormat("face_score", regex=r"Score: [1-5]"),
         3, "3 particle scores + 2 decompositions (2 system turns)", ("face", "score"),
         (("face_decomposition", 2),)),
    Task("face_decomposition", "FACE decomposition (one turn)",
         "Split the system's last response into particles: each a dialogue act (greeting, "
         "preference elicitation, recommendation, goodbye, others), the mention, and the "
         "user's feedback. Answer as JSON.",
         AnswerFormat("face_decomposition", json_schema={
             "type": "object", "additionalProperties": False, "required": ["particles"],
             "properties": {"particles": {"type": "array", "maxItems": 3, "items": {
                 "type": "object", "additionalProperties": False,
                 "required": ["act", "mention", "feedback"],
                 "properties": {"act": {"type": "string", "enum": [
                     "greeting", "preference elicitation", "recommendation", "goodbye",
                     "others"]},
                     "mention": {"type": "string", "maxLength": 80},
                     "feedback": {"type": "string", "maxLength": 60}}}}}}),
         0, "counted in FACE's run", ("face", "decompose")),
    Task("pepper_simulator", "PEPPER simulator (1 user × 2 turns)",
         "You are the user. Reply to the system in one or two sentences and say whether you "
         "accept the recommendation. Answer as JSON.",
         AnswerFormat("pepper_user", json_schema={
             "type": "object", "additionalProperties": False,
             "required": ["utterance", "accept"],
             "properties": {"utterance": {"type": "string", "maxLength": 200},
                            "accept": {"type": "boolean"}}}),
         3, "the user's preparation + 2 user turns", ("pepper_simulator", "respond")),
    Task("ievalm_simulator", "iEvaLM simulator (1 user × 2 turns)",
         "You are the user looking for the target item. Reply to the system in one sentence. "
         "Answer as JSON.",
         AnswerFormat("ievalm_user", json_schema={
             "type": "object", "additionalProperties": False, "required": ["utterance"],
             "properties": {"utterance": {"type": "string", "maxLength": 200}}}),
         3, "2 user turns + persuasiveness", ("ievalm_simulator", "utterance")),
    Task("llm_zero_shot", "zero-shot baseline (one turn)",
         f"Rank the candidates {', '.join(CANDIDATES)} for the user (best first, at most "
         "three) and write the system's next response. Answer as JSON.",
         AnswerFormat("zero_shot", json_schema={
             "type": "object", "additionalProperties": False, "required": ["ranked", "response"],
             "properties": {"ranked": {"type": "array", "maxItems": 3, "items": {
                 "type": "string", "enum": list(CANDIDATES)}},
                 "response": {"type": "string", "maxLength": 200}}}),
         1, "1 turn", ("llm_zero_shot", "answer")),
)


@dataclass(frozen=True)
class Request:
    """One bench request: MESSAGES, the ANSWER_FORMAT it declares, whether the call asks for
    LOGPROBS (FACE's score reads them), and PROBLEM: the evaluator's own parser on an answer
    (an LLMResult), None when it reads the answer, else why not."""

    messages: list[dict[str, str]]
    answer_format: AnswerFormat
    problem: Callable[[Any], str | None]
    logprobs: bool = False


def _registered(registry: Mapping[str, Any], key: str, prompt: str,
                *per_call: Any) -> AnswerFormat | None:
    """The answer format REGISTRY[KEY] declares for its prompt PROMPT (built for PER_CALL's
    arguments when it is per call), None when it declares none."""
    found = next((p for p in getattr(registry.get(key), "prompts", ()) or ()
                  if getattr(p, "name", None) == prompt), None)
    if found is None:
        return None
    declared = found.answer_format or (found.format_for(*per_call) if found.format_for else None)
    return declared if isinstance(declared, AnswerFormat) else None


def _log(sample: Sequence[tuple[str, str]]) -> dict[str, Any]:
    return {"log_id": "bench", "turns": [{"role": role, "text": text} for role, text in sample]}


def _problem_of(parsed: Parsed[Any]) -> str | None:
    return None if parsed.ok else parsed.problem


def _tags_problem(keys: Sequence[str]) -> Callable[[Any], str | None]:
    def problem(result: Any) -> str | None:
        _, problems = parse_tagged_scores(result.text, keys, low=1, high=5)
        return "; ".join(problems.values()) or None
    return problem


def _face_grade_problem(grades: Sequence[int]) -> Callable[[Any], str | None]:
    """FACE's reading of a score answer (`face.scoring.grade_position`): the token after the
    last "Score:" must be a grade (its top log-probabilities then give Eq. 1)."""
    from evaluation.lib.llm.face.scoring import grade_position

    def problem(result: Any) -> str | None:
        if not result.logprobs:
            return "no log-probabilities"
        index = grade_position(result.logprobs)
        if index is None:
            return f'no "{SCORE_MARKER} N" line'
        token = result.logprobs[index].token.strip()
        return None if token.isdigit() and int(token) in grades else f"grade {token!r}"
    return problem


_SIMULATOR_ASK = "Reply with one line of compact JSON only, no other text: "


def declared_request(task: Task, registry: Mapping[str, Any], index: int) -> Request | None:
    """TASK's request on sample dialogue INDEX with the evaluator's own prompt and the format
    its registered object (in REGISTRY, by name) declares; None when it declares none."""
    sample = SAMPLES[index]
    (_, first), (_, response), (_, reply) = sample
    key, prompt = task.prompt
    if key == "llm_zero_shot":  # a baseline: its format is built per call, from the candidates
        context = DialogueContext.from_dict({"dialogue_id": f"bench-{index}", "turn_index": 1,
                                             "turns": [{"role": "user", "text": first}],
                                             "candidates": list(_CANDIDATE_CARDS),
                                             "action": "recommend"})
        fmt = ranked_answer_format(CANDIDATES)
        return Request(zero_shot_messages(context), fmt, lambda result: _problem_of(
            parse_ranked_answer(result.text, CANDIDATES, fmt)))
    aspect = FACE_ASPECTS["relevance"]
    per_call = {("face", "score"): (aspect,), ("pepper_simulator", "respond"): (CANDIDATES[:2],)}
    fmt = _registered(registry, key, prompt, *per_call.get((key, prompt), ()))
    if fmt is None:
        return None
    if key == "trace_judge":
        turn = JudgedTurn(f"bench-{index}", 1, (("user", first),), response)
        return Request(build_trace_judge_messages(turn), fmt, _tags_problem(TRACE_CRITERIA))
    if key == "pepper_judge":
        return Request(build_pepper_messages(_log(sample), domain="places and films"), fmt,
                       _tags_problem(PEPPER_ASPECTS))
    if key == "core":
        return Request(build_factor_messages(_log(sample), FACTOR_KEYS[0]), fmt,
                       lambda result: _problem_of(parse_factor_rating(result.text)))
    if (key, prompt) == ("face", "score"):
        messages = scoring_messages(initial_instruction(aspect), aspect, sample[:1],
                                    "recommendation", response, reply)
        return Request(messages, fmt, _face_grade_problem(aspect.scores), logprobs=True)
    if (key, prompt) == ("face", "decompose"):
        return Request(decomposer_messages(sample[:1], response, reply), fmt,
                       lambda result: _problem_of(parse_particles(result.text)))
    transcript = "\n".join(f"{role}: {text}" for role, text in sample[:2])
    if key == "pepper_simulator":
        shown = "\n".join(f"- [{card['id']}] UNSEEN: {card['name']} ({card['type']})"
                          for card in _CANDIDATE_CARDS[:2])
        ask = (f"You are the user. The conversation so far:\n{transcript}\n\nThe items shown "
               f"to you now:\n{shown}\n\nFirst reflect on each item, then write your next "
               "message to the recommender. At most one reflection per item, its item_id one "
               "of the ids in brackets, its opinion like or dislike. " + _SIMULATOR_ASK
               + '{"reflected_preferences":[{"item_id":"<an id shown above>","opinion":"like",'
                 '"reason":"<your reason>"}],"utterance":"<your message>"}')
    else:
        ask = (f"You are the user. The conversation so far:\n{transcript}\n\nNothing "
               "suggested is what you are after. Reply to the recommender. " + _SIMULATOR_ASK
               + '{"utterance":"<your message>"}')
    reader = format_parser(fmt)  # the simulators' reader (`_LLMSimulator.ask`)
    return Request([{"role": "user", "content": ask}], fmt,
                   lambda result: _problem_of(reader(result.text)))


@dataclass
class Row:
    task: Task
    source: str  # "declared" or "representative"
    format_name: str = ""
    cap: int | None = None  # the constrained calls' max_tokens
    constrained: list[dict] = field(default_factory=list)
    free: list[dict] = field(default_factory=list)

    @staticmethod
    def _rate(calls: list[dict]) -> str:
        return f"{sum(c['parsed'] for c in calls)}/{len(calls)}"

    def as_dict(self) -> dict[str, Any]:
        wall = [c["seconds"] for c in self.constrained]
        tokens = sum(c["tokens"] for c in self.constrained)
        per_call = sum(wall) / len(wall) if wall else None
        return {"evaluator": self.task.key, "label": self.task.label, "format": self.source,
                "format_name": self.format_name, "max_tokens": self.cap,
                "parsed_constrained": self._rate(self.constrained),
                "parsed_unconstrained": self._rate(self.free),
                "tokens_per_second": tokens / sum(wall) if wall and sum(wall) else None,
                "tokens_per_call": tokens / len(wall) if wall else None,
                "seconds_per_call": per_call,
                "calls_in_smallest_run": self.task.calls,
                "calls_note": self.task.calls_note,
                "smallest_run_seconds": per_call * self.task.calls
                if per_call and self.task.calls else None,
                "calls": {"constrained": self.constrained, "unconstrained": self.free}}


# The unconstrained calls' token cap: a bound on the minutes a rambling small model takes on a
# CPU (the constrained answers' caps are their formats', `AnswerFormat.max_tokens`).
FREE_TOKENS = 128
UNBOUNDED_TOKENS = 1024  # the built-in server's default, for a format without a bound


def _representative_request(task: Task, index: int) -> Request:
    fmt = task.format

    def problem(result: Any) -> str | None:
        try:
            fmt.check(result.text)
        except AnswerFormatError as error:
            return error.reason
        return None

    messages = [{"role": "user", "content": f"{DIALOGUES[index]}\n\n{task.instruction}"}]
    return Request(messages, fmt, problem)


def run_bench(complete: Callable[..., Any], *, registry: Mapping[str, Any] | None,
              progress: Callable[[str], None] = lambda line: None,
              tasks: Sequence[Task] = TASKS, dialogues: int = len(SAMPLES),
              free_tokens: int = FREE_TOKENS) -> list[dict[str, Any]]:
    """Each task's requests (one per sample dialogue, the first DIALOGUES), constrained then
    not. COMPLETE(messages, answer_format, max_tokens, logprobs) returns an LLMResult.
    REGISTRY maps each task's registry name to its registered object (the declared requests,
    `declared_request`); None: the representative requests. Constrained calls get their
    format's cap (`AnswerFormat.max_tokens`), unconstrained ones at most FREE_TOKENS."""
    rows = []
    for task in tasks:
        requests = [None if registry is None else declared_request(task, registry, index)
                    for index in range(dialogues)]
        declared = all(request is not None for request in requests)
        if not declared:
            requests = [_representative_request(task, index) for index in range(dialogues)]
        first = requests[0].answer_format
        cap = first.max_tokens or UNBOUNDED_TOKENS
        row = Row(task, "declared" if declared else "representative", first.name, cap)
        for index, request in enumerate(requests):
            for constrained, calls in ((True, row.constrained), (False, row.free)):
                started = time.monotonic()
                result = complete(request.messages,
                                  request.answer_format if constrained else None,
                                  (request.answer_format.max_tokens or UNBOUNDED_TOKENS)
                                  if constrained else free_tokens, request.logprobs)
                seconds = time.monotonic() - started
                # As every evaluator reads an answer (`judging.ask_until_parsed`): one that
                # copies the prompt's placeholder is refused first, then its parser reads it.
                reason = copied_placeholder(result.text, prompt_placeholders(request.messages)) \
                    or request.problem(result)
                calls.append({"dialogue": index, "parsed": reason is None,
                              "reason": reason or "", "tokens": result.completion_tokens,
                              "seconds": seconds, "text": result.text[:300]})
                progress(f"{task.key} dialogue {index + 1}/{dialogues} "
                         f"{'constrained' if constrained else 'unconstrained'}: "
                         f"{'parsed' if reason is None else 'not parsed'}, "
                         f"{result.completion_tokens} tokens in {seconds:.1f} s")
        rows.append(row.as_dict())
    return _with_other_calls(rows, tasks)


def _with_other_calls(rows: list[dict[str, Any]], tasks: Sequence[Task]) -> list[dict[str, Any]]:
    """Each row's smallest run with the calls of other tasks it makes (`Task.with_calls`),
    at their measured wall per call; None when one of them was not measured."""
    per_call = {row["evaluator"]: row["seconds_per_call"] for row in rows}
    for row, task in zip(rows, tasks, strict=True):
        for key, calls in task.with_calls:
            other = per_call.get(key)
            row["smallest_run_seconds"] = (None if other is None or row["smallest_run_seconds"]
                                           is None else row["smallest_run_seconds"] + calls * other)
    return rows


def table(rows: Sequence[Mapping[str, Any]]) -> str:
    """ROWS as the Markdown table docs/llm.md shows."""
    lines = ["| evaluator | format | parsed, constrained | parsed, unconstrained | tokens/s "
             "| s per call | calls in the smallest run | smallest run (s) "
             "| answer tokens, constrained (cap) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        def number(value: float | None, digits: int = 1) -> str:
            return "—" if value is None else f"{value:,.{digits}f}"

        lines.append(
            f"| {row['label']} | {row['format']} | {row['parsed_constrained']} "
            f"| {row['parsed_unconstrained']} | {number(row['tokens_per_second'])} "
            f"| {number(row['seconds_per_call'])} | {row['calls_in_smallest_run']} "
            f"({row['calls_note']}) | {number(row['smallest_run_seconds'], 0)} "
            f"| {number(row['tokens_per_call'], 0)} ({row['max_tokens']:,}) |")
    return "\n".join(lines)
