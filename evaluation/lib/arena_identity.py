"""Does an arena answer name its system? (docs/arena.md, "Which votes count")

A battle is blind only as long as neither answer says who wrote it. Transport and metadata are
blinded (docs/arena.md, "Blinding"), but an answer's text can still say "I am TF-IDF" or "as an
AI developed by OpenAI"; FastChat flags such battles and leaves them out of its ratings
(`clean_battle_data.py`, lm-sys/FastChat issue 1210), and so does Concord.

`identity_leak(text, names=…, family=…)` returns the first phrase of TEXT that names the
system, or None. It matches, case-insensitively and as whole words (letters and digits may not
touch the phrase on either side; inside a phrase, spaces, hyphens, dots and underscores are
interchangeable or absent, so "TF-IDF", "tfidf" and "tf idf" are one name):

- the system's own NAMES (its name and slug; names under three letters or digits are ignored);
- its FAMILY only after a first-person introduction ("I am a retrieval system"): a family is a
  common word ("this is a dense neighbourhood" says nothing);
- the self-descriptions of `arena_identity.json`: words that always name an AI system
  (`ChatGPT`, `OpenAI`), an introduction followed by an assistant's name ("I'm Claude", "this
  is Llama 3"), and an AI word followed by "developed/created/trained/built/made by" a maker
  ("as an AI developed by OpenAI", "a language model trained by Google").

The lists are data, kept small: a word a recommendation could mean otherwise (the film "Gemini
Man") only counts after an introduction.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable
from pathlib import Path

MIN_NAME_CHARS = 3
_EDGE_BEFORE, _EDGE_AFTER = r"(?<![^\W_])", r"(?![^\W_])"  # no letter or digit may touch


@functools.cache
def _phrases() -> dict:
    data = json.loads(Path(__file__).with_name("arena_identity.json").read_text("utf-8"))
    return {key: value for key, value in data.items() if not key.startswith("_")}


def _words(phrase: str) -> str:
    """PHRASE as a pattern: its letters and digits in order, any separators or none between."""
    chunks = [re.escape(chunk) for chunk in re.findall(r"[^\W_]+|[’']", phrase)]
    return r"[\s_.\-]*".join(chunks)


def _either(phrases: Iterable[str]) -> str:
    ordered = sorted({p for p in phrases if p.strip()}, key=len, reverse=True)
    return "(?:" + "|".join(_words(p) for p in ordered) + ")"


def _whole(pattern: str) -> str:
    return f"{_EDGE_BEFORE}{pattern}{_EDGE_AFTER}"


@functools.cache
def _common() -> re.Pattern:
    data = _phrases()
    intro, assistants = _either(data["introductions"]), _either(data["assistants"])
    ai, made_by, makers = _either(data["ai_words"]), _either(data["made_by"]), _either(
        data["makers"])
    return re.compile("|".join([
        _whole(_either(data["always"])),
        _whole(rf"{intro}\s+(?:an?\s+)?{assistants}"),
        _whole(rf"{ai}\b[^.!?\n]{{0,40}}?\b{made_by}\s+{makers}"),
    ]), re.IGNORECASE)


@functools.cache
def _own(names: tuple[str, ...], family: str) -> re.Pattern | None:
    usable = [n for n in names if len(re.sub(r"[\W_]", "", n)) >= MIN_NAME_CHARS]
    parts = [_whole(_either(usable))] if usable else []
    if len(re.sub(r"[\W_]", "", family)) >= MIN_NAME_CHARS:
        intro = _either(_phrases()["self_introductions"])
        parts.append(_whole(rf"{intro}\s+(?:an?\s+)?{_words(family)}"))
    return re.compile("|".join(parts), re.IGNORECASE) if parts else None


def identity_leak(text: str, *, names: Iterable[str] = (), family: str = "") -> str | None:
    """The first phrase of TEXT that names its system (NAMES, FAMILY or a common
    self-description), or None."""
    if not text:
        return None
    own = _own(tuple(sorted({n.strip() for n in names if n and n.strip()})), family.strip())
    hits = [m for m in (own.search(text) if own else None, _common().search(text)) if m]
    return min(hits, key=lambda m: m.start()).group(0) if hits else None
