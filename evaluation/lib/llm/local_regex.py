"""Regular-expression answer formats for the built-in server's constrained decoding
(docs/llm.md, "The built-in server"): a Pike virtual machine over the pattern, and the tokens
it allows next.

Why not lm-format-enforcer's RegexParser (which the server used first): it turns the pattern
into a deterministic automaton with interegular, and a bounded repetition such as the
reasoning of a tag format, ``[^<>]{0,480}``, costs it time quadratic in the bound (8–80 s per
pattern on the development machine, once per request); and it then finds the allowed tokens by
walking the whole vocabulary's prefix tree at every step where free text is allowed (every
token of the reasoning), minutes per answer with SmolLM2's 49,152 tokens. Here the pattern is
compiled (Python's own regex parser, ``re._parser``) into a linear program of character tests,
splits and jumps, the bounded repetitions unrolled (linear in the bound), and run as a set of
threads (a Pike VM: no automaton is built). The allowed tokens of a set of threads are
computed once and kept:

- where a thread is inside a repeated character class with R characters left (the reasoning's
  ``[^<>]``, a JSON string's characters), every token made only of that class's characters and
  at most R long is allowed at once (one vectorised comparison), and only the tokens holding
  another character are simulated;
- elsewhere (inside a tag, a literal, a grade) the tokens are simulated, grouped by their first
  character, only for the first characters some thread accepts.

The allowed set may leave out a valid token (a class-only token longer than R whose tail would
enter the next part of the pattern), never admits an invalid one, and always admits a way on
(the single characters of the class while R > 0; everything the pattern allows after it)
wherever the vocabulary spells the next character alone, as byte-level vocabularies do, so
the answer always matches and ends. Supported: literals, character classes (ranges,
negation, ``\\s``/``\\d``/``\\w``), ``.``, groups, alternation and bounded or unbounded
repetition; anchors and backreferences are refused.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from typing import Any

try:  # Python 3.11+
    import re._constants as _c
    import re._parser as _parser
except ImportError:  # pragma: no cover - older Pythons
    import sre_constants as _c  # type: ignore[no-redef]
    import sre_parse as _parser  # type: ignore[no-redef]

_CATEGORIES: dict[Any, Callable[[str], bool]] = {
    _c.CATEGORY_DIGIT: str.isdigit,
    _c.CATEGORY_NOT_DIGIT: lambda ch: not ch.isdigit(),
    _c.CATEGORY_SPACE: str.isspace,
    _c.CATEGORY_NOT_SPACE: lambda ch: not ch.isspace(),
    _c.CATEGORY_WORD: lambda ch: ch.isalnum() or ch == "_",
    _c.CATEGORY_NOT_WORD: lambda ch: not (ch.isalnum() or ch == "_"),
}


class UnsupportedPattern(ValueError):
    """A pattern this engine cannot run (an anchor, a backreference, a lookaround)."""


def _class_test(items: Sequence[tuple[Any, Any]]) -> Callable[[str], bool]:
    negate = bool(items) and items[0][0] is _c.NEGATE
    tests: list[Callable[[str], bool]] = []
    for op, arg in items[1:] if negate else items:
        if op is _c.LITERAL:
            tests.append(lambda ch, code=arg: ord(ch) == code)
        elif op is _c.RANGE:
            tests.append(lambda ch, low=arg[0], high=arg[1]: low <= ord(ch) <= high)
        elif op is _c.CATEGORY:
            tests.append(_CATEGORIES[arg])
        else:
            raise UnsupportedPattern(f"character class item {op}")
    if negate:
        return lambda ch: not any(test(ch) for test in tests)
    return lambda ch: any(test(ch) for test in tests)


class Program:
    """PATTERN compiled to a Pike-VM program: ``("char", test, run)``, ``("split", a, b)``,
    ``("jmp", a)``, ``("match",)``. RUN is (the class's key, characters left in its run) for
    a character test unrolled from a repeated class, else None."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self.code: list[tuple[Any, ...]] = []
        self.classes: dict[int, Callable[[str], bool]] = {}  # run key -> its character test
        self._emit_all(_parser.parse(pattern))
        self.code.append(("match",))
        self.start = self.closure((0,))

    # -- compiling ---------------------------------------------------------------------------
    def _emit_all(self, items: Any) -> None:
        for op, arg in items:
            self._emit(op, arg)

    def _char(self, test: Callable[[str], bool], run: tuple[int, int] | None = None) -> None:
        self.code.append(("char", test, run))

    def _emit(self, op: Any, arg: Any) -> None:
        if op is _c.LITERAL:
            self._char(lambda ch, code=arg: ord(ch) == code)
        elif op is _c.NOT_LITERAL:
            self._char(lambda ch, code=arg: ord(ch) != code)
        elif op is _c.ANY:
            self._char(lambda ch: True)
        elif op is _c.IN:
            self._char(_class_test(arg))
        elif op is _c.SUBPATTERN:
            self._emit_all(arg[-1])
        elif op is _c.BRANCH:
            self._branch(arg[1])
        elif op in (_c.MAX_REPEAT, _c.MIN_REPEAT, getattr(_c, "POSSESSIVE_REPEAT", None)):
            self._repeat(*arg)
        else:
            raise UnsupportedPattern(f"{op} is not supported in an answer format")

    def _branch(self, alternatives: Sequence[Any]) -> None:
        ends: list[int] = []
        for index, alternative in enumerate(alternatives):
            if index < len(alternatives) - 1:
                split = len(self.code)
                self.code.append(("split", split + 1, None))
                self._emit_all(alternative)
                ends.append(len(self.code))
                self.code.append(("jmp", None))
                self.code[split] = ("split", split + 1, len(self.code))
            else:
                self._emit_all(alternative)
        for end in ends:
            self.code[end] = ("jmp", len(self.code))

    def _repeat(self, low: int, high: int, body: Any) -> None:
        single = list(body)
        run_key = None
        if len(single) == 1 and single[0][0] in (_c.IN, _c.NOT_LITERAL, _c.ANY):
            run_key = len(self.classes)
            op, arg = single[0]
            self.classes[run_key] = (_class_test(arg) if op is _c.IN else
                                     (lambda ch, code=arg: ord(ch) != code)
                                     if op is _c.NOT_LITERAL else (lambda ch: True))
        unbounded = high >= _c.MAXREPEAT
        total = low if unbounded else high
        pending: list[int] = []  # the optional copies' splits, to the repetition's end
        for index in range(total):
            left = None if unbounded else high - index
            if index >= low:
                pending.append(len(self.code))
                self.code.append(("split", len(self.code) + 1, None))
            if run_key is not None:
                self._char(self.classes[run_key], (run_key, left) if left else None)
            else:
                self._emit_all(body)
        if unbounded:
            loop = len(self.code)
            self.code.append(("split", loop + 1, None))
            if run_key is not None:
                self._char(self.classes[run_key])
            else:
                self._emit_all(body)
            self.code.append(("jmp", loop))
            self.code[loop] = ("split", loop + 1, len(self.code))
        for pc in pending:
            self.code[pc] = ("split", pc + 1, len(self.code))

    # -- running -----------------------------------------------------------------------------
    def closure(self, pcs: Sequence[int]) -> frozenset[int]:
        """The character tests and the match reachable from PCS without reading."""
        seen: set[int] = set()
        found: set[int] = set()
        stack = list(pcs)
        while stack:
            pc = stack.pop()
            if pc in seen:
                continue
            seen.add(pc)
            kind = self.code[pc][0]
            if kind == "split":
                stack += [self.code[pc][1], self.code[pc][2]]
            elif kind == "jmp":
                stack.append(self.code[pc][1])
            else:
                found.add(pc)
        return frozenset(found)

    @functools.lru_cache(maxsize=65536)  # noqa: B019 - a Program lives as long as its cache
    def step(self, state: frozenset[int], ch: str) -> frozenset[int]:
        return self.closure([pc + 1 for pc in state
                             if self.code[pc][0] == "char" and self.code[pc][1](ch)])

    def feed(self, state: frozenset[int], text: str) -> frozenset[int]:
        for ch in text:
            if not state:
                break
            state = self.step(state, ch)
        return state

    def matches(self, state: frozenset[int]) -> bool:
        return any(self.code[pc][0] == "match" for pc in state)

    def fullmatch(self, text: str) -> bool:
        return self.matches(self.feed(self.start, text))


class RegexTokens:
    """The tokens PROGRAM allows after each state, over TOKENS (id, text) of a vocabulary of
    VOCAB_SIZE ids with END the end-of-sequence id; computed once per state and kept."""

    def __init__(self, program: Program, tokens: Sequence[tuple[int, str]], end: int,
                 vocab_size: int) -> None:
        import numpy as np

        self.program, self.end, self.vocab_size = program, end, vocab_size
        self.ids = np.array([token_id for token_id, _ in tokens], dtype=np.int64)
        self.texts = [text for _, text in tokens]
        self.by_first: dict[str, list[int]] = {}
        for index, text in enumerate(self.texts):
            self.by_first.setdefault(text[0], []).append(index)
        # Per repeated class: each token's length if made only of the class's characters
        # (else a length no run has), and the tokens with another character.
        self.run_lengths: dict[int, Any] = {}
        self.run_others: dict[int, list[int]] = {}
        big = 1 << 30
        for key, test in program.classes.items():
            inside = [all(test(ch) for ch in text) for text in self.texts]
            self.run_lengths[key] = np.array(
                [len(text) if ok else big for text, ok in zip(self.texts, inside, strict=True)])
            self.run_others[key] = [i for i, ok in enumerate(inside) if not ok]
        self._allowed: dict[frozenset[int], list[int]] = {}
        self._text = dict(tokens)

    def text_of(self, token_id: int) -> str:
        """The text TOKEN_ID adds to the answer (empty for the end of sequence)."""
        return self._text.get(token_id, "")

    def allowed(self, state: frozenset[int]) -> list[int]:
        """The token ids allowed after STATE (END when the pattern may end here)."""
        found = self._allowed.get(state)
        if found is None:
            found = self._compute(state)
            self._allowed[state] = found
        return found

    def _compute(self, state: frozenset[int]) -> list[int]:
        import numpy as np

        program = self.program
        runs: dict[int, int] = {}
        for pc in state:
            instruction = program.code[pc]
            if instruction[0] == "char" and instruction[2] is not None:
                key, left = instruction[2]
                runs[key] = max(runs.get(key, 0), left)
        chosen: set[int] = set()
        candidates: list[int]
        if runs:
            for key, left in runs.items():
                chosen.update(np.nonzero(self.run_lengths[key] <= left)[0].tolist())
            # Tokens with a character outside a run are simulated (a tag's "<", a quote).
            candidates = sorted(set().union(*(self.run_others[key] for key in runs)))
        else:
            candidates = [index for ch, group in self.by_first.items()
                          if program.step(state, ch) for index in group]
        for index in candidates:
            if index not in chosen and program.feed(state, self.texts[index]):
                chosen.add(index)
        allowed = [int(self.ids[index]) for index in chosen]
        if program.matches(state):
            allowed.append(self.end)
        return allowed


@functools.lru_cache(maxsize=64)
def compiled(pattern: str) -> Program:
    """PATTERN's program, compiled once per process."""
    try:
        re.compile(pattern)
    except re.error as error:
        raise UnsupportedPattern(str(error)) from None
    return Program(pattern)
