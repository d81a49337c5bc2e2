"""CRSArena-Dial: 474 conversations between people and 9 CRSs with a satisfied/frustrated label.

Source: `data/crs_arena_dial_open.json` and `data/crs_arena_dial_closed.json` of
https://github.com/iai-group/crsarena-dial (Bernard, Joko, Hasibi and Balog, "CRS Arena:
Crowdsourced Benchmarking of Conversational Recommender Systems", WSDM 2025).
Licence: none published (no licence file in the repository).

Published shape (DialogueKit): a JSON list of {"conversation ID": "<crs>_<dataset>_<user id>",
agent: {id: "<crs>_<dataset>", type}, user: {id, type}, conversation: [{participant:
USER|AGENT, utterance, "utterance ID"}], metadata: {sentiment: satisfied|frustrated}}. The
open file comes from the public arena, the closed one from Prolific workers. Recommendation
lists are inline text ("I would recommend the following items: 1: …"); no item ids exist, so
logs carry text only (no recommended_item_ids and no catalogue).

The pairwise votes, `votes_open.csv` and `votes_closed.csv` beside the dialogue files, are read
by `crs_arena_votes.py` (open first, then closed, each in file order) into `PublicImport.votes`.

Imported as `log` submissions per system (agent id) on a `log` benchmark holding one dialogue
per conversation (id = conversation ID, the same id CRSArena-Eval uses as conv_id), and one
dialogue label `satisfaction` (nominal) whose annotator is the conversation's own user: the
label is that person's verdict on their conversation.
"""

from collections import Counter
from pathlib import Path

from evaluation.lib.formats.errors import IssueCollector
from evaluation.lib.formats.public.base import (
    DEFAULT_MAX_BYTES,
    ImportBuilder,
    PublicImport,
    expect,
    field_spec,
    load_json,
    locate,
)
from evaluation.lib.formats.public.crs_arena_votes import attach_satisfaction, read_votes

FILES = {"crs_arena_dial_open.json": "open", "crs_arena_dial_closed.json": "closed"}
DATASETS = ("redial", "opendialkg")
ROLES = {"USER": "user", "AGENT": "system"}
SENTIMENTS = ["satisfied", "frustrated"]
FIELDS = {
    "satisfaction": field_spec(
        "dialogue", None, None, "nominal",
        "The user's own verdict after the conversation: satisfied or frustrated "
        "(metadata.sentiment)", values=SENTIMENTS),
}

BENCHMARK = {
    "name": "CRSArena-Dial",
    "slug": "crs-arena-dial",
    "version": "1.0",
    "domain": "movies",
    "description": "474 conversations between people and 9 conversational recommender systems "
                   "collected with CRS Arena (open and closed crowdsourcing), each with the "
                   "user's satisfied/frustrated verdict. Imported from iai-group/crsarena-dial.",
    "license": "none stated by the source (no licence file)",
    "citation": "Nolwenn Bernard, Hideaki Joko, Faegheh Hasibi and Krisztian Balog. CRS Arena: "
                "Crowdsourced Benchmarking of Conversational Recommender Systems. WSDM 2025.",
}


def import_crs_arena_dial(path: Path, *, max_bytes: int = DEFAULT_MAX_BYTES) -> PublicImport:
    """PATH: the folder holding the open and/or closed file, or one of the files."""
    path = Path(path)
    sources = locate(path, FILES, dataset="CRSArena-Dial")
    issues = IssueCollector()
    builder = ImportBuilder(BENCHMARK, dict(FIELDS), issues)
    counts: Counter = Counter()
    sentiments: dict[tuple[str, str], str] = {}
    for name, file_path in sources.items():
        # A renamed file still imports; its setting is then unknown.
        setting = FILES.get(name) or next((s for s in ("closed", "open") if s in name), None)
        data = load_json(file_path, max_bytes, issues)
        if data is None or not expect(data, "array", issues, name, "$"):
            continue
        for position, conversation in enumerate(data):
            _conversation(builder, conversation, name, f"$[{position}]", setting, counts,
                          sentiments)
    votes, vote_files = read_votes(path, max_bytes, issues) if path.is_dir() else ([], [])
    sides = attach_satisfaction(votes, sentiments)
    result = builder.finish()
    result.votes = votes
    result.notes += [
        f"{len(result.bundle.dialogues)} conversations of {len(result.logs)} systems from "
        f"{', '.join(sources)}; satisfaction: "
        + ", ".join(f"{counts[s]} {s}" for s in SENTIMENTS) + ".",
        "satisfaction's annotator_id is the conversation's user id (their own verdict).",
        "Recommendation lists are inline text; logs carry no recommended_item_ids.",
    ]
    if vote_files:
        result.notes.append(f"{len(votes)} pairwise votes from {', '.join(vote_files)}, in "
                            "that order (CRS Arena's), each file in row order; "
                            f"{sides} of their {2 * len(votes)} sides have their "
                            "conversation's satisfied/frustrated sentiment.")
    else:
        result.notes.append("No vote files (votes_open.csv, votes_closed.csv) beside the "
                            "dialogues: no arena votes.")
    if counts["unlabelled"]:
        result.notes.append(f"{counts['unlabelled']} conversations have no sentiment; "
                            "imported without a satisfaction label.")
    return result


def _conversation(builder: ImportBuilder, conversation, file: str, path: str,
                  setting: str | None, counts: Counter,
                  sentiments: dict[tuple[str, str], str]) -> None:
    issues = builder.issues
    if not expect(conversation, "object", issues, file, path):
        return
    for key, kind in (("conversation ID", "string"), ("agent", "object"), ("user", "object"),
                      ("conversation", "array")):
        if key not in conversation:
            issues.add(file, None, f"{path}.{key}", "required field is missing")
            return
        if not expect(conversation[key], kind, issues, file, f"{path}.{key}"):
            return
    conv_id = conversation["conversation ID"]
    system, user = conversation["agent"].get("id"), conversation["user"].get("id")
    if not (expect(system, "string", issues, file, f"{path}.agent.id")
            and expect(user, "string", issues, file, f"{path}.user.id")):
        return
    crs, _, dataset = system.rpartition("_")
    if dataset not in DATASETS or not crs:
        issues.add(file, None, f"{path}.agent.id", "expected <crs>_<dataset> with dataset "
                   f"{' or '.join(DATASETS)}, got {system!r}")
        return
    turns = _turns(issues, conversation["conversation"], file, f"{path}.conversation")
    if turns is None:
        return
    scenario = {"source_dataset": dataset, "system": system, "crs": crs, "conv_id": conv_id,
                "setting": setting}
    dialogue = builder.dialogue(conv_id, turns, scenario, file=file,
                                path=f"{path}.conversation ID")
    if dialogue is None:
        return
    builder.log(system, dialogue, {"source_dataset": dataset, "setting": setting,
                                   "user_id": user})
    builder.unit("dialogue", conv_id, conv_id, system=system, source_dataset=dataset)
    metadata = conversation.get("metadata") or {}
    if not expect(metadata, "object", issues, file, f"{path}.metadata"):
        return
    sentiment = metadata.get("sentiment")
    if sentiment is None:
        counts["unlabelled"] += 1
        return
    if builder.label("dialogue", conv_id, user, "satisfaction", sentiment, file=file,
                     path=f"{path}.metadata.sentiment"):
        counts[sentiment] += 1
        sentiments[(system, user)] = sentiment


def _turns(issues, source: list, file: str, path: str) -> list[tuple[str, str]] | None:
    if not source:
        issues.add(file, None, path, "expected at least 1 utterance")
        return None
    turns = []
    for index, utterance in enumerate(source):
        where = f"{path}[{index}]"
        if not expect(utterance, "object", issues, file, where):
            return None
        for key in ("participant", "utterance"):
            if key not in utterance:
                issues.add(file, None, f"{where}.{key}", "required field is missing")
                return None
        role = ROLES.get(utterance["participant"])
        if role is None:
            issues.add(file, None, f"{where}.participant", f"expected one of "
                       f"{', '.join(ROLES)}, got {utterance['participant']!r}")
            return None
        if not expect(utterance["utterance"], "string", issues, file, f"{where}.utterance"):
            return None
        turns.append((role, utterance["utterance"]))
    return turns
