"""One simulated conversation between a user simulator and a live system.

`simulate_dialogue` alternates user utterances and live-system answers for up to `turns` system
turns (PEPPER, §3.1: up to 20), and returns either the whole dialogue or a failure. A failure
(the system down, too slow, hostile, unknown ids; the simulator's LLM unusable; anything that
raised) keeps no turn and never ends the batch:
nothing partial of a failed dialogue is ever stored. The timings separate the time spent in the
live system and in the simulator's LLM calls from Concord's own work (the overhead that
`bench_simulation` measures).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from evaluation.lib.live.client import LiveCallError
from evaluation.lib.live.contract import HistoryTurn, LiveAnswer, LiveRequest
from evaluation.lib.simulators.simulators import CONTEXT, Simulator, SimulatorError
from evaluation.lib.simulators.users import ItemCard, SimUser

REQUEST_TOP_K = 50  # PEPPER reads up to K = 50
CANCELLED = "cancelled"  # the error kind of a dialogue its run's cancellation cut short


@dataclass
class DialogueOutcome:
    user_id: str  # the user's opaque id (users.opaque_user_id): what the system saw
    source_dialogue_id: str  # the benchmark dialogue it simulates: never leaves the server
    target_item_ids: tuple[str, ...]
    turns: list[dict] = field(default_factory=list)  # bundle turn format + ranked_item_ids
    rankings: list[tuple[str, ...]] = field(default_factory=list)
    hidden: dict[str, Any] = field(default_factory=dict)
    error_kind: str = ""
    error: str = ""
    system_seconds: float = 0.0
    llm_seconds: float = 0.0
    total_seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.error_kind


def system_rankings(turns) -> tuple[tuple[str, ...], ...]:
    """The live system's lists of a stored dialogue, turn by turn (dataset-context turns, which
    the system did not say, left out)."""
    return tuple(tuple(t["ranked_item_ids"]) for t in turns
                 if t["role"] == "system" and t.get("action") != CONTEXT)


def _turn(index: int, role: str, text: str, action: str, *, ranked=(), citations=()) -> dict:
    turn = {"index": index, "role": role, "text": text, "action": action,
            "referenced_item_ids": list(ranked[:1]), "citations": [dict(c) for c in citations],
            "gold_item_ids": [], "alternative_item_ids": []}
    if role == "system":
        turn["ranked_item_ids"] = list(ranked)
    return turn


def simulate_dialogue(user: SimUser, simulator: Simulator, system, *, benchmark: str,
                      opaque_id: str, turns: int, cards: Mapping[str, ItemCard],
                      pool: tuple[str, ...] = (),
                      clock: Callable[[], float] = time.perf_counter,
                      stop: Callable[[], bool] | None = None,
                      prepared: Mapping[str, Any] | None = None) -> DialogueOutcome:
    """Talk until TURNS system turns were answered or the simulator ends the dialogue. STOP,
    asked before every turn, ends the dialogue as `cancelled` (nothing of it is kept): a
    cancelled run stops within one turn of each dialogue in flight. The system knows the
    dialogue by OPAQUE_ID only, never by the id of the benchmark dialogue it simulates.
    PREPARED: the user's general preferences from the preparation step (a simulator that
    prepares derives them itself without). A simulator's dataset context (iEvaLM) is replayed
    first as turns of action `context`; they count as no system turn. When the dialogue ends,
    the simulator's `finish` scores are kept with its hidden part."""
    outcome = DialogueOutcome(opaque_id, user.user_id, user.target_item_ids)
    started = clock()
    history: list[HistoryTurn] = []
    rows: list[dict] = []
    state = None
    scores: dict[str, Any] = {}
    try:
        target = user.target_view if simulator.target_based else None
        state = simulator.start(user.history, target, prepared)
        for role, text in simulator.context(state):
            rows.append(_turn(len(rows), role, text, CONTEXT))
            history.append(HistoryTurn(role, text, (), CONTEXT if role == "user" else ""))
        utterance = simulator.opening(state)
        answer: LiveAnswer | None = None
        for t in range(turns):
            if stop is not None and stop():
                outcome.error_kind, outcome.error = CANCELLED, f"cancelled before turn {t + 1}"
                break
            rows.append(_turn(len(rows), "user", utterance.text, utterance.action))
            request = LiveRequest(benchmark, opaque_id, len(rows), tuple(history),
                                  utterance.text, pool, REQUEST_TOP_K)
            history.append(HistoryTurn("user", utterance.text, (), utterance.action))
            called = clock()
            answer = system.turn(request)
            outcome.system_seconds += clock() - called
            ranked = answer.ranked_item_ids
            rows.append(_turn(len(rows), "system", answer.response,
                              "recommend" if ranked else "other", ranked=ranked,
                              citations=answer.citations))
            history.append(HistoryTurn("system", answer.response, ranked))
            outcome.rankings.append(ranked)
            if t == turns - 1:
                break
            shown = [cards[i] for i in ranked[:simulator.shown_k] if i in cards]
            utterance = simulator.respond(state, answer, shown)
            if utterance.done:
                rows.append(_turn(len(rows), "user", utterance.text, utterance.action))
                break
        if outcome.ok and answer is not None:
            scores = simulator.finish(state, answer,
                                      [cards[i] for i in answer.ranked_item_ids if i in cards])
    except LiveCallError as error:
        outcome.error_kind, outcome.error = error.kind, f"turn {len(rows)}: {error.message}"
    except SimulatorError as error:
        outcome.error_kind, outcome.error = "simulator", str(error)
    except Exception as error:  # noqa: BLE001 - one dialogue's crash never ends the batch
        outcome.error_kind = "crashed"
        outcome.error = f"turn {len(rows)}: {type(error).__name__}: {error}"
    outcome.total_seconds = clock() - started
    outcome.llm_seconds = state.llm_seconds if state is not None else 0.0
    if not outcome.ok:
        outcome.rankings = []
        return outcome  # nothing partial: a failed dialogue keeps no turn
    outcome.turns = rows
    outcome.hidden = {"target_item_ids": list(user.target_item_ids),
                      "preferences": state.preferences, "reflections": state.reflections,
                      **scores}
    return outcome
