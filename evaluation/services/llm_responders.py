"""The LLM baselines of Trace (Appendix F) as stored `turn` submissions.

`llm_baseline_submission_create` answers every turn a submission must answer with LLM
Zero-Shot (dialogue + candidate cards) or RAG-Citation (plus the candidates' review sentences
closest to the user's words; the answer must quote ten or more words verbatim, with bounded
retries), through the one gateway and its database cache, and stores the result under the
baseline's system (one system per baseline and model) after `submission_create` validated it.

A turn whose answers stay unusable is not filled in by another method (the Trace paper falls back to
popularity): it is stored as an explicit non-answer, an empty ranking with the text
`NO_ANSWER`, which every metric scores as a miss, and it is counted and listed in the report.
"""

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from django.utils.text import slugify

from evaluation.lib.formats.submission import write_turn_submission
from evaluation.lib.llm.adapters import baseline_context, baseline_evidence
from evaluation.lib.llm.responders import rag_citation_turn, zero_shot_turn
from evaluation.lib.progress import Progress, no_progress
from evaluation.lib.rankers.context import Catalogue, turn_contexts
from evaluation.selectors.benchmarks import benchmark_bundle
from evaluation.services.llm_models import RunUsage, llm_gateway, model_config
from evaluation.services.submissions import submission_create, system_get_or_create_baseline


@dataclass(frozen=True)
class LLMBaseline:
    key: str
    name: str
    description: str


LLM_BASELINES = {
    "llm_zero_shot": LLMBaseline(
        "llm-zero-shot", "LLM Zero-Shot",
        "Trace LLM Zero-Shot: the dialogue and the candidate cards go to an LLM, which ranks the "
        "candidates and writes the next turn."),
    "rag_citation": LLMBaseline(
        "rag-citation", "RAG-Citation",
        "Trace RAG-Citation: like Zero-Shot, plus the ten candidate review sentences closest to "
        "the user's words; the answer must quote one of them verbatim (ten or more words)."),
}
NO_ANSWER = "(no answer: the LLM baseline failed on this turn)"
TURNS_PER_CHUNK = 20


@dataclass
class LLMBaselineReport:
    submission: object
    turns: int
    failures: dict[str, str] = field(default_factory=dict)  # "dialogue#turn" -> reason
    usage: dict = field(default_factory=dict)
    lines: list = field(default_factory=list)  # a trial's answers (stored submissions: [])


def llm_baseline_submission_create(*, benchmark, name: str, model: dict,
                                   splits: list[str] | None = None, user=None,
                                   max_retries: int = 2, limit: int | None = None,
                                   dialogues: Sequence[str] = (),
                                   progress: Progress = no_progress) -> LLMBaselineReport:
    """Answer BENCHMARK's turns with LLM baseline NAME and store the validated submission.

    A cheap trial answers only the first LIMIT turns, or the turns of DIALOGUES (or the first
    LIMIT of those), and stores nothing: the report carries their answers (`lines`) and usage,
    and no submission."""
    if limit is not None and limit < 1:
        raise ValueError("--limit must be at least 1")
    baseline = LLM_BASELINES[name]
    bundle = benchmark_bundle(benchmark=benchmark)
    catalogue = Catalogue.from_records(bundle.items, bundle.reviews)
    contexts = turn_contexts(bundle.dialogues, catalogue=catalogue, item_records=bundle.items,
                             splits=splits)
    gateway, config, usage = llm_gateway(), model_config(model), RunUsage()
    config.resolved_api_key()  # a missing key fails here, before any call
    if dialogues:
        unknown = sorted(set(dialogues) - {turn.dialogue_id for turn in contexts})
        if unknown:
            raise ValueError(f"no turn to answer in dialogue{'s' if len(unknown) > 1 else ''} "
                             f"{', '.join(unknown)} (not in the benchmark"
                             f"{' or not in the chosen splits' if splits else ''})")
        contexts = [turn for turn in contexts if turn.dialogue_id in set(dialogues)]
    trial = limit is not None or bool(dialogues)
    if limit is not None:
        contexts = contexts[:limit]

    def answer(turn):
        context = baseline_context(turn, catalogue)
        meter = usage.stage(name)
        if name == "rag_citation":
            return rag_citation_turn(context, baseline_evidence(context, catalogue),
                                     gateway=gateway, config=config, max_retries=max_retries,
                                     meter=meter)
        return zero_shot_turn(context, gateway=gateway, config=config, max_reasks=max_retries,
                              meter=meter)

    lines, failures = [], {}
    for start in range(0, len(contexts), TURNS_PER_CHUNK):
        chunk = contexts[start:start + TURNS_PER_CHUNK]
        for turn, outcome in zip(chunk, gateway.map(answer, chunk), strict=True):
            if outcome.line is None:
                failures[f"{turn.dialogue_id}#{turn.turn_index}"] = outcome.failure or "no answer"
            # The placeholder keeps the submission complete; metadata.no_answer makes the
            # metrics treat the turn as missing instead of scoring the placeholder's words.
            lines.append(outcome.line or {"dialogue_id": turn.dialogue_id,
                                          "turn_index": turn.turn_index, "response": NO_ANSWER,
                                          "ranked_item_ids": [], "citations": [],
                                          "metadata": {"no_answer": True}})
        progress(f"{baseline.key} answers", min(start + TURNS_PER_CHUNK, len(contexts)),
                 len(contexts))
    if trial:
        return LLMBaselineReport(None, len(lines), failures,
                                 usage.summary(model=config.model, units=len(lines)), lines)
    system = system_get_or_create_baseline(
        key=f"{baseline.key}-{slugify(config.model)}"[:80],
        name=f"{baseline.name} ({config.model})", family="LLM", description=baseline.description)
    note = (f"Concord LLM baseline {baseline.name} with {config.model}; "
            f"{len(failures)} of {len(lines)} turns unanswered")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"{baseline.key}.jsonl"
        write_turn_submission(lines, path)
        submission = submission_create(system=system, benchmark=benchmark, path_or_file=path,
                                       user=user, splits=splits, note=note[:300])
    return LLMBaselineReport(submission, len(lines), failures,
                             usage.summary(model=config.model, units=len(lines)))

