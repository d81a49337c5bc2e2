"""Constrained decoding for the built-in local server (docs/llm.md, "The built-in server").

A request's answer format (an OpenAI ``response_format`` JSON schema, or vLLM's
``structured_outputs`` ``{"json": schema}`` / ``{"regex": pattern}``) becomes a logits
processor that masks every token that would leave the format, built on lm-format-enforcer's
character-level JSON-schema and regex parsers. Tokens are checked against the model's own
tokenizer, so a model with random weights still answers in the format: the mask, not the
model, makes the answer parse. JSON is compact (no whitespace between tokens), its strings hold
no raw control characters, and keys may come in any order.

The format also bounds the answer's length: ``length_bound`` is the longest compact answer the
format allows, in characters, or None when the format is unbounded (a string without
``maxLength``, an array without ``maxItems``, an integer without both ``minimum`` and
``maximum``, an unbounded regex). Every token the mask allows adds at least one character, so
the bound plus one (the end-of-sequence token) caps the tokens.

torch, transformers and lm-format-enforcer are imported when a mask is built, not at import.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

# A character of a JSON string takes at most six (``\\uXXXX``).
_ESCAPED = 6
_REGEX_UNBOUNDED = 65535  # re's MAXREPEAT, as far as width is concerned


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
    """The most characters an answer of FMT can have (compact JSON), None when unbounded."""
    if fmt.kind == "regex":
        width = _regex_width(fmt.pattern or "")
        return None if width is None or width >= _REGEX_UNBOUNDED else width
    return _json_bound(fmt.schema) if fmt.schema is not None else None


def _regex_width(pattern: str) -> int | None:
    try:
        import re._parser as sre_parse  # Python 3.11+
    except ImportError:  # pragma: no cover - older Pythons
        import sre_parse  # type: ignore[no-redef]
    try:
        return int(sre_parse.parse(pattern).getwidth()[1])
    except (re.error, OverflowError, TypeError):
        return None


def _json_bound(schema: Mapping[str, Any]) -> int | None:
    if "enum" in schema:
        return max(len(_compact(value)) for value in schema["enum"]) if schema["enum"] else 0
    if "const" in schema:
        return len(_compact(schema["const"]))
    for combinator in ("anyOf", "oneOf"):
        if combinator in schema:
            bounds = [_json_bound(sub) for sub in schema[combinator]]
            return None if None in bounds or not bounds else max(bounds)  # type: ignore[type-var]
    kind = schema.get("type")
    if isinstance(kind, list):
        bounds = [_json_bound({**schema, "type": name}) for name in kind]
        return None if None in bounds or not bounds else max(bounds)  # type: ignore[type-var]
    return _BOUNDS.get(kind, lambda _: None)(schema)


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _string_bound(schema: Mapping[str, Any]) -> int | None:
    if "maxLength" not in schema:
        return None
    return 2 + _ESCAPED * int(schema["maxLength"])


def _integer_bound(schema: Mapping[str, Any]) -> int | None:
    if "minimum" not in schema or "maximum" not in schema:
        return None
    return max(len(str(int(schema["minimum"]))), len(str(int(schema["maximum"]))))


def _array_bound(schema: Mapping[str, Any]) -> int | None:
    if "maxItems" not in schema:
        return None
    items = int(schema["maxItems"])
    item = _json_bound(schema.get("items", {})) if items else 0
    return None if item is None else 2 + items * item + max(0, items - 1)


def _object_bound(schema: Mapping[str, Any]) -> int | None:
    if schema.get("additionalProperties") is not False:
        return None
    properties = schema.get("properties", {})
    total = 2 + max(0, len(properties) - 1)
    for key, sub in properties.items():
        value = _json_bound(sub)
        if value is None:
            return None
        total += len(_compact(key)) + 1 + value
    return total


_BOUNDS: dict[Any, Callable[[Mapping[str, Any]], int | None]] = {
    "string": _string_bound,
    "integer": _integer_bound,
    "array": _array_bound,
    "object": _object_bound,
    "boolean": lambda _: 5,
    "null": lambda _: 4,
}


# --- the mask ---------------------------------------------------------------------------------


class TokenizerVocabulary:
    """The tokenizer's vocabulary as lm-format-enforcer needs it: each regular token's text
    (with the leading space it has after another token) and the end-of-sequence token. Built
    once per model (a pass over the vocabulary: seconds for 50,000 tokens).

    Left out: tokens that decode to a partial UTF-8 sequence (a byte-level vocabulary's lone
    bytes, shown as U+FFFD), which the character-level parsers cannot follow; and for JSON,
    tokens with a control character, which JSON forbids raw in strings and Concord's compact
    JSON has nowhere else (lm-format-enforcer's fast path for string contents would let them
    in). A character the vocabulary spells only in byte pieces cannot be written then."""

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
_CONTROL = re.compile(r"[\x00-\x1f]")


def format_mask(fmt: RequestedFormat, vocabulary: TokenizerVocabulary,
                prompt_length: int) -> Any:
    """A transformers LogitsProcessor that keeps only the tokens FMT allows next."""
    import torch
    from lmformatenforcer import CharacterLevelParserConfig, JsonSchemaParser, RegexParser
    from lmformatenforcer.tokenenforcer import TokenEnforcer
    from transformers import LogitsProcessor

    if fmt.kind == "regex":
        parser = RegexParser(fmt.pattern)
    else:
        parser = JsonSchemaParser(dict(fmt.schema) if fmt.schema is not None else None)
    enforcer = TokenEnforcer(vocabulary.data(fmt.kind), parser)
    if fmt.kind == "json":
        # TokenEnforcer gives the parser the tokenizer's single characters as its alphabet.
        # JSON forbids raw control characters in strings (a byte-level vocabulary has them as
        # tokens, and the parser would let them in), and Concord asks for compact JSON: no
        # whitespace between tokens. (Forcing the schema's key order is left off: with it,
        # lm-format-enforcer 0.11.3 lets a comma stand before "}" when optional keys follow.)
        alphabet = "".join(c for c in parser.config.alphabet if ord(c) >= 0x20)
        enforcer.root_parser.config = CharacterLevelParserConfig(
            alphabet=alphabet, max_consecutive_whitespaces=0)

    class FormatMask(LogitsProcessor):
        def __call__(self, input_ids: Any, scores: Any) -> Any:
            allowed = enforcer.get_allowed_tokens(input_ids[0, prompt_length:].tolist())
            mask = torch.full_like(scores, float("-inf"))
            mask[:, _allowed_ids(allowed.allowed_tokens, scores.shape[-1])] = 0
            return scores + mask

    return FormatMask()


def _allowed_ids(allowed: list[int], width: int) -> list[int]:
    return [token for token in allowed if token < width]


@functools.cache
def enforcer_version() -> str:
    """lm-format-enforcer's version (the server advertises it)."""
    from importlib.metadata import version

    return version("lm-format-enforcer")
