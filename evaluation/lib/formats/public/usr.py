"""USR-PersonaChat and USR-TopicalChat: responses of several systems rated by 3 annotators each.

Source: `data/usr_percona_chat.json` (sic) and `data/usr_topical_chat.json` of
https://github.com/SmartDataAnalytics/proxy_indicators, a copy of the annotations released by
Mehri and Eskenazi, "USR: An Unsupervised and Reference Free Evaluation Metric for Dialog
Generation", ACL 2020 (http://shikib.com/usr).
Licence: none published with the copy (no licence file in the repository).

Published shape: a JSON list of 60 contexts per file, {context: the dialogue history, one
utterance per line, fact: the persona (PersonaChat) or knowledge snippet (TopicalChat),
annotators: [3 names], responses: [{response, model, Understandable, Natural, Maintains Context,
Engaging, Uses Knowledge, Overall: [one rating per annotator, in `annotators` order]}]}.

Imported as a finished study (formats.md §4). Each rated response is one turn unit: the bundle
holds one dialogue per (context, model), `<subset>-<context index>:<model slug>`, whose turns
are the context followed by the response, and the unit id is `<dialogue id>#<turn index of the
response>` (the `conv_id#turn_ind` convention of CRSArena-Eval). The context index is the
position in the published file, so ids are stable for a given release. Roles alternate
backwards from the response, which is the "system" turn; `logs` has one log per response under
its model's name, so metrics can score the same units. Annotator ids are the published names.
"""

import re
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

FILES = {"usr_percona_chat.json": "personachat", "usr_topical_chat.json": "topicalchat"}
# source criterion -> (field name, spec)
CRITERIA = {
    "Understandable": ("understandable", field_spec(
        "turn", 0, 1, "ordinal", "Is the response understandable given the context? (0-1)")),
    "Natural": ("natural", field_spec(
        "turn", 1, 3, "ordinal", "Is the response naturally written, like a person? (1-3)")),
    "Maintains Context": ("maintains_context", field_spec(
        "turn", 1, 3, "ordinal",
        "Does the response serve as a valid continuation of the context? (1-3)")),
    "Engaging": ("engaging", field_spec(
        "turn", 1, 3, "ordinal", "Is the response dull or interesting? (1-3)")),
    "Uses Knowledge": ("uses_knowledge", field_spec(
        "turn", 0, 1, "ordinal",
        "Does the response use the fact (persona / knowledge snippet)? (0-1)")),
    "Overall": ("overall", field_spec(
        "turn", 1, 5, "ordinal", "Overall impression of the response (1-5)")),
}

BENCHMARK = {
    "name": "USR (PersonaChat, TopicalChat)",
    "slug": "usr",
    "version": "1.0",
    "domain": "open-domain chat",
    "description": "USR human ratings: responses of several dialogue systems and people to "
                   "60 PersonaChat and 60 TopicalChat contexts, each rated by 3 annotators on "
                   "understandable, natural, maintains context, engaging, uses knowledge and "
                   "overall. Imported from SmartDataAnalytics/proxy_indicators.",
    "license": "none stated by the source copy (no licence file)",
    "citation": "Shikib Mehri and Maxine Eskenazi. USR: An Unsupervised and Reference Free "
                "Evaluation Metric for Dialog Generation. ACL 2020.",
}


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def import_usr(path: Path, *, max_bytes: int = DEFAULT_MAX_BYTES) -> PublicImport:
    """PATH: the folder holding one or both files, or one of the files."""
    path = Path(path)
    sources = locate(path, FILES, dataset="USR")
    issues = IssueCollector()
    builder = ImportBuilder(BENCHMARK, {name: spec for name, spec in CRITERIA.values()}, issues)
    subsets = []
    for name, file_path in sources.items():
        data = load_json(file_path, max_bytes, issues)
        if data is None or not expect(data, "array", issues, name, "$"):
            continue
        subset = FILES.get(name) or _subset_of(name, data)
        subsets.append(f"{subset} ({len(data)} contexts)")
        for position, context in enumerate(data):
            _context(builder, context, name, position, subset)
    result = builder.finish()
    result.notes += [
        f"Imported {', '.join(subsets)}: {len(result.units)} rated responses of "
        f"{len(result.logs)} models, {len(result.annotators())} annotators.",
        "Unit id = '<subset>-<context index>:<model slug>#<turn index of the response>'; the "
        "context index is the position in the published file.",
    ]
    return result


def _subset_of(name: str, data: list) -> str:
    """A renamed file: PersonaChat facts are persona lines, TopicalChat facts are not."""
    if "persona" in name or "percona" in name:
        return "personachat"
    if "topical" in name:
        return "topicalchat"
    first = data[0] if data and isinstance(data[0], dict) else {}
    return "personachat" if "your persona:" in str(first.get("fact", "")) else "topicalchat"


def _context(builder: ImportBuilder, context, file: str, position: int, subset: str) -> None:
    issues = builder.issues
    path = f"$[{position}]"
    if not expect(context, "object", issues, file, path):
        return
    for key, kind in (("context", "string"), ("annotators", "array"), ("responses", "array")):
        if key not in context:
            issues.add(file, None, f"{path}.{key}", "required field is missing")
            return
        if not expect(context[key], kind, issues, file, f"{path}.{key}"):
            return
    annotators = context["annotators"]
    if not annotators or not all(isinstance(a, str) and a for a in annotators) \
            or len(set(annotators)) != len(annotators):
        issues.add(file, None, f"{path}.annotators", "expected distinct annotator names, got "
                   f"{annotators!r}")
        return
    # TopicalChat separates utterances with " \n " and ends with a blank line.
    history = [line.strip() for line in context["context"].split("\n") if line.strip()]
    fact = context.get("fact")
    for number, response in enumerate(context["responses"]):
        _response(builder, response, file, f"{path}.responses[{number}]", subset, position,
                  history, fact, annotators)


def _response(builder, response, file, path, subset, position, history, fact,
              annotators) -> None:
    issues = builder.issues
    if not expect(response, "object", issues, file, path):
        return
    for key in ("response", "model", *CRITERIA):
        if key not in response:
            issues.add(file, None, f"{path}.{key}", "required field is missing")
            return
    if not (expect(response["response"], "string", issues, file, f"{path}.response")
            and expect(response["model"], "string", issues, file, f"{path}.model")):
        return
    model = response["model"]
    dialogue_id = f"{subset}-{position}:{slug(model)}"
    # The response closes the dialogue as the system turn; earlier turns alternate roles.
    count = len(history)
    turns = [("system" if (count - index) % 2 == 0 else "user", text)
             for index, text in enumerate(history)]
    turns.append(("system", response["response"].strip()))
    scenario = {"source_dataset": f"usr_{subset}", "system": model, "context_index": position}
    if isinstance(fact, str):
        scenario["fact"] = fact.strip()
    dialogue = builder.dialogue(dialogue_id, turns, scenario, file=file, path=f"{path}.model")
    if dialogue is None:
        return
    builder.log(model, dialogue, {"source_dataset": f"usr_{subset}", "context_index": position})
    unit_id = f"{dialogue_id}#{count}"
    builder.unit("turn", unit_id, dialogue_id, turn_index=count, system=model,
                 source_dataset=f"usr_{subset}")
    for criterion, (name, _) in CRITERIA.items():
        ratings = response[criterion]
        where = f"{path}.{criterion}"
        if not expect(ratings, "array", issues, file, where):
            continue
        if len(ratings) != len(annotators):
            issues.add(file, None, where, f"expected {len(annotators)} ratings (one per "
                       f"annotator), got {len(ratings)}")
            continue
        for annotator, value in zip(annotators, ratings, strict=True):
            if value is not None:  # null = this annotator did not rate it
                builder.label("turn", unit_id, annotator, name, value, file=file,
                              path=f"{where}[{annotators.index(annotator)}]")
