"""Blinding: which letter stands for which system in a dialogue (annotation.md §The item page).

Each study and dialogue gets its own random permutation of the systems that answered it, so a
letter never identifies a system across dialogues. The permutation is drawn once, stored in
`BlindingEntry`, and only ever read back; it never reaches an annotator's browser.
"""

from __future__ import annotations

import random
import string


def letter_for(index: int) -> str:
    """0 -> A, 25 -> Z, 26 -> AA, ... (spreadsheet-style, for more than 26 systems)."""
    letters = string.ascii_uppercase
    if index < 26:
        return letters[index]
    return letters[index // 26 - 1] + letters[index % 26]


def assign_letters(source_keys: list[str], *, seed: str) -> dict[str, str]:
    """A random bijection source key -> letter, reproducible from SEED (e.g. study seed + dialogue).

    The keys are sorted first so the result does not depend on the order they were collected in.
    """
    keys = sorted(set(source_keys))
    random.Random(seed).shuffle(keys)
    return {key: letter_for(i) for i, key in enumerate(keys)}
