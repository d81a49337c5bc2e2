"""A hand-written `turn` submission for the tiny bundle (tests/support/bundles.py), with the
values of its Trace metrics worked out by hand.

Answered turns of the tiny bundle: d1#1 and d1#3 (train; #3 also follows a rejection),
d2#1 (test), d3#1 (hidden).

d1#1  ranked r2, r1 (gold r1): Recall@1 0, MRR 1/2; quote "The crab cakes were incredible"
      cites v1 verbatim: GS 1.
d1#3  ranked r2, r1 (gold r2): Recall@1 1, MRR 1; "the broth is rich" cites v3 verbatim
      (partial_ratio 100), "best dumplings in the whole city" does not match v3 (46.9): GS 1/2.
d2#1  ranked h1, a1 (gold h1): Recall@1 1, MRR 1; no quote, so GS is 1 vacuously.
d3#1  ranked r1, r2, h1 (gold r1): Recall@1 1, MRR 1; "worth it for the view" cites v2
      verbatim: GS 1.

System means over the four turns: Recall@1 = 3/4 = 0.75, MRR = 3.5/4 = 0.875,
GS = 3.5/4 = 0.875. TSR (per dialogue): d1 hits on turn 3, d2 and d3 on their only turn → 1.
"""

import json
from pathlib import Path

TINY_LINES = [
    {"dialogue_id": "d1", "turn_index": 1,
     "response": 'Harbor Grill it is: "The crab cakes were incredible" [R1].',
     "ranked_item_ids": ["r2", "r1"],
     "citations": [{"label": "R1", "review_id": "v1", "quote": "The crab cakes were incredible"}]},
    {"dialogue_id": "d1", "turn_index": 3,
     "response": ('Noodle Nook: "the broth is rich" [R1] and '
                  '"best dumplings in the whole city" [R2].'),
     "ranked_item_ids": ["r2", "r1"],
     "citations": [{"label": "R1", "review_id": "v3"}, {"label": "R2", "review_id": "v3"}]},
    {"dialogue_id": "d2", "turn_index": 1, "response": "Old City Inn has free parking.",
     "ranked_item_ids": ["h1", "a1"], "citations": []},
    {"dialogue_id": "d3", "turn_index": 1,
     "response": 'Harbor Grill: "worth it for the view" [R1].',
     "ranked_item_ids": ["r1", "r2", "h1"],
     "citations": [{"label": "R1", "review_id": "v2", "quote": "worth it for the view"}]},
]
EXPECTED = {"recall@1": 0.75, "mrr": 0.875, "gs": 0.875, "tsr": 1.0}


def tiny_lines() -> list[dict]:
    return json.loads(json.dumps(TINY_LINES))


def write_lines(path: Path, lines: list[dict] | None = None) -> Path:
    path = Path(path)
    path.write_text("".join(json.dumps(line) + "\n" for line in (lines or tiny_lines())),
                    encoding="utf-8")
    return path


def stored_files(media_root, pattern: str = "*.jsonl") -> list:
    """Files under MEDIA_ROOT an upload could have left, leaving out the benchmark downloads
    every import builds (MEDIA_ROOT/downloads/, evaluation.services.downloads)."""
    from pathlib import Path

    root = Path(media_root)
    return sorted(path for path in root.rglob(pattern)
                  if path.relative_to(root).parts[0] != "downloads")
