"""The public part of a benchmark (formats.md §1, "Public download"): what an outside researcher
downloads to build a submission.

Every split but `hidden` is given in full (its gold is public by design). A `hidden` dialogue is
reduced to the contexts a system must answer (protocol `turn`): the candidate pool in id order
(the stored order could put the gold first), the actions of every turn (they decide which turns
are answered), and the text of the user turns and unanswered system turns before the last
answered turn. Everything that names or points at an answer is dropped: gold and alternative
items, referenced items and citations of every turn, target and seen items, the scenario (it
describes the simulated user's hidden preferences, as the Trace paper's reference contexts
leave it out, Appendix F) and the reference text of answered turns and of turns after the last
answered one. The result is still a valid bundle, so the same reader, validator and baselines
work on it.

Pure Python: nothing here imports Django.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Mapping

from evaluation.lib.formats.bundle import Bundle, bundle_files
from evaluation.lib.formats.submission import reference_dialogue
from evaluation.lib.metrics.suite import evaluated_turn_keys

HIDDEN = "hidden"
HIDDEN_TEXT = "[hidden: the reference text of this turn is not public]"
# Every member's time stamp: the earliest a .zip can hold, so the same bundle always gives the
# same bytes (and the same checksum) whenever it is built.
ZIP_TIME = (1980, 1, 1, 0, 0, 0)


def hidden_context(record: Mapping) -> dict:
    """A hidden dialogue as the contexts its answered turns are asked in, with no gold."""
    answered = {index for _, index in evaluated_turn_keys([reference_dialogue(record)])}
    last = max(answered, default=-1)
    turns = []
    for turn in record["turns"]:
        index = turn["index"]
        visible = index < last and index not in answered
        turns.append({"index": index, "role": turn["role"],
                      "text": turn["text"] if visible else HIDDEN_TEXT,
                      "action": turn["action"], "referenced_item_ids": [], "citations": [],
                      "gold_item_ids": [], "alternative_item_ids": []})
    return {"id": record["id"], "split": record["split"], "scenario": {},
            "candidate_item_ids": sorted(record["candidate_item_ids"]), "turns": turns}


def public_bundle(bundle: Bundle) -> Bundle:
    """BUNDLE with its hidden dialogues reduced to their contexts (see the module docstring)."""
    return Bundle(
        benchmark=dict(bundle.benchmark),
        items=list(bundle.items),
        reviews=list(bundle.reviews),
        dialogues=[hidden_context(d) if d["split"] == HIDDEN else d for d in bundle.dialogues],
    )


def bundle_zip(bundle: Bundle, folder: str) -> bytes:
    """BUNDLE in canonical form as a .zip holding one folder (what `import_benchmark` reads),
    byte for byte the same for the same bundle: no member carries the time it was built."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, text in bundle_files(bundle).items():
            member = zipfile.ZipInfo(f"{folder}/{name}", date_time=ZIP_TIME)
            member.external_attr = 0o644 << 16  # rw-r--r-- once unpacked
            archive.writestr(member, text, compress_type=zipfile.ZIP_DEFLATED)
    return buffer.getvalue()
