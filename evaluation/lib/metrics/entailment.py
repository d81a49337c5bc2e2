"""NLI entailment grounding and CGSent for Trace (§3, §6.2 and Appendix L).

Entailment grounding of a turn = share of its claim sentences that the cited reviews entail
(entailment probability ≥ 0.5 under a DeBERTa-class NLI model). CGSent is CGS with GS replaced
by this score. The paper reports both and warns that CGSent is a diagnostic, not a leaderboard.

Claim sentences are the response's sentences with citation labels removed and at least three
word tokens; the paper scores every sentence (quotes, framing and rating meta alike), which is
why absolute values are low. A claim's premises are the reviews its own labels cite, or every
review the turn cites when it has no label; a claim is entailed if any premise entails it.

Model weights are never downloaded: :func:`load_nli_model` reads a local directory and returns
:class:`Unavailable` with a reason instead of raising, so the rest of the suite still runs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from evaluation.lib.metrics.grounding import count_tokens
from evaluation.lib.metrics.quotes import extract_labels, strip_labels
from evaluation.lib.metrics.types import Unavailable

DEFAULT_ENTAILMENT_THRESHOLD = 0.5
DEFAULT_BATCH_SIZE = 16
DEFAULT_MAX_LENGTH = 512
MIN_CLAIM_TOKENS = 3

# A sentence ends at . ! ? or … plus any closing quotes/brackets and trailing [labels].
_SENTENCE_END_RE = re.compile(r"[.!?…]+[\"”’')\]]*(?:\s*\[[^\[\]\n]{1,40}\])*(?=\s|$)")
_SPACE_BEFORE_PUNCTUATION_RE = re.compile(r"\s+([.,;:!?])")
_QUOTE_MARKS = str.maketrans({'"': None, "“": None, "”": None})


class EntailmentScorer(Protocol):
    """Anything that turns (premise, hypothesis) pairs into entailment probabilities."""

    def entailment_probabilities(self, pairs: Sequence[tuple[str, str]]) -> list[float]: ...


@dataclass(frozen=True, slots=True)
class Claim:
    """A sentence of a response scored by NLI, with the labels it carries."""

    text: str
    labels: tuple[str, ...]


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text``; labels right after a sentence stay with it, newlines also split."""
    sentences: list[str] = []
    for block in re.split(r"\n+", text):
        cursor = 0
        for match in _SENTENCE_END_RE.finditer(block):
            sentences.append(block[cursor : match.end()].strip())
            cursor = match.end()
        sentences.append(block[cursor:].strip())
    return [sentence for sentence in sentences if sentence]


def claim_sentences(response: str, min_tokens: int = MIN_CLAIM_TOKENS) -> list[Claim]:
    """The response's claims: label-free sentences of at least ``min_tokens`` words."""
    claims = []
    for sentence in split_sentences(response):
        labels = tuple(mention.label for mention in extract_labels(sentence))
        text = " ".join(strip_labels(sentence).translate(_QUOTE_MARKS).split())
        text = _SPACE_BEFORE_PUNCTUATION_RE.sub(r"\1", text)  # where a label was removed
        if count_tokens(text) >= min_tokens:
            claims.append(Claim(text, labels))
    return claims


def claim_premises(claim: Claim, reviews_by_label: Mapping[str, Sequence[str]]) -> list[str]:
    """Review texts that may entail ``claim``: those of its labels, else all cited reviews."""
    own = [text for label in claim.labels for text in reviews_by_label.get(label, ())]
    if own:
        return list(dict.fromkeys(own))
    return list(dict.fromkeys(text for texts in reviews_by_label.values() for text in texts))


def entailment_grounding(
    claim_probabilities: Sequence[Sequence[float]], threshold: float = DEFAULT_ENTAILMENT_THRESHOLD
) -> float:
    """Share of claims whose best premise gives entailment probability ≥ ``threshold``.

    ``claim_probabilities[i]`` holds claim i's probabilities, one per premise; a claim with no
    premise (nothing cited) is not entailed. A turn with no claims scores 1, like GS.
    """
    if not claim_probabilities:
        return 1.0
    entailed = sum(1 for probs in claim_probabilities if probs and max(probs) >= threshold)
    return entailed / len(claim_probabilities)


def score_turn_claims(
    response: str, reviews_by_label: Mapping[str, Sequence[str]], scorer: EntailmentScorer
) -> list[list[float]]:
    """Per-claim premise probabilities for one response (convenience for single turns)."""
    claims = claim_sentences(response)
    premises = [claim_premises(claim, reviews_by_label) for claim in claims]
    pairs = [
        (premise, claim.text)
        for claim, texts in zip(claims, premises, strict=True)
        for premise in texts
    ]
    flat = scorer.entailment_probabilities(pairs) if pairs else []
    result, cursor = [], 0
    for texts in premises:
        result.append(list(flat[cursor : cursor + len(texts)]))
        cursor += len(texts)
    return result


# --- the transformers wrapper -----------------------------------------------------------------


def find_entailment_index(id2label: Mapping[Any, str]) -> int | None:
    """Index of the label named "entailment" (any case, also "ENTAILMENT"/"entails")."""
    for index, label in id2label.items():
        if str(label).strip().lower().startswith("entail"):
            return int(index)
    return None


class NLIModel:
    """A sequence-classification NLI model and its tokenizer, scoring pairs in batches."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        entailment_index: int,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        max_length: int = DEFAULT_MAX_LENGTH,
        device: str = "cpu",
        name: str = "",
    ) -> None:
        self.model = model.to(device).eval()
        self.tokenizer = tokenizer
        self.entailment_index = entailment_index
        self.batch_size = max(1, batch_size)
        self.max_length = max_length
        self.device = device
        self.name = name

    def entailment_probabilities(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """P(entailment) for each (premise, hypothesis) pair, in input order.

        Duplicate pairs are scored once; pairs are batched in length order to limit padding.
        """
        unique = list(dict.fromkeys(pairs))
        order = sorted(range(len(unique)), key=lambda i: len(unique[i][0]) + len(unique[i][1]))
        scores: dict[tuple[str, str], float] = {}
        for start in range(0, len(order), self.batch_size):
            batch = [unique[i] for i in order[start : start + self.batch_size]]
            for pair, prob in zip(batch, self._score_batch(batch), strict=True):
                scores[pair] = prob
        return [scores[pair] for pair in pairs]

    def _score_batch(self, batch: Sequence[tuple[str, str]]) -> list[float]:
        import torch  # imported lazily: the rest of the suite must not pay for torch

        encoded = self.tokenizer(
            [premise for premise, _ in batch],
            [hypothesis for _, hypothesis in batch],
            truncation=True,
            max_length=self.max_length,
            padding=True,
            return_tensors="pt",
        ).to(self.device)
        with torch.no_grad():
            logits = self.model(**encoded).logits
        return torch.softmax(logits.float(), dim=-1)[:, self.entailment_index].tolist()


def load_nli_model(
    path: str | Path | None,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    max_length: int = DEFAULT_MAX_LENGTH,
    device: str = "cpu",
) -> NLIModel | Unavailable:
    """Load an NLI model from a local directory, or say why it cannot be used."""
    if path is None or str(path).strip() == "":
        return Unavailable("no NLI model path is configured")
    model_dir = Path(path)
    if not model_dir.is_dir():
        return Unavailable(f"NLI model directory not found: {model_dir}")
    try:
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
        model = AutoModelForSequenceClassification.from_pretrained(model_dir, local_files_only=True)
    except Exception as error:  # noqa: BLE001 - any loading failure means "unavailable"
        return Unavailable(
            f"could not load NLI model from {model_dir}: {type(error).__name__}: {error}"
        )
    index = find_entailment_index(model.config.id2label or {})
    if index is None:
        labels = sorted(map(str, (model.config.id2label or {}).values()))
        return Unavailable(f"NLI model at {model_dir} has no 'entailment' label (labels: {labels})")
    limit = getattr(tokenizer, "model_max_length", max_length) or max_length
    return NLIModel(
        model,
        tokenizer,
        index,
        batch_size=batch_size,
        max_length=min(max_length, int(limit)),
        device=device,
        name=str(model_dir),
    )
