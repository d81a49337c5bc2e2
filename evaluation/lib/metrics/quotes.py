"""Quote and citation-label extraction for Trace grounding metrics (§3 and Appendix J).

Trace responses quote reviews inside double quotes followed by a label, e.g.
``"the crab cakes were incredible" [R2]`` (formats.md §2). GS, CD and PC all start here.

Rules:
- A quote opens with ``"`` or ``“`` and closes with ``"`` or ``”``; its text contains no double
  quote of either kind. Mixed pairs (``“…"``) are accepted because generators produce them.
- Quotes whose text has no letter or digit (``""``, ``" "``, ``"..."``) are ignored.
- A label is ``[X]`` where X is a short token such as ``R2``; ``[R1, R2]`` and ``[R1][R2]``
  attach several labels. Labels attach to a quote when only whitespace separates them, or when
  the label sits just inside the closing mark (``"great food [R2]"``).
- Labels not attached to any quote are still reported by :func:`extract_labels`
  (``attached=False``), because PC counts them and validators want to see them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_LABEL_TOKEN = r"[A-Za-z0-9][A-Za-z0-9_.:\-]{0,31}"
# One bracket may hold several labels separated by commas or semicolons.
_LABEL_GROUP_RE = re.compile(rf"\[\s*({_LABEL_TOKEN}(?:\s*[,;]\s*{_LABEL_TOKEN})*)\s*\]")
_LABEL_SPLIT_RE = re.compile(r"\s*[,;]\s*")
_QUOTE_RE = re.compile(r"[\"“]([^\"“”]*)[\"”]")
_HAS_WORD_RE = re.compile(r"[^\W_]")
# Labels placed inside the closing quote mark: "great food [R2]".
_TRAILING_LABELS_RE = re.compile(rf"\s*((?:{_LABEL_GROUP_RE.pattern}\s*)+)$")


@dataclass(frozen=True, slots=True)
class Quote:
    """A quoted span of a response; ``response[start:end] == text``."""

    text: str
    start: int
    end: int
    labels: tuple[str, ...] = ()

    @property
    def label(self) -> str | None:
        """The first attached label, or None for an unlabelled quote."""
        return self.labels[0] if self.labels else None


@dataclass(frozen=True, slots=True)
class LabelMention:
    """One citation label in a response; ``start``/``end`` cover the whole ``[...]`` bracket."""

    label: str
    start: int
    end: int
    attached: bool


def _split_labels(group: str) -> tuple[str, ...]:
    return tuple(_LABEL_SPLIT_RE.split(group.strip()))


def _labels_after(text: str, pos: int) -> tuple[tuple[str, ...], int]:
    """Labels in brackets starting at ``pos`` after optional whitespace; returns (labels, end)."""
    labels: list[str] = []
    cursor = pos
    while True:
        probe = cursor
        while probe < len(text) and text[probe].isspace():
            probe += 1
        match = _LABEL_GROUP_RE.match(text, probe)
        if match is None:
            return tuple(labels), cursor
        labels.extend(_split_labels(match.group(1)))
        cursor = match.end()


def _scan(text: str) -> tuple[list[Quote], list[tuple[int, int]]]:
    """Quotes plus the character spans of the label brackets attached to them."""
    quotes: list[Quote] = []
    attached_spans: list[tuple[int, int]] = []
    for match in _QUOTE_RE.finditer(text):
        body, start, end = match.group(1), match.start(1), match.end(1)
        labels: tuple[str, ...] = ()
        label_spans: list[tuple[int, int]] = []
        inner = _TRAILING_LABELS_RE.search(body)
        if inner is not None:
            labels = tuple(
                label
                for group in _LABEL_GROUP_RE.finditer(inner.group(1))
                for label in _split_labels(group.group(1))
            )
            label_spans.append((start + inner.start(1), end))
            end = start + inner.start()
            body = body[: inner.start()]
        after, after_end = _labels_after(text, match.end())
        if after:
            label_spans.append((match.end(), after_end))
            labels += after
        if not _HAS_WORD_RE.search(body):
            continue  # empty or punctuation-only quotes carry no evidence; labels stay unattached
        attached_spans += label_spans
        # Keep offsets honest when the span has surrounding blanks.
        stripped = body.strip()
        start += len(body) - len(body.lstrip())
        end = start + len(stripped)
        quotes.append(Quote(text=stripped, start=start, end=end, labels=labels))
    return quotes, attached_spans


def scan(text: str) -> tuple[list[Quote], list[LabelMention]]:
    """Quotes and label mentions of ``text`` in one pass (what the grounding metrics need)."""
    quotes, attached_spans = _scan(text)
    mentions: list[LabelMention] = []
    if "[" not in text:
        return quotes, mentions
    for match in _LABEL_GROUP_RE.finditer(text):
        attached = any(lo <= match.start() < hi for lo, hi in attached_spans)
        for label in _split_labels(match.group(1)):
            mentions.append(LabelMention(label, match.start(), match.end(), attached))
    return quotes, mentions


def extract_quotes(text: str) -> list[Quote]:
    """Double-quoted spans of ``text`` in order, each with the labels attached to it."""
    return _scan(text)[0]


def extract_labels(text: str) -> list[LabelMention]:
    """Every citation label in ``text`` in order, flagged when it is attached to a quote."""
    return scan(text)[1]


def unattached_labels(text: str) -> list[LabelMention]:
    """Labels that cite something without quoting it (e.g. ``Great view [R3].``)."""
    return [mention for mention in extract_labels(text) if not mention.attached]


def strip_labels(text: str) -> str:
    """``text`` without its label brackets (used before sentence splitting and NLI)."""
    return _LABEL_GROUP_RE.sub("", text)
