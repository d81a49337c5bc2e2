"""An LLM call's answer format, declared as data (docs/llm.md, "Answer formats").

Each evaluator or simulator prompt declares one ``AnswerFormat``: a JSON schema (the answer is
one compact JSON value) or, where the answer must stay textual, a regular expression that the
whole answer matches. The same object constrains the call (the gateway turns it into the
parameters the model's backend understands: ``request_parameters``) and checks the answer
(``check``), so what the model is asked for and what Concord accepts cannot drift apart.

Backends (a model profile's ``backend``):

- ``openai``: any OpenAI-compatible API through litellm; a JSON schema goes as
  ``response_format = {"type": "json_schema", ...}``; a regular expression cannot be sent, so
  the answer is only checked (parse, then re-ask).
- ``vllm``: vLLM's OpenAI server; ``structured_outputs`` (``{"json": schema}`` or
  ``{"regex": pattern}``) in the request body: vLLM's name since 0.10, the only one since 0.12,
  which removed ``guided_json`` / ``guided_regex``.
- ``llama.cpp``: llama.cpp's server; ``json_schema`` in the request body (no regex).
- ``concord-local``: the built-in server (``evaluation.lib.llm.local_server``); the OpenAI
  ``response_format`` for a schema and vLLM's ``structured_outputs`` ``regex`` for a regular
  expression.

Pure Python: no Django import.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

BACKENDS = ("openai", "vllm", "llama.cpp", "concord-local")
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class AnswerFormatError(ValueError):
    """An answer that does not have the declared format; ``reason`` says why, for the run page."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class AnswerFormat:
    """NAME (letters, digits, ``_``, ``-``; at most 64, as OpenAI's schema name), and exactly
    one of JSON_SCHEMA (a JSON Schema object) or REGEX (matched against the whole answer)."""

    name: str
    json_schema: Mapping[str, Any] | None = field(default=None, hash=False)
    regex: str | None = None

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ValueError(f"answer format name {self.name!r}: letters, digits, _ and -")
        if (self.json_schema is None) == (self.regex is None):
            raise ValueError(f"answer format {self.name}: give exactly one of json_schema, regex")
        if self.regex is not None:
            re.compile(self.regex)

    @property
    def kind(self) -> str:
        return "json" if self.json_schema is not None else "regex"

    def canonical(self) -> dict[str, Any]:
        """What identifies the format (part of an LLM call's cache key)."""
        if self.json_schema is not None:
            return {"name": self.name, "json_schema": self.json_schema}
        return {"name": self.name, "regex": self.regex}

    @property
    def max_chars(self) -> int | None:
        """The most characters an answer of this format can have (compact JSON; `length_bound`),
        None when the format is unbounded."""
        return length_bound(self.json_schema, self.regex)

    @property
    def max_tokens(self) -> int | None:
        """The token cap of a call constrained to this format: ``max_chars`` + 1. Under the
        constraint every token adds at least one character and the last is the end of the
        answer, so this cap can never cut a constrained answer before it closes. None when the
        format is unbounded."""
        bound = self.max_chars
        return None if bound is None else bound + 1

    def check(self, text: str) -> Any:
        """The parsed answer (a JSON value, or the regex match's text); ``AnswerFormatError``
        when TEXT does not have this format. Schema validation is structural: types,
        ``required``, ``enum``, ``maxLength``, ``maxItems``, ``minimum``/``maximum``."""
        if self.regex is not None:
            if re.fullmatch(self.regex, text.strip(), flags=re.DOTALL) is None:
                raise AnswerFormatError(f"the answer does not match the {self.name} pattern")
            return text.strip()
        try:
            value = json.loads(text)
        except json.JSONDecodeError as error:
            raise AnswerFormatError(f"the answer is not JSON ({error.msg})") from None
        _validate(value, self.json_schema, "answer")
        return value


def compact_json(value: Any) -> str:
    """VALUE as compact JSON (no indentation, no spaces): what answers are asked to look like."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def request_parameters(answer_format: AnswerFormat | None, backend: str) -> dict[str, Any]:
    """The request parameters that constrain a call to ANSWER_FORMAT on BACKEND (litellm
    keyword arguments; ``extra_body`` for fields a server reads from the body); {} when the
    backend cannot constrain this format, so the answer is only checked."""
    if answer_format is None:
        return {}
    if backend not in BACKENDS:
        raise ValueError(f"unknown LLM backend {backend!r} (known: {', '.join(BACKENDS)})")
    schema, regex = answer_format.json_schema, answer_format.regex
    if backend == "vllm":
        return {"extra_body": {"structured_outputs": {"json": dict(schema)}
                               if schema is not None else {"regex": regex}}}
    if backend == "llama.cpp":
        return {"extra_body": {"json_schema": dict(schema)}} if schema is not None else {}
    if schema is not None:
        return {"response_format": {"type": "json_schema", "json_schema": {
            "name": answer_format.name, "schema": dict(schema), "strict": True}}}
    if backend == "concord-local":
        return {"extra_body": {"structured_outputs": {"regex": regex}}}
    return {}


# --- the length bound -------------------------------------------------------------------------

_REGEX_UNBOUNDED = 65535  # re's MAXREPEAT, as far as width is concerned


def length_bound(schema: Mapping[str, Any] | None, regex: str | None) -> int | None:
    """The most characters an answer matching REGEX, or SCHEMA written as compact JSON without
    escapes (as the built-in server writes it), can have; None when unbounded (a string
    without ``maxLength``, an array without ``maxItems``, an integer without both ``minimum``
    and ``maximum``, an object that allows other keys, a regex with ``*``, ``+`` or ``{n,}``).
    Both None: any JSON value, unbounded."""
    if regex is not None:
        width = _regex_width(regex)
        return None if width is None or width >= _REGEX_UNBOUNDED else width
    return _json_bound(schema) if schema is not None else None


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
        return max(len(compact_json(value)) for value in schema["enum"]) if schema["enum"] else 0
    if "const" in schema:
        return len(compact_json(schema["const"]))
    for combinator in ("anyOf", "oneOf"):
        if combinator in schema:
            bounds = [_json_bound(sub) for sub in schema[combinator]]
            return None if None in bounds or not bounds else max(bounds)  # type: ignore[type-var]
    kind = schema.get("type")
    if isinstance(kind, list):
        bounds = [_json_bound({**schema, "type": name}) for name in kind]
        return None if None in bounds or not bounds else max(bounds)  # type: ignore[type-var]
    return _BOUNDS.get(kind, lambda _: None)(schema)


def _string_bound(schema: Mapping[str, Any]) -> int | None:
    # Its characters and the quotes: the built-in server writes no escape in a string
    # (`local_decoding`), so each character of the string is one of the answer.
    if "maxLength" not in schema:
        return None
    return 2 + int(schema["maxLength"])


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
        total += len(compact_json(key)) + 1 + value
    return total


_BOUNDS: dict[Any, Callable[[Mapping[str, Any]], int | None]] = {
    "string": _string_bound,
    "integer": _integer_bound,
    "array": _array_bound,
    "object": _object_bound,
    "boolean": lambda _: 5,
    "null": lambda _: 4,
}


# --- schema validation ------------------------------------------------------------------------

_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def _validate(value: Any, schema: Mapping[str, Any], where: str) -> None:
    expected = schema.get("type")
    if expected is not None:
        names = expected if isinstance(expected, list) else [expected]
        if not any(_is_type(value, name) for name in names):
            raise AnswerFormatError(f"{where} should be {' or '.join(names)}")
    if "enum" in schema and value not in schema["enum"]:
        raise AnswerFormatError(f"{where} is not one of the allowed values")
    if isinstance(value, str) and len(value) > schema.get("maxLength", len(value)):
        raise AnswerFormatError(f"{where} is longer than {schema['maxLength']} characters")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            raise AnswerFormatError(f"{where} is below {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            raise AnswerFormatError(f"{where} is above {schema['maximum']}")
    if isinstance(value, list):
        if len(value) > schema.get("maxItems", len(value)):
            raise AnswerFormatError(f"{where} has more than {schema['maxItems']} items")
        if len(value) < schema.get("minItems", 0):
            raise AnswerFormatError(f"{where} has fewer than {schema['minItems']} items")
        for index, item in enumerate(value):
            _validate(item, schema.get("items", {}), f"{where}[{index}]")
    if isinstance(value, dict):
        missing = [key for key in schema.get("required", ()) if key not in value]
        if missing:
            raise AnswerFormatError(f"{where} lacks {', '.join(missing)}")
        properties = schema.get("properties", {})
        if schema.get("additionalProperties") is False:
            extra = sorted(set(value) - set(properties))
            if extra:
                raise AnswerFormatError(f"{where} has unexpected keys {', '.join(extra)}")
        for key, sub in properties.items():
            if key in value:
                _validate(value[key], sub, f"{where}.{key}")


def _is_type(value: Any, name: str) -> bool:
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, _TYPES.get(name, object))
