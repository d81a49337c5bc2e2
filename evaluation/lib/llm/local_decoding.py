"""Constrained decoding for the built-in local server (docs/llm.md, "The built-in server").

A request's answer format (an OpenAI ``response_format`` JSON schema, or vLLM's
``structured_outputs`` ``{"json": schema}`` / ``{"regex": pattern}``) becomes a logits
processor that masks every token that would leave the format, built on lm-format-enforcer's
character-level JSON-schema and regex parsers. Tokens are checked against the model's own
tokenizer, so a model with random weights still answers in the format: the mask, not the
model, makes the answer parse. JSON is compact (no whitespace between tokens), its strings hold
no raw control characters and no escape (no backslash: a quote inside a string is written as
' or “”), and keys may come in any order.

The format also bounds the answer's length: ``length_bound`` is the longest compact answer the
format allows, in characters (`answer_format.length_bound`), or None when the format is
unbounded (a string without ``maxLength``, an array without ``maxItems``, an integer without
both ``minimum`` and ``maximum``, an unbounded regex). Without escapes a string of at most
``maxLength`` characters takes at most ``maxLength`` + 2 in the answer, so the bound is exact.
Every token the mask allows adds at least one character, so the bound plus one (the
end-of-sequence token) caps the tokens: the gateway sends that cap with a constrained call
(``AnswerFormat.max_tokens``) and the server never generates more.

torch, transformers and lm-format-enforcer are imported when a mask is built, not at import.
"""

from __future__ import annotations

import functools
import json
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evaluation.lib.llm.answer_format import length_bound as _length_bound


class FormatRequestError(ValueError):
    """A request whose answer format cannot be honoured (answered with HTTP 400)."""


@dataclass(frozen=True)
class RequestedFormat:
    """What a request asks its answer to be: KIND ``json`` (SCHEMA None: any JSON value) or
    ``regex`` (PATTERN, matched by the whole answer)."""

    kind: str
    schema: Mapping[str, Any] | None = None
    pattern: str | None = None


def requested_format(request: Mapping[str, Any]) -> RequestedFormat | None:
    """The answer format a chat-completions body asks for, None for free text."""
    for legacy in ("guided_json", "guided_regex", "guided_choice", "guided_grammar"):
        if legacy in request:
            raise FormatRequestError(f"{legacy} is not supported: send structured_outputs "
                                     "(vLLM's name since 0.10) or response_format")
    response_format = request.get("response_format")
    structured = request.get("structured_outputs")
    if response_format and structured:
        raise FormatRequestError("give response_format or structured_outputs, not both")
    if structured:
        if not isinstance(structured, Mapping) or len(structured) != 1:
            raise FormatRequestError("structured_outputs takes exactly one of json, regex")
        (key, value), = structured.items()
        if key == "json":
            return RequestedFormat("json", schema=_schema(value))
        if key == "regex" and isinstance(value, str):
            return RequestedFormat("regex", pattern=_pattern(value))
        raise FormatRequestError(f"structured_outputs.{key} is not supported (json, regex)")
    if not response_format:
        return None
    if not isinstance(response_format, Mapping):
        raise FormatRequestError("response_format must be an object")
    kind = response_format.get("type")
    if kind == "text":
        return None
    if kind == "json_object":
        return RequestedFormat("json")
    if kind == "json_schema":
        inner = response_format.get("json_schema")
        if not isinstance(inner, Mapping) or "schema" not in inner:
            raise FormatRequestError("response_format.json_schema needs a schema")
        return RequestedFormat("json", schema=_schema(inner["schema"]))
    raise FormatRequestError(f"response_format type {kind!r} is not supported")


def format_of(answer_format: Any) -> RequestedFormat:
    """An ``answer_format.AnswerFormat`` as the request format the server sees."""
    if answer_format.json_schema is not None:
        return RequestedFormat("json", schema=answer_format.json_schema)
    return RequestedFormat("regex", pattern=answer_format.regex)


def _schema(value: Any) -> Mapping[str, Any]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as error:
            raise FormatRequestError(f"the JSON schema is not JSON: {error.msg}") from None
    if not isinstance(value, Mapping):
        raise FormatRequestError("a JSON schema must be an object")
    return value


def _pattern(value: str) -> str:
    try:
        re.compile(value)
    except re.error as error:
        raise FormatRequestError(f"the regular expression does not compile: {error}") from None
    return value


# --- the length bound -------------------------------------------------------------------------


def length_bound(fmt: RequestedFormat) -> int | None:
    """The most characters an answer of FMT can have (compact JSON), None when unbounded
    (`answer_format.length_bound`, the bound the gateway derives a constrained call's
    ``max_tokens`` from)."""
    if fmt.kind == "regex":
        return _length_bound(None, fmt.pattern or "")
    return _length_bound(fmt.schema, None) if fmt.schema is not None else None


# --- the mask ---------------------------------------------------------------------------------


class TokenizerVocabulary:
    """The tokenizer's vocabulary as lm-format-enforcer needs it: each regular token's text
    (with the leading space it has after another token) and the end-of-sequence token. Built
    once per model (a pass over the vocabulary: seconds for 50,000 tokens).

    Left out: tokens that decode to a partial UTF-8 sequence (a byte-level vocabulary's lone
    bytes, shown as U+FFFD), which the character-level parsers cannot follow; and for JSON,
    tokens with a control character, which JSON forbids raw in strings and Concord's compact
    JSON has nowhere else, or with a backslash, so that strings hold no escape and a string's
    characters are the answer's (lm-format-enforcer's fast path for string contents would let
    either in). A character the vocabulary spells only in byte pieces cannot be written then."""

    def __init__(self, tokenizer: Any, vocab_size: int) -> None:
        self.vocab_size = vocab_size
        self.eos_token_id = tokenizer.eos_token_id
        special = set(tokenizer.all_special_ids)
        anchor = tokenizer.encode("0", add_special_tokens=False)[-1]
        self._regular: list[tuple[int, str, bool]] = []
        for token_id in range(min(len(tokenizer), vocab_size)):
            if token_id in special:
                continue
            # Decoded after another token, a word-initial token keeps its leading space.
            after_anchor = tokenizer.decode([anchor, token_id])[1:]
            alone = tokenizer.decode([token_id])
            if not after_anchor or _PARTIAL in after_anchor:
                continue
            self._regular.append((token_id, after_anchor, len(after_anchor) > len(alone)))
        self._decode = lambda tokens: tokenizer.decode(tokens).rstrip(_PARTIAL)
        self._data: dict[str, Any] = {}
        self._regex: dict[str, Any] = {}
        self._regex_lock = threading.Lock()

    def regex_tokens(self, pattern: str) -> Any:
        """The tokens PATTERN allows after each state (`local_regex.RegexTokens`), built once
        per pattern and kept with the vocabulary (so every request of a prompt reuses it)."""
        from evaluation.lib.llm.local_regex import RegexTokens, compiled

        with self._regex_lock:
            found = self._regex.get(pattern)
            if found is None:
                found = RegexTokens(compiled(pattern), [(i, text) for i, text, _ in
                                                        self._regular],
                                    self.eos_token_id, self.vocab_size)
                self._regex[pattern] = found
            return found

    def data(self, kind: str) -> Any:
        """lm-format-enforcer's tokenizer data for answer formats of KIND (json, regex)."""
        if kind not in self._data:
            from lmformatenforcer.tokenenforcer import TokenEnforcerTokenizerData

            tokens = self._regular
            if kind == "json":
                tokens = [entry for entry in tokens if not _CONTROL.search(entry[1])]
            self._data[kind] = TokenEnforcerTokenizerData(tokens, self._decode, self.eos_token_id,
                                                          False, self.vocab_size)
        return self._data[kind]


_PARTIAL = "\N{REPLACEMENT CHARACTER}"
_CONTROL = re.compile(r"[\x00-\x1f\\]")  # and the backslash: no escape in a JSON string


def format_mask(fmt: RequestedFormat, vocabulary: TokenizerVocabulary,
                prompt_length: int) -> Any:
    """A transformers LogitsProcessor that keeps only the tokens FMT allows next."""
    import torch
    from lmformatenforcer import CharacterLevelParserConfig, JsonSchemaParser
    from lmformatenforcer.tokenenforcer import TokenEnforcer
    from transformers import LogitsProcessor

    if fmt.kind == "regex":
        return _regex_mask(vocabulary.regex_tokens(fmt.pattern or ""), prompt_length)
    else:
        parser = _compact_json()(
            JsonSchemaParser(enforceable(fmt.schema) if fmt.schema is not None else None))
    enforcer = TokenEnforcer(vocabulary.data(fmt.kind), parser)
    if fmt.kind == "json":
        # TokenEnforcer gives the parser the tokenizer's single characters as its alphabet.
        # JSON forbids raw control characters in strings (a byte-level vocabulary has them as
        # tokens, and the parser would let them in); no backslash, so no escape makes a string
        # longer than its characters (the length bound stays exact). Whitespace is left to
        # `_compact_json` (none between tokens, any inside a string): lm-format-enforcer's own
        # limit, `max_consecutive_whitespaces`, counts the spaces inside strings too, so at 0 a
        # string with a space ("Common User", a debate role's name as an enum) could not be
        # written. (Forcing the schema's key order is left off: with it, lm-format-enforcer
        # 0.11.3 lets a comma stand before "}" when optional keys follow.)
        alphabet = "".join(c for c in parser.config.alphabet if ord(c) >= 0x20 and c != "\\")
        enforcer.root_parser.config = CharacterLevelParserConfig(
            alphabet=alphabet, max_consecutive_whitespaces=_ANY_WHITESPACE)

    class FormatMask(LogitsProcessor):
        def __call__(self, input_ids: Any, scores: Any) -> Any:
            allowed = enforcer.get_allowed_tokens(input_ids[0, prompt_length:].tolist())
            mask = torch.full_like(scores, float("-inf"))
            mask[:, _allowed_ids(allowed.allowed_tokens, scores.shape[-1])] = 0
            return scores + mask

    return FormatMask()


def _regex_mask(tokens: Any, prompt_length: int) -> Any:
    """A LogitsProcessor keeping the tokens a regular expression allows next
    (`local_regex.RegexTokens`; its state follows the generated tokens)."""
    import torch
    from transformers import LogitsProcessor

    program = tokens.program

    class RegexMask(LogitsProcessor):
        def __init__(self) -> None:
            self.state, self.read = program.start, 0

        def __call__(self, input_ids: Any, scores: Any) -> Any:
            generated = input_ids[0, prompt_length:].tolist()
            for token_id in generated[self.read:]:
                self.state = program.feed(self.state, tokens.text_of(token_id))
            self.read = len(generated)
            mask = torch.full_like(scores, float("-inf"))
            mask[:, _allowed_ids(tokens.allowed(self.state), scores.shape[-1])] = 0
            return scores + mask

    return RegexMask()


_ENUM_INTEGERS = 1000  # a bounded integer with at most this many values becomes their enum


def enforceable(schema: Mapping[str, Any]) -> dict[str, Any]:
    """SCHEMA as lm-format-enforcer can enforce it: 0.11.3 ignores an integer's ``minimum`` and
    ``maximum`` (a constrained "score" 0–100 could run to "3333…" until the token cap cut it),
    so an integer with both, and at most _ENUM_INTEGERS values, becomes the enum of its values
    (the same answers, and the length bound counts them the same way)."""
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("properties", "$defs", "definitions") and isinstance(value, Mapping):
            out[key] = {name: enforceable(sub) for name, sub in value.items()}
        elif key == "items" and isinstance(value, Mapping):
            out[key] = enforceable(value)
        elif key in ("anyOf", "oneOf", "allOf") and isinstance(value, list):
            out[key] = [enforceable(sub) for sub in value]
        else:
            out[key] = value
    low, high = out.get("minimum"), out.get("maximum")
    if (out.get("type") == "integer" and "enum" not in out and isinstance(low, int)
            and isinstance(high, int) and 0 <= high - low < _ENUM_INTEGERS):
        out["enum"] = list(range(low, high + 1))
    return out


_ANY_WHITESPACE = 1 << 30  # lm-format-enforcer's whitespace limit, left to `_compact_json`


@functools.cache
def _compact_json() -> type:
    """A character-level JSON parser that allows no whitespace between JSON's tokens (compact
    JSON, what the length bound counts) and keeps every character inside a string: it wraps
    lm-format-enforcer's JsonSchemaParser and drops whitespace from the allowed characters
    unless the parser is inside a string (after its opening quote, before its closing one)."""
    from lmformatenforcer import CharacterLevelParser, JsonSchemaParser
    from lmformatenforcer.characterlevelparser import UnionParser
    from lmformatenforcer.consts import WHITESPACE_CHARACTERS
    from lmformatenforcer.jsonschemaparser import StringParsingState

    def in_string(parser: Any) -> bool:
        if isinstance(parser, UnionParser):
            return any(in_string(option) for option in parser.parsers)
        if isinstance(parser, JsonSchemaParser):
            return bool(parser.object_stack) and in_string(parser.object_stack[-1])
        if isinstance(parser, StringParsingState):  # a number enum is one without quotes
            return (parser.require_opening_quote and parser.seen_opening_quote
                    and not parser.seen_closing_quote)
        return False

    class CompactJson(CharacterLevelParser):
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        @property
        def config(self) -> Any:
            return self.inner.config

        @config.setter
        def config(self, value: Any) -> None:
            self.inner.config = value

        def add_character(self, new_character: str) -> Any:
            return CompactJson(self.inner.add_character(new_character))

        def get_allowed_characters(self) -> str:
            allowed = self.inner.get_allowed_characters()
            if in_string(self.inner):
                return allowed
            return "".join(c for c in allowed if c not in WHITESPACE_CHARACTERS)

        def can_end(self) -> bool:
            return self.inner.can_end()

        def shortcut_key(self) -> Any:
            return self.inner.shortcut_key()

        def cache_key(self) -> Any:
            return self.inner.cache_key()

    return CompactJson


def _allowed_ids(allowed: list[int], width: int) -> list[int]:
    return [token for token in allowed if token < width]


@functools.cache
def enforcer_version() -> str:
    """lm-format-enforcer's version (the server advertises it)."""
    from importlib.metadata import version

    return version("lm-format-enforcer")
