"""Simulated annotators for the demo's labelled study: generated labels, not people's.

A fresh install has no human labels on the demo benchmark, so its leaderboard's trust row
(how far each metric agrees with people) would read "not validated" everywhere. `load_demo`
therefore fills one study with the labels of a few simulated annotators, each reading what a
person would read (the response, the reviews its labels cite, the places the user asked for) and
judging it by a fixed, documented rule with its own slips and leniency. The study says on every
page that its annotators are simulated; its numbers show how the trust row works, never how good
a metric is.

Per response and annotator:

- **Citation check** (Trace Task 1), per quote: *Supported* when the quote is found in the review
  its label cites (case and spacing aside), *Partial* when at least 70% of its words are in that
  review (reworded), else *Not supported*; with probability ``slip`` the annotator picks a
  neighbouring verdict instead.
- **Informativeness** (1–5): 1 + 2 when the response names a place the user's request is
  satisfied by (the turn's gold items) + 2 × the share of its quotes judged Supported (Partial
  counts half) + the annotator's leniency + Gaussian noise (σ ``noise``), rounded and clipped.
- **Naturalness** (1–5): 3 + 1 when it quotes and every quote is Supported − 1 when a quote is
  Not supported + leniency + noise, rounded and clipped.

Pure and seeded: the same inputs, annotator and seed give the same labels.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from evaluation.lib.metrics.grounding import normalize_for_match, quote_core
from evaluation.lib.metrics.quotes import extract_quotes

SUPPORTED, PARTIAL, NOT_SUPPORTED = "supported", "partial", "not_supported"
VERDICTS = (SUPPORTED, PARTIAL, NOT_SUPPORTED)
PARTIAL_SHARE = 0.7
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Annotator:
    """One simulated annotator: how often a verdict slips, how lenient, how noisy."""

    name: str
    slip: float = 0.08
    leniency: float = 0.0
    noise: float = 0.6


PANEL = (Annotator("simulated-1", leniency=0.0), Annotator("simulated-2", leniency=0.3),
         Annotator("simulated-3", leniency=-0.3, slip=0.12))


@dataclass(frozen=True)
class Judgement:
    verdicts: tuple[str, ...]  # one per quote of the response, in order
    informativeness: int
    naturalness: int


def quote_verdict(quote: str, review: str | None) -> str:
    """What a careful reader of the cited REVIEW finds for QUOTE (no slip)."""
    if not review:
        return NOT_SUPPORTED
    core, text = quote_core(quote), normalize_for_match(review)
    if core and core in text:
        return SUPPORTED
    words = _WORD.findall(core)
    found = set(_WORD.findall(text))
    if words and sum(word in found for word in words) / len(words) >= PARTIAL_SHARE:
        return PARTIAL
    return NOT_SUPPORTED


def _slip(verdict: str, rng: random.Random) -> str:
    k = VERDICTS.index(verdict)
    neighbours = [VERDICTS[j] for j in (k - 1, k + 1) if 0 <= j < len(VERDICTS)]
    return rng.choice(neighbours)


def _scale(value: float) -> int:
    return max(1, min(5, int(round(value))))


def judge(annotator: Annotator, *, response: str, cited: Mapping[str, str],
          gold_names: Sequence[str], rng: random.Random) -> Judgement:
    """ANNOTATOR's labels of one RESPONSE. CITED: label -> the text of the review it cites;
    GOLD_NAMES: the names of the places that satisfy the user's request at this turn."""
    verdicts = []
    for quote in extract_quotes(response):
        verdict = quote_verdict(quote.text, cited.get(quote.label or ""))
        verdicts.append(_slip(verdict, rng) if rng.random() < annotator.slip else verdict)
    support = (sum({SUPPORTED: 1.0, PARTIAL: 0.5}.get(v, 0.0) for v in verdicts) / len(verdicts)
               if verdicts else 0.0)
    lowered = response.casefold()
    names_gold = any(name and name.casefold() in lowered for name in gold_names)
    informativeness = (1 + 2 * names_gold + 2 * support + annotator.leniency
                       + rng.gauss(0, annotator.noise))
    naturalness = (3 + (bool(verdicts) and all(v == SUPPORTED for v in verdicts))
                   - (NOT_SUPPORTED in verdicts) + annotator.leniency
                   + rng.gauss(0, annotator.noise))
    return Judgement(tuple(verdicts), _scale(informativeness), _scale(naturalness))
