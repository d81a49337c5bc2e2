"""FACE's prompts, in our own wording, following the structure of FACE Appendix E.

- the decomposer (E.2.1): the dialogue history, the target system turn and the user's reply,
  the particle format (dialogue act, mention, user feedback), step-by-step reasoning, then a JSON
  list;
- the evaluation prompt: an instruction (the initial one of E.2.4, or an optimized one), the
  dialogue, the target particle, and the grading scale; the answer ends with `Score: N`, whose
  token distribution Eq. 1 reads;
- textual gradient ∇ (E.2.2) and rewriting δ (E.2.3), merged into one call as FACE Appendix C.2
  does to halve the calls: critique the instruction against the human score, then propose a new
  instruction of about 50 words.
"""

from __future__ import annotations

from collections.abc import Sequence

from evaluation.lib.llm.answer_format import AnswerFormat
from evaluation.lib.llm.face.aspects import FaceAspect
from evaluation.lib.llm.judging import reasoning_chars, reasoning_limit

DIALOGUE_ACTS = ("greeting", "preference elicitation", "recommendation", "goodbye", "others")
SCORE_MARKER = "Score:"
# The answers as data (docs/llm.md, "Answer formats"). Both stay textual, as FACE asks for
# step-by-step reasoning before the answer: the particles as one line of compact JSON in a
# ```json code block at the end, and a score as a last line "Score: N" (whose token's top
# log-probabilities are the score distribution of Eq. 1). Every part is bounded, in words in
# the prompt and in characters in the format (judging.reasoning_chars), so a constrained
# answer closes within its token cap (AnswerFormat.max_tokens).
DECOMPOSITION_WORDS = 100  # the four steps' reasoning, in all
SCORE_WORDS = 40  # "Reason briefly"
MAX_PARTICLES = 6  # FACE's turns have a few particles each
MENTION_CHARS = 200  # a span of the turn: a sentence or two
FEEDBACK_CHARS = 200  # the user's words about it


def _json_string(chars: int, *, empty: bool) -> str:
    """A JSON string of at most CHARS characters without a backtick (the code block's fence),
    a raw control character or an escape (as the built-in server writes JSON strings); when
    not EMPTY it starts with a visible ASCII character, so it is not blank once stripped (what
    `parse_particles` requires of a mention)."""
    char = r'[^"\\`\x00-\x1f]'
    if empty:
        return rf'"{char}{{0,{chars}}}"'
    return rf'"[!#-\[\]-_a-~]{char}{{0,{chars - 1}}}"'


_ACT = "(?:" + "|".join(DIALOGUE_ACTS) + ")"
_PARTICLE = (rf'\{{"dialogue_act":"{_ACT}","mention":{_json_string(MENTION_CHARS, empty=False)},'
             rf'"user_feedback":{_json_string(FEEDBACK_CHARS, empty=True)}\}}')
DECOMPOSITION_FORMAT = AnswerFormat(
    name="face_particles",
    regex=(rf"[^`]{{0,{reasoning_chars(DECOMPOSITION_WORDS)}}}```json\n"
           rf"\[{_PARTICLE}(?:,{_PARTICLE}){{0,{MAX_PARTICLES - 1}}}\]\n```\s{{0,2}}"))


def score_format(aspect: FaceAspect) -> AnswerFormat:
    """A particle score's answer: a brief reasoning (at most SCORE_WORDS words), then the line
    "Score: N", N a grade."""
    grades = "|".join(str(n) for n in range(aspect.high, aspect.low - 1, -1))
    return AnswerFormat(name=f"face_score_{aspect.low}_{aspect.high}",
                        regex=rf"[^`]{{0,{reasoning_chars(SCORE_WORDS)}}}{SCORE_MARKER} "
                              rf"(?:{grades})\s{{0,2}}")


def render_history(turns: Sequence[tuple[str, str]]) -> str:
    labels = {"user": "User", "system": "Assistant"}
    lines = [f"{labels.get(role, role)}: {text}" for role, text in turns]
    return "\n".join(lines) if lines else "(the conversation starts here)"


def decomposer_messages(history: Sequence[tuple[str, str]], target: str,
                        user_response: str | None) -> list[dict]:
    acts = ", ".join(f'"{a}"' for a in DIALOGUE_ACTS)
    prompt = f"""Dialogue history:
{render_history(history)}

Target assistant turn:
{target}

User's reply to it:
{user_response if user_response else "(the user did not reply)"}

Break the target assistant turn into conversation particles: the smallest self-contained pieces
of information or action it contains. Each particle has:
- "dialogue_act": one of {acts};
- "mention": the span of the target assistant turn that carries this piece (copied from it);
- "user_feedback": what the user's reply says about this piece, quoted from the reply, or ""
  when the reply says nothing about it.

Think step by step before answering, {reasoning_limit(DECOMPOSITION_WORDS)} in all:
1. Say briefly what happened in the history, what the target turn does and how the user reacted.
2. Count the particles in the target turn.
3. For each particle, say what the user's reply means for it.
4. Give the particles (at most {MAX_PARTICLES}) as a JSON list of objects with exactly the three
   keys above, in that order, on one line of compact JSON, in a ```json code block at the end
   of your answer."""
    return [{"role": "user", "content": prompt}]


def decomposer_reask(problem: str) -> str:
    return (f"Your answer could not be used: {problem}. Give the particles again as a JSON list "
            'of objects with the keys "dialogue_act", "mention" and "user_feedback", on one '
            "line of compact JSON in a ```json code block, after a reasoning "
            f"{reasoning_limit(DECOMPOSITION_WORDS)}.")


def initial_instruction(aspect: FaceAspect) -> str:
    """The seed instruction I of Algorithm 1 (FACE Appendix E.2.4), for one aspect."""
    return (f"Task description: given the dialogue, judge the target particle for "
            f"{aspect.key.replace('_', ' ')}: {aspect.question}\n"
            "Step-by-step instructions:\n"
            "Step 1: Read the dialogue history, the target particle and the user's feedback. "
            "What does the particle convey?\n"
            "Step 2: Read the grading scale. What does each grade mean here?\n"
            "Step 3: Judge the particle. Which grade fits it best?")


def scoring_messages(instruction: str, aspect: FaceAspect, history: Sequence[tuple[str, str]],
                     act: str, mention: str, feedback: str) -> list[dict]:
    prompt = f"""{instruction}

Dialogue history:
{render_history(history)}

Target particle:
- dialogue act: {act}
- mention: {mention}
- user feedback: {feedback if feedback else "(none)"}

Aspect: {aspect.key.replace('_', ' ')} ({aspect.question})
Grades: whole numbers from {aspect.low} (worst) to {aspect.high} (best).

Reason briefly, {reasoning_limit(SCORE_WORDS)}, then end your answer with one line \
"{SCORE_MARKER} N" where N is the grade."""
    return [{"role": "user", "content": prompt}]


def gradient_rewrite_messages(instruction: str, aspect: FaceAspect,
                              history: Sequence[tuple[str, str]], act: str, mention: str,
                              feedback: str, predicted: float, gold: float,
                              gradients: int) -> list[dict]:
    """∇ and δ in one call (FACE Appendix C.2): GRADIENTS critiques, each with its rewrite."""
    level = "turn" if aspect.level == "turn" else "dialogue"
    prompt = f"""You improve evaluation instructions for an automatic judge of recommendation
conversations. The judge scores one conversation particle at a time for
{aspect.key.replace('_', ' ')} ({aspect.question}), grades {aspect.low}–{aspect.high}.

Original instructions:
<instructions>
{instruction}
</instructions>

Dialogue history:
{render_history(history)}

Particle: dialogue act "{act}", mention "{mention}", user feedback "{feedback or '(none)'}".
Predicted particle score: {predicted:.2f}
Human score of the whole {level} that contains the particle: {gold:g}

Examine the original instructions, the predicted particle score and the human {level} score:
- Given the human score, is the predicted particle score reasonable?
- Do the instructions say how to use the particle's information correctly?
- Should the instructions be edited, and how?

Then propose new instructions of about 50 words that fix what you found:
- the dialogue will differ next time, so the instructions must be general;
- the task is to evaluate a particle, not a whole turn or dialogue: say how to use the particle;
- give a "Task description" and explicit "Step 1", "Step 2", … instructions, each with a
  checklist question ("Does the particle …?" or "Is this particle …?").

Give {gradients} different critique(s), each followed by its new instructions, in this form:
<feedback>the critique</feedback>
<instructions>the new instructions</instructions>"""
    return [{"role": "user", "content": prompt}]
