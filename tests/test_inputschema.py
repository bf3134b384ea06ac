"""inputschema: JSON Schema 2020-12 for tool arguments, and its library-free path for simple schemas."""

from __future__ import annotations

import itertools
import json
import random
import subprocess
import sys

import jsonschema_rs
import pytest
from harness_sidecar.console.client import child_env
from harness_sidecar.base.inputschema import (
    CompiledSchema,
    InvalidSchema,
    _build,
    _Simple,
    compile,
    json_path,
)

NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
BIG = {
    "$defs": {"range": {"type": "object", "properties": {"start": {"type": "integer", "minimum": 0},
                                                         "end": {"type": "integer", "minimum": 0}},
                        "required": ["start", "end"], "additionalProperties": False}},
    "type": "object",
    "properties": {
        "path": {"type": "string", "minLength": 1},
        "mode": {"enum": ["read", "write"]},
        "ranges": {"type": "array", "items": {"$ref": "#/$defs/range"}},
        "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": False},
        "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+$"}, "uniqueItems": True},
    },
    "required": ["path", "mode"],
    "dependentRequired": {"ranges": ["mode"]},
    "unevaluatedProperties": False,
}


@pytest.mark.parametrize("instance, expected", [
    ({"name": "review"}, None),
    ({}, ('"name" is a required property', "$")),
    ({"name": 42}, ('42 is not of type "string"', "$.name")),
    ("text", ('"text" is not of type "object"', "$")),
])
def test_typical_schema_answers_message_and_path(instance, expected):
    assert compile(NAME).first_error(instance) == expected


@pytest.mark.parametrize("instance, path", [
    ({"path": "a", "mode": "read", "ranges": [{"start": 1, "end": 2}, {"start": -1, "end": 2}]}, "$.ranges[1].start"),
    ({"path": "a", "mode": "delete"}, "$.mode"),
    ({"path": "", "mode": "read"}, "$.path"),
    ({"path": "a", "mode": "read", "tags": ["ok", "Not-ok"]}, "$.tags[1]"),
    ({"path": "a", "mode": "read", "pair": ["x", "y"]}, "$.pair[1]"),          # 2020-12 prefixItems
    ({"path": "a", "mode": "read", "pair": ["x", 1, 2]}, "$.pair[2]"),         # items: false after prefixItems
    ({"path": "a", "mode": "read", "extra": 1}, "$"),                          # 2020-12 unevaluatedProperties
])
def test_larger_schema_with_2020_12_keywords_points_at_the_offending_value(instance, path):
    compiled = compile(BIG)
    message, where = compiled.first_error(instance)
    assert where == path and message
    assert compiled.first_error({"path": "a", "mode": "read", "ranges": [{"start": 0, "end": 3}],
                                 "pair": ["x", 1], "tags": ["a", "b"]}) is None


@pytest.mark.parametrize("schema, fragment", [
    ({"type": "foo"}, "(at /type)"),
    ({"type": "object", "properties": {"a": 5}}, "(at /properties/a)"),
    ({"minLength": -1}, "(at /minLength)"),
    ({"required": ["a", "a"]}, "non-unique"),
    ({"$ref": "#/$defs/missing"}, "does not exist"),
    ({"pattern": "["}, "regex"),
    ({"$schema": "https://example.com/my-meta"}, "Unknown meta-schema"),
    (5, "an object or a boolean"),
    ([], "an object or a boolean"),
])
def test_invalid_schemas_are_refused_at_compile_time(schema, fragment):
    with pytest.raises(InvalidSchema) as caught:
        compile(schema)
    assert fragment in caught.value.message


@pytest.mark.parametrize("ref", ["http://127.0.0.1:9/schema.json", "file:///etc/passwd"])
def test_remote_refs_are_never_fetched(ref):
    with pytest.raises(InvalidSchema) as caught:
        compile({"type": "object", "properties": {"a": {"$ref": ref}}})
    assert "Retrieval is disabled" in caught.value.message


def test_another_draft_named_by_dollar_schema_is_honoured():
    draft7 = compile({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
                      "properties": {"mail": {"type": "string", "format": "email"}}})
    assert draft7.first_error({"mail": "not an address"})[1] == "$.mail"  # draft 7 asserts formats
    default = compile({"type": "object", "properties": {"mail": {"type": "string", "format": "email"}}})
    assert default.first_error({"mail": "not an address"}) is None  # 2020-12: format is an annotation


def test_json_path_quotes_what_is_not_an_identifier():
    assert json_path([]) == "$"
    assert json_path(["items", 2, "name"]) == "$.items[2].name"
    assert json_path(["a b", "it's", "back\\slash", "_ok1"]) == "$['a b']['it\\'s']['back\\\\slash']._ok1"


def test_values_that_are_not_json_data_are_errors_not_crashes():
    compiled = compile(BIG)
    message, where = compiled.first_error({"path": object(), "mode": "read"})
    assert where == "$" and "cannot be checked" in message


# -- the library-free path --------------------------------------------------------------------

SIMPLE = [
    True, {}, {"type": "object"}, {"type": "object", "properties": {}},
    {"type": "object", "properties": {}, "additionalProperties": False},
    {"type": "object", "properties": {}, "additionalProperties": True, "required": []},
    {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": {},
     "additionalProperties": False},
    {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "title": "T", "description": "D"},
    NAME,
    {"type": "object", "properties": {"name": {"type": "string", "description": "The skill's name."}},
     "required": ["name"], "additionalProperties": False},
    {"type": "object", "properties": {"n": {"type": "integer"}, "x": {"type": "number"}, "b": {"type": "boolean"},
                                      "o": {"type": "object"}, "l": {"type": "array"}, "z": {"type": "null"},
                                      "s": {"type": ["string", "null"]}, "any": {}, "t": True}},
    {"properties": {"a": {"type": "string"}}, "required": ["a"]},  # no "type": non-objects pass
    {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a", "b"], "additionalProperties": {}},
]
NOT_SIMPLE = [
    False, {"type": "string"}, {"type": ["object"]}, {"additionalProperties": False},
    {"type": "object", "properties": {"a": {"type": "string", "minLength": 1}}},
    {"type": "object", "properties": {"a": {"enum": ["x"]}}},
    {"type": "object", "properties": {"a": {"type": "str"}}},
    {"type": "object", "properties": {"a": {"type": ["string", "string"]}}},
    {"type": "object", "required": ["a", "a"]},
    {"type": "object", "title": 5},
    {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object", "required": []},
    {"$schema": ["x"], "type": "object"},
    {"type": "object", "properties": {"a": False}},
    {"type": "object", "minProperties": 1},
]


@pytest.mark.parametrize("schema", SIMPLE, ids=lambda s: json.dumps(s)[:60])
def test_simple_schemas_are_recognised_and_valid_for_the_library(schema):
    assert _Simple.recognise(schema) is not None
    _build(schema)  # the library accepts the schema too: compile() never skips a refusal


@pytest.mark.parametrize("schema", NOT_SIMPLE, ids=lambda s: json.dumps(s)[:60])
def test_everything_else_goes_to_the_library(schema):
    assert _Simple.recognise(schema) is None


def random_instance(rng: random.Random, depth: int = 0):
    scalars = [None, True, False, 0, 1, -3, 1.0, 2.5, -0.0, 1e300, 2 ** 70, "", "a", "name", "é✓"]
    kind = rng.random()
    if depth > 2 or kind < 0.5:
        return rng.choice(scalars)
    if kind < 0.65:
        return [random_instance(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    keys = ["name", "a", "b", "n", "x", "b", "o", "l", "z", "s", "any", "t", "extra", "a b"]
    return {rng.choice(keys): random_instance(rng, depth + 1) for _ in range(rng.randint(0, 4))}


def test_the_simple_path_gives_the_library_s_answer_on_many_cases():
    rng = random.Random(13)
    checked = invalid = 0
    for schema in SIMPLE:
        simple_path = compile(schema)
        assert simple_path.simple is not None
        library_path = CompiledSchema(schema, None, _build(schema))
        library = jsonschema_rs.validator_for(schema)
        instances = [random_instance(rng) for _ in range(400)]
        instances += [{"name": "x"}, {"name": "x", "extra": 1}, {"a": 1, "b": 2}, {"n": 1.0}, {"n": True}, {"x": True},
                      {"s": None}, {"s": 1}, {"t": object}, [], "s", 0]
        for instance in instances:
            if instance == {"t": object}:
                continue  # not JSON data
            assert simple_path.simple.accepts(instance) == library.is_valid(instance), (schema, instance)
            assert simple_path.first_error(instance) == library_path.first_error(instance), (schema, instance)
            checked += 1
            invalid += simple_path.first_error(instance) is not None
    assert checked > 5000 and invalid > 1000  # both answers were exercised, many times


def test_threads_with_simple_schemas_never_import_the_library():
    code = (
        "import sys, json\n"
        "from harness_sidecar.base.inputschema import compile\n"
        "schemas = " + repr(SIMPLE) + "\n"
        "compiled = [compile(s) for s in schemas]\n"
        "assert all(c.first_error({'name': 'x', 'a': 'y', 'b': 1}) is None for c in compiled[:4])\n"
        "assert compiled[8].first_error({'name': 'review'}) is None\n"
        "print('jsonschema_rs' in sys.modules)\n"
        "compiled[8].first_error({})\n"  # an invalid call: now the library describes it
        "print('jsonschema_rs' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=child_env(), timeout=60)
    assert out.stdout.split() == ["False", "True"], out.stderr


def test_compiled_schemas_are_shared_safely_across_threads():
    from concurrent.futures import ThreadPoolExecutor

    compiled = compile(BIG)
    good = {"path": "a", "mode": "read"}
    bad = {"path": "a", "mode": "nope"}
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda i: compiled.first_error(good if i % 2 else bad), range(400)))
    assert answers[1::2] == [None] * 200 and all(a and a[1] == "$.mode" for a in answers[::2])


def test_module_imports_nothing_of_the_package():
    code = ("import sys; import harness_sidecar.base.inputschema\n"
            "print(sorted(m for m in sys.modules if m.startswith('harness_sidecar.')\n"
            "             and m not in ('harness_sidecar.base', 'harness_sidecar.base.inputschema')))")  # base/: its folder
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=child_env(), timeout=60)
    assert out.stdout.strip() == "[]", out.stderr


def test_first_error_is_deterministic_for_several_errors():
    compiled = compile(NAME | {"additionalProperties": False})
    answers = {compiled.first_error({"name": 1, "other": 2}) for _ in range(50)}
    assert len(answers) == 1
    assert list(itertools.islice(answers, 1))[0][0] in {'1 is not of type "string"',
                                                       "Additional properties are not allowed ('other' was unexpected)"}
