"""Split text into plain and highlighted segments, so templates can mark quotes safely.

Templates render each segment with auto-escaping; nothing here produces HTML.
"""

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Segment:
    text: str
    mark: Any = None  # the payload of a highlighted span (a citation, a verdict…), else None


def span_segments(text: str, spans: list[tuple[int, int, Any]]) -> list[Segment]:
    """Segments for character spans [start, end); overlapping spans keep the first one."""
    segments, cursor = [], 0
    for start, end, payload in sorted(spans, key=lambda s: (s[0], -s[1])):
        if start < cursor or end <= start or end > len(text):
            continue
        if start > cursor:
            segments.append(Segment(text[cursor:start]))
        segments.append(Segment(text[start:end], payload))
        cursor = end
    if cursor < len(text):
        segments.append(Segment(text[cursor:]))
    return segments


def quote_segments(text: str, quotes: list[tuple[str, Any]]) -> list[Segment]:
    """Mark the first not-yet-marked occurrence of each quote's text in TEXT."""
    spans, taken = [], []
    for quote, payload in quotes:
        start = text.find(quote)
        while start >= 0 and any(s < start + len(quote) and start < e for s, e in taken):
            start = text.find(quote, start + 1)
        if start >= 0:
            spans.append((start, start + len(quote), payload))
            taken.append((start, start + len(quote)))
    return span_segments(text, spans)
