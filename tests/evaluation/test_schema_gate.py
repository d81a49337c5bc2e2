"""The compiled schema check (jsonschema-rs) that lets a valid record through without walking it
in Python agrees with the Python validator that words the errors: on valid records and on every
single-field corruption of them, for every schema a record is read with."""

import copy

import pytest

from evaluation.lib.formats.jsonl import _compiled, validator
from tests.support.bundles import tiny_data
from tests.support.submissions import tiny_lines

BAD_VALUES = [None, 5, -1, 2.5, "x", "", [], ["x"], [5], {}, {"x": 1}, True, 10**30]


def _records():
    data = tiny_data()
    yield "benchmark", data["benchmark"]
    for name, schema in (("items", "item"), ("reviews", "review"), ("dialogues", "dialogue")):
        for record in data[name]:
            yield schema, record
    for line in tiny_lines():
        yield "submission_turn", line


def _corruptions(record):
    """The record with one field (at any depth) removed, replaced by each bad value, or an
    unexpected field added beside it."""
    def walk(node, path):
        if isinstance(node, dict):
            yield path, node
            for key, child in node.items():
                yield from walk(child, (*path, key))
        elif isinstance(node, list):
            for i, child in enumerate(node):
                yield from walk(child, (*path, i))

    for path, node in list(walk(record, ())):
        for key in list(node):
            for change in ["drop", "extra", *range(len(BAD_VALUES))]:
                corrupt = copy.deepcopy(record)
                target = corrupt
                for step in path:
                    target = target[step]
                if change == "drop":
                    del target[key]
                elif change == "extra":
                    target["unexpected_field"] = 1
                else:
                    target[key] = BAD_VALUES[change]
                yield corrupt


@pytest.mark.parametrize("schema,record", list(_records()))
def test_the_compiled_check_agrees_with_the_python_validator(schema, record):
    python = validator(schema)
    assert _compiled(schema).is_valid(record) and not list(python.iter_errors(record))
    checked = 0
    for corrupt in _corruptions(record):
        assert _compiled(schema).is_valid(corrupt) == (not list(python.iter_errors(corrupt))), \
            corrupt
        checked += 1
    assert checked > 20
