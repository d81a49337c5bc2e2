"""Concord's reference baselines as live systems that run inside the calling process.

They take the same `LiveRequest` and give the same `LiveAnswer` as an HTTP live system
(docs/formats.md §4), so a simulation or an arena treats them exactly like a researcher's
endpoint, and the demo has live systems without any network:

- the seven Trace rankers (Trace, §5 and Appendix F; `evaluation.lib.rankers`): the request's
  history becomes the ranker's conversation, its pool is the request's `candidate_item_ids`, or
  the whole catalogue when the request names none;
- LLM Zero-Shot and RAG-Citation (Trace, Appendix F; `evaluation.lib.llm.responders`) through the
  LLM gateway. An LLM cannot read a whole catalogue, so without candidate ids the pool is
  TF-IDF's best `LLM_SHORTLIST` items for the user's words (said in the adapter's description).

Answers are validated by the contract like any other (`validate_answer`), so an in-process
system cannot slip past a check an HTTP system must pass. And each call has a deadline like an
HTTP one (`Deadlined`): it runs on a bounded pool's thread while its caller waits at most the
system's timeout (docs/operations.md, "Deadlines and hostile answers").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from evaluation.lib.deadlines import BoundedPool, DeadlineExceeded
from evaluation.lib.live.client import LiveCallError
from evaluation.lib.live.contract import LiveAnswer, LiveAnswerError, LiveRequest, validate_answer
from evaluation.lib.llm.adapters import baseline_context, baseline_evidence
from evaluation.lib.llm.gateway import LLMGateway, ModelConfig, UsageMeter
from evaluation.lib.llm.responders import rag_citation_turn, zero_shot_turn
from evaluation.lib.rankers import BASELINES, Baseline, Catalogue, SentenceEncoder
from evaluation.lib.rankers.context import HistoryTurn, TurnContext
from evaluation.lib.rankers.rankers import TfIdf

LLM_ADAPTERS = {
    "llm_zero_shot": ("LLM Zero-Shot", "Trace LLM Zero-Shot as a live system"),
    "rag_citation": ("RAG-Citation", "Trace RAG-Citation as a live system"),
}
LLM_SHORTLIST = 20
RANKED_OUT = 50  # ranked ids a ranker returns (the contract allows 100; PEPPER reads ≤ 50)


@dataclass(frozen=True)
class AdapterInfo:
    key: str
    name: str
    family: str
    description: str
    needs_llm: bool


def adapters() -> list[AdapterInfo]:
    """Every in-process adapter: the seven rankers, then the two LLM baselines."""
    out = [AdapterInfo(cls.key, cls.name, cls.family, cls.description, False)
           for cls in BASELINES.values()]
    out += [AdapterInfo(key, name, "LLM", description + f" (without candidate ids: TF-IDF's "
                        f"best {LLM_SHORTLIST} items are the LLM's candidates)", True)
            for key, (name, description) in LLM_ADAPTERS.items()]
    return out


def _context(request: LiveRequest, pool: Sequence[str]) -> TurnContext:
    history = tuple(HistoryTurn(t.role, t.text, t.action or ("other" if t.role == "user"
                                                            else "recommend"),
                                t.ranked_item_ids[:1] if t.role == "system" else ())
                    for t in request.history)
    history += (HistoryTurn("user", request.utterance, "provide_preference", ()),)
    return TurnContext(request.dialogue_id, request.turn_index, "recommend", history,
                       tuple(pool))


class _InProcess:
    def __init__(self, catalogue: Catalogue):
        self.catalogue = catalogue
        self.review_ids = catalogue.review_ids

    def pool(self, request: LiveRequest) -> tuple[str, ...]:
        return request.candidate_item_ids or tuple(self.catalogue.items)

    def checked(self, line: dict, request: LiveRequest) -> LiveAnswer:
        try:
            return validate_answer(line, item_ids=self.catalogue.items,
                                   review_ids=self.review_ids,
                                   candidate_item_ids=request.candidate_item_ids)
        except LiveAnswerError as error:
            raise LiveCallError(error.kind, str(error)) from None


class RankerSystem(_InProcess):
    """One of the seven Trace rankers answering live requests."""

    def __init__(self, key: str, catalogue: Catalogue, *, encoder: SentenceEncoder | None = None):
        super().__init__(catalogue)
        self.baseline: Baseline = BASELINES[key](catalogue, encoder=encoder)

    def turn(self, request: LiveRequest) -> LiveAnswer:
        line = self.baseline.answer(_context(request, self.pool(request)))
        line["ranked_item_ids"] = line["ranked_item_ids"][:RANKED_OUT]
        return self.checked(line, request)


class LLMSystem(_InProcess):
    """LLM Zero-Shot or RAG-Citation answering live requests through the gateway."""

    def __init__(self, key: str, catalogue: Catalogue, *, gateway: LLMGateway,
                 config: ModelConfig, max_retries: int = 2, meter: UsageMeter | None = None):
        if key not in LLM_ADAPTERS:
            raise KeyError(f"unknown LLM adapter {key!r}")
        super().__init__(catalogue)
        self.key, self.gateway, self.config = key, gateway, config
        self.max_retries, self.meter = max_retries, meter
        self.shortlister = TfIdf(catalogue)

    def pool(self, request: LiveRequest) -> tuple[str, ...]:
        if request.candidate_item_ids:
            return request.candidate_item_ids
        everything = _context(request, tuple(self.catalogue.items))
        return tuple(self.shortlister.rank(everything)[:LLM_SHORTLIST])

    def turn(self, request: LiveRequest) -> LiveAnswer:
        context = baseline_context(_context(request, self.pool(request)), self.catalogue)
        if self.key == "rag_citation":
            outcome = rag_citation_turn(context, baseline_evidence(context, self.catalogue),
                                        gateway=self.gateway, config=self.config,
                                        max_retries=self.max_retries, meter=self.meter)
        else:
            outcome = zero_shot_turn(context, gateway=self.gateway, config=self.config,
                                     max_reasks=self.max_retries, meter=self.meter)
        if outcome.line is None:
            raise LiveCallError("invalid", f"the LLM gave no usable answer: {outcome.failure}",
                                attempts=outcome.attempts)
        line = dict(outcome.line, ranked_item_ids=outcome.line["ranked_item_ids"][:RANKED_OUT])
        return self.checked(line, request)


class Deadlined:
    """SYSTEM's turns, each answered within TIMEOUT_SECONDS or failed as `timeout`: the call
    runs on POOL, so a stuck one (a model still loading, a slow LLM) frees its caller at the
    deadline and keeps only a pool thread, of which there are at most the pool's cap."""

    def __init__(self, system, *, timeout_seconds: float, pool: BoundedPool):
        self.system, self.timeout_seconds, self.pool = system, timeout_seconds, pool

    def turn(self, request: LiveRequest) -> LiveAnswer:
        try:
            return self.pool.call(lambda: self.system.turn(request), self.timeout_seconds)
        except DeadlineExceeded as error:
            raise LiveCallError("timeout", str(error)) from None


def inprocess_system(key: str, catalogue: Catalogue, *, gateway: LLMGateway | None = None,
                     config: ModelConfig | None = None, encoder: SentenceEncoder | None = None,
                     meter: UsageMeter | None = None):
    """The in-process live system called KEY (a ranker key or an LLM adapter key)."""
    if key in BASELINES:
        return RankerSystem(key, catalogue, encoder=encoder)
    if key in LLM_ADAPTERS:
        if gateway is None or config is None:
            raise ValueError(f"the in-process system {key!r} needs an LLM model "
                             "(CONCORD_LLM_MODEL or --model)")
        return LLMSystem(key, catalogue, gateway=gateway, config=config, meter=meter)
    known = ", ".join(a.key for a in adapters())
    raise KeyError(f"unknown in-process system {key!r} (choose from {known})")
