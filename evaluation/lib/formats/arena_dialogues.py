"""An arena's voted battles as conversations, stored the way CRSArena-Dial's are (docs/arena.md,
"Studies from battles"). Pure Python.

`import_public crs_arena_dial` stores CRS Arena's conversations as a `log` benchmark with one
dialogue per conversation and one `log` submission per system (public/crs_arena_dial.py). A
battle is two such conversations: the same messages of the person, each system's own answers.
So each battle side becomes one dialogue, `<battle uuid>-a` or `-b`, holding the person's
messages and that side's answers in order, with one log record in that system's log; the same
`ImportBuilder` builds both, so the two representations cannot drift apart.

An answer that failed (or was interrupted) is kept as a system turn saying so, since the person
saw the failure before voting: `(no answer: timeout)`.
"""

from __future__ import annotations

from evaluation.lib.formats.errors import IssueCollector
from evaluation.lib.formats.public.base import ImportBuilder, PublicImport

DATASET = "arena"
FILE = "(battles)"


def no_answer(error_kind: str) -> str:
    return f"(no answer: {error_kind or 'error'})"


def side_turns(turns: list[dict], side: str) -> list[tuple[str, str]]:
    """(role, text) of one side's conversation: every message of the person and, after each,
    this side's settled answer (a pending answer is left out: the battle is over, so none is)."""
    by_index: dict[int, dict[str, dict]] = {}
    for turn in turns:
        by_index.setdefault(turn["index"], {})[turn["side"]] = turn
    out: list[tuple[str, str]] = []
    for index in sorted(by_index):
        row = by_index[index]
        if "user" not in row:
            continue
        out.append(("user", row["user"]["text"]))
        answer = row.get(side)
        if answer is None or answer["state"] == "pending":
            continue
        text = answer["text"] if answer["state"] == "ok" and answer["text"].strip() else \
            no_answer(answer.get("error_kind", ""))
        out.append(("system", text))
    return out


def battle_dialogues(*, benchmark: dict, battles: list[dict]) -> PublicImport:
    """BENCHMARK: {name, slug, version, domain, description, license, citation}. BATTLES, in
    order: {uuid, arena, system_a, system_b (system names), scenario, turns: [{index, side:
    user|a|b, state: ok|error|pending, text, error_kind}]}. Returns the `log` benchmark (one
    dialogue per side) and one log per system; raises FormatError listing every problem."""
    issues = IssueCollector()
    builder = ImportBuilder(benchmark, {}, issues)
    for position, battle in enumerate(battles):
        for side in ("a", "b"):
            system = battle[f"system_{side}"]
            turns = side_turns(battle["turns"], side)
            if not turns:
                issues.add(FILE, None, f"$[{position}]", f"battle {battle['uuid']} has no "
                           "message")
                break
            dialogue_id = f"{battle['uuid']}-{side}"
            scenario = {"source_dataset": DATASET, "arena": battle["arena"],
                        "battle": str(battle["uuid"]), "side": side, "system": system,
                        "conv_id": dialogue_id,
                        "scenario_dialogue_id": (battle.get("scenario") or {}).get(
                            "dialogue_id", "")}
            dialogue = builder.dialogue(dialogue_id, turns, scenario, file=FILE,
                                        path=f"$[{position}].{side}")
            if dialogue is not None:
                builder.log(system, dialogue, {"arena": battle["arena"],
                                               "battle": str(battle["uuid"]), "side": side})
    return builder.finish()
