"""The non-LLM Trace suite on simulated dialogues (docs/simulation.md, "Trace metrics").

A simulated dialogue has no reference conversation, so the suite scores it against what the
simulation knows: every system turn that showed items is a `recommend` turn whose gold is the
simulated user's hidden target items (iEvaLM: the one target; PEPPER and the template simulator:
the held-out items), the user turns keep their actions (a `reject_and_refine` starts a
rejection-recovery window), and the system's own answer — text, ranking, quoted reviews — is the
submitted turn. Items are ranked from the whole catalogue (`open` pool).

What applies: accuracy against the targets, grounding (the quotes against the cited reviews),
recovery (TSR, T2R, rejection recovery) and practical value (the recommended items' places and
prices). What does not: the text metrics (BLEU, ROUGE compare with a reference response, and
there is none), which `SIMULATED_SUITE_OPTIONS` switches off; entailment runs only where an NLI
model is configured. Pure: no Django.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from evaluation.lib.metrics.suite import OPEN
from evaluation.lib.metrics.types import Citation, ReferenceDialogue, ReferenceTurn, SubmittedTurn
from evaluation.lib.simulators.simulators import CONTEXT

SIMULATED_SPLIT = "simulated"
# SuiteConfig overrides of a simulation's Trace run (JSON: stored in the run's configuration)
SIMULATED_SUITE_OPTIONS = {"text_metrics": False, "pool_mode": OPEN}
RECOMMEND = "recommend"


def simulated_trace_inputs(dialogues: Sequence[tuple[str, Sequence[str], Sequence[Mapping]]]
                           ) -> tuple[list[ReferenceDialogue], list[SubmittedTurn]]:
    """(reference dialogues, submitted turns) for the suite from (user id, target item ids,
    turns in the bundle's turn format with the system's `ranked_item_ids`) per dialogue."""
    references, submitted = [], []
    for user_id, targets, turns in dialogues:
        rows = []
        for turn in turns:
            if turn.get("action") == CONTEXT:
                continue  # the dataset's turns an iEvaLM dialogue starts from: not the system's
            ranked = tuple(turn.get("ranked_item_ids") or ())
            if turn["role"] == "system":
                rows.append(ReferenceTurn(turn["index"], "system", "",
                                          RECOMMEND if ranked else "other",
                                          gold_item_ids=tuple(targets)))
                submitted.append(SubmittedTurn(
                    user_id, turn["index"], turn["text"], ranked,
                    tuple(Citation(c["label"], c["review_id"], c.get("quote") or "")
                          for c in turn.get("citations") or ())))
            else:
                rows.append(ReferenceTurn(turn["index"], "user", turn["text"],
                                          turn.get("action") or "other"))
        references.append(ReferenceDialogue(user_id, SIMULATED_SPLIT, turns=tuple(rows)))
    return references, submitted
