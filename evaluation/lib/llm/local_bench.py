"""Measure a model on the built-in server per evaluator: the parse rate with and without the
answer format's constraint, tokens per second, wall time per call, and the smallest run's time
(`manage.py bench_llm_local`; docs/llm.md, "Measured").

Each evaluator gets two short representative requests (a recommendation dialogue excerpt and
the evaluator's task) and an answer format. The format is the one the evaluator declares when
its registered object has one (``answer_format`` or ``answer_formats``, issue 31: one
declaration per prompt), else a representative one written here after the evaluator's answer
(scores as enums, reasons with ``maxLength``, ids as enums); the table says which. Both modes
get the same prompt; the constrained calls are capped by the format's length bound, the
unconstrained ones at ``FREE_TOKENS`` (128), so the unconstrained column shows what the prompt
alone achieves within a CPU-friendly length. The smallest run's time is the measured mean wall
per call times the calls that run makes (``CALLS``), not a run of the evaluator itself.

Pure Python apart from the gateway it is handed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evaluation.lib.llm.answer_format import AnswerFormat, AnswerFormatError

DIALOGUES = (
    "User: I want a quiet seafood place for a date, not too pricey.\n"
    "System: Try Harbor Lantern (id h12): candle-lit, grilled fish, mains around $20. "
    "Reviews say it is calm on weekdays.\n"
    "User: Sounds nice, is there parking?",
    "User: Any sci-fi film like Arrival for tonight?\n"
    "System: How about Contact (id m7)? A scientist decodes a signal from space; slow and "
    "thoughtful like Arrival.\n"
    "User: Seen it. Something newer?",
)
CANDIDATES = ("h12", "m7", "m300", "p41")


def _scores(names: Sequence[str], low: int, high: int, reason: str, length: int) -> dict:
    properties = {reason: {"type": "string", "maxLength": length}}
    properties.update({name: {"type": "integer", "enum": list(range(low, high + 1))}
                       for name in names})
    return {"type": "object", "additionalProperties": False,
            "required": [reason, *names], "properties": properties}


@dataclass(frozen=True)
class Task:
    """One evaluator's call: KEY (the evaluator or simulator name), what is asked (INSTRUCTION,
    appended to each dialogue), the representative FORMAT, and CALLS in its smallest run."""

    key: str
    label: str
    instruction: str
    format: AnswerFormat
    calls: int
    calls_note: str


TASKS = (
    Task("trace_judge", "Trace judge (one turn)",
         "Rate the system's last response from 1 to 5 for relevance, informativeness, "
         "grounding_quality, natural_flow and justification, with a short rationale. Answer "
         "as JSON.",
         AnswerFormat("trace_judge", json_schema=_scores(
             ("relevance", "informativeness", "grounding_quality", "natural_flow",
              "justification"), 1, 5, "rationale", 160)),
         1, "1 turn"),
    Task("pepper_judge", "PEPPER judge (one log)",
         "Rate the recommender from 1 to 5 for proactiveness, coherence and personalization, "
         "with a short rationale. Answer as JSON.",
         AnswerFormat("pepper_judge", json_schema=_scores(
             ("proactiveness", "coherence", "personalization"), 1, 5, "rationale", 160)),
         1, "1 log"),
    Task("core", "CoRE factor (one log, no debate)",
         "Score the recommender from 0 to 4 on how well it elicits the user's preferences, "
         "reasoning first. Answer as JSON.",
         AnswerFormat("core_factor", json_schema=_scores(("score",), 0, 4, "reasoning", 200)),
         13, "12 factors + persuasiveness"),
    Task("face", "FACE particle score (one log, one aspect)",
         "How relevant is the system's last response to the user? Answer 'Score: N' with N "
         "from 1 to 5.",
         AnswerFormat("face_score", regex=r"Score: [1-5]"),
         5, "2 system turns: 2 decompositions + 3 particle scores"),
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
         0, "counted in FACE's run"),
    Task("pepper_simulator", "PEPPER simulator (1 user × 2 turns)",
         "You are the user. Reply to the system in one or two sentences and say whether you "
         "accept the recommendation. Answer as JSON.",
         AnswerFormat("pepper_user", json_schema={
             "type": "object", "additionalProperties": False,
             "required": ["utterance", "accept"],
             "properties": {"utterance": {"type": "string", "maxLength": 200},
                            "accept": {"type": "boolean"}}}),
         2, "2 user turns"),
    Task("ievalm_simulator", "iEvaLM simulator (1 user × 2 turns)",
         "You are the user looking for the target item. Reply to the system in one sentence. "
         "Answer as JSON.",
         AnswerFormat("ievalm_user", json_schema={
             "type": "object", "additionalProperties": False, "required": ["utterance"],
             "properties": {"utterance": {"type": "string", "maxLength": 200}}}),
         2, "2 user turns"),
    Task("llm_zero_shot", "zero-shot baseline (one turn)",
         f"Rank the candidates {', '.join(CANDIDATES)} for the user (best first, at most "
         "three) and write the system's next response. Answer as JSON.",
         AnswerFormat("zero_shot", json_schema={
             "type": "object", "additionalProperties": False, "required": ["ranked", "response"],
             "properties": {"ranked": {"type": "array", "maxItems": 3, "items": {
                 "type": "string", "enum": list(CANDIDATES)}},
                 "response": {"type": "string", "maxLength": 200}}}),
         1, "1 turn"),
)


def declared_format(task: Task, registry: Mapping[str, Any]) -> AnswerFormat | None:
    """The answer format TASK's evaluator declares in REGISTRY: its registered object's
    ``answer_format``, or among its ``answer_formats`` (a mapping or a sequence; for a
    simulator, its ``prompts``' fixed formats) the one named like TASK's representative format
    (or the only one); None when it declares none."""
    spec = registry.get(task.key)
    declared = getattr(spec, "answer_format", None)
    formats = getattr(spec, "answer_formats", None) or tuple(
        p.answer_format for p in getattr(spec, "prompts", ()) or ()
        if getattr(p, "answer_format", None) is not None)
    if declared is None and formats:
        if isinstance(formats, Mapping):
            declared = formats.get(task.format.name)
        else:
            named = [f for f in formats if getattr(f, "name", None) == task.format.name]
            declared = named[0] if named else (formats[0] if len(formats) == 1 else None)
    return declared if isinstance(declared, AnswerFormat) else None


@dataclass
class Row:
    task: Task
    source: str  # "declared" or "representative"
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
                "parsed_constrained": self._rate(self.constrained),
                "parsed_unconstrained": self._rate(self.free),
                "tokens_per_second": tokens / sum(wall) if wall and sum(wall) else None,
                "seconds_per_call": per_call,
                "calls_in_smallest_run": self.task.calls,
                "calls_note": self.task.calls_note,
                "smallest_run_seconds": per_call * self.task.calls if per_call else None,
                "calls": {"constrained": self.constrained, "unconstrained": self.free}}


# The unconstrained calls' token cap: enough for every representative answer written
# compactly (the constrained answers take 10-90 tokens), and a bound on the minutes a rambling
# small model takes on a CPU.
FREE_TOKENS = 128


def run_bench(complete: Callable[..., Any], *, registry: Mapping[str, Any],
              bound: Callable[[AnswerFormat], int | None],
              progress: Callable[[str], None] = lambda line: None,
              tasks: Sequence[Task] = TASKS, dialogues: int = len(DIALOGUES),
              free_tokens: int = FREE_TOKENS) -> list[dict[str, Any]]:
    """Each task's requests (one per dialogue, the first DIALOGUES), constrained then not.
    COMPLETE(messages, answer_format, max_tokens) returns an LLMResult; BOUND gives a format's
    length bound in characters (+1 token: the constrained calls' cap); the unconstrained calls
    get at most FREE_TOKENS."""
    rows = []
    for task in tasks:
        declared = declared_format(task, registry)
        answer_format = declared or task.format
        row = Row(task, "declared" if declared else "representative")
        cap = bound(answer_format)
        max_tokens = cap + 1 if cap is not None else 1024
        for index, dialogue in enumerate(DIALOGUES[:dialogues]):
            messages = [{"role": "user", "content": f"{dialogue}\n\n{task.instruction}"}]
            for constrained, calls in ((True, row.constrained), (False, row.free)):
                started = time.monotonic()
                result = complete(messages, answer_format if constrained else None,
                                  max_tokens if constrained else min(max_tokens, free_tokens))
                seconds = time.monotonic() - started
                try:
                    answer_format.check(result.text)
                    parsed, reason = True, ""
                except AnswerFormatError as error:
                    parsed, reason = False, error.reason
                calls.append({"dialogue": index, "parsed": parsed, "reason": reason,
                              "tokens": result.completion_tokens, "seconds": seconds,
                              "text": result.text[:300]})
                progress(f"{task.key} dialogue {index + 1}/{dialogues} "
                         f"{'constrained' if constrained else 'unconstrained'}: "
                         f"{'parsed' if parsed else 'not parsed'}, "
                         f"{result.completion_tokens} tokens in {seconds:.1f} s")
        rows.append(row.as_dict())
    return rows


def table(rows: Sequence[Mapping[str, Any]]) -> str:
    """ROWS as the Markdown table docs/llm.md shows."""
    lines = ["| evaluator | format | parsed, constrained | parsed, unconstrained | tokens/s "
             "| s per call | calls in the smallest run | smallest run (s) |",
             "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        def number(value: float | None, digits: int = 1) -> str:
            return "—" if value is None else f"{value:.{digits}f}"

        lines.append(
            f"| {row['label']} | {row['format']} | {row['parsed_constrained']} "
            f"| {row['parsed_unconstrained']} | {number(row['tokens_per_second'])} "
            f"| {number(row['seconds_per_call'])} | {row['calls_in_smallest_run']} "
            f"({row['calls_note']}) | {number(row['smallest_run_seconds'], 0)} |")
    return "\n".join(lines)
