"""jsonio gives the standard library's answers: orjson only where the two agree."""

from __future__ import annotations

import json
import random

import pytest
from harness_sidecar.base import jsonio, stdjson
from harness_sidecar.extensions import channel


@pytest.mark.parametrize("text", [
    b'{"id":12345678901234567890123,"x":[1,2]}',  # beyond 64 bits: every digit kept
    b'{"id":-9223372036854775809}',
    b'["\\ud800 lone surrogate"]',
    b'{"a":1,"a":2}',
    b'[1.5e300, -0.0, 0, "\\u2028"]',
    '{"é":"ü😀"}'.encode(),
])
def test_reading_is_exactly_the_standard_librarys(text):
    assert jsonio.loads(text) == json.loads(text)
    assert type(jsonio.loads(text)) is type(json.loads(text))
    # the same in a long text (read by looking at its values, not its bytes), of few values and of many
    for filler in (b'"' + b"x" * jsonio.LONG_TEXT + b'"', b"[" + b"1," * (jsonio.LONG_TEXT // 2) + b"1]"):
        long = b"[" + filler + b"," + text + b"]"
        assert jsonio.loads(long) == json.loads(long)
        assert repr(jsonio.loads(long)) == repr(json.loads(long))  # every type and digit the same


@pytest.mark.parametrize("depth", [512, 513, 600])
def test_a_long_text_is_too_deep_past_512_levels_whatever_it_holds(depth):
    from harness_sidecar.base import jsondepth

    for filler in (b'"' + b"x" * jsondepth.WALK_FROM + b'"', b"1," * (jsondepth.WALK_FROM // 2) + b"1"):
        text = b"[" * depth + filler + b"]" * depth
        if depth > jsondepth.MAX_DEPTH:
            with pytest.raises(jsondepth.TooDeep):
                jsondepth.bounded_loads(jsonio.loads, text)
        else:
            assert jsondepth.bounded_loads(jsonio.loads, text) == json.loads(text)


@pytest.mark.parametrize("text", [b"[NaN]", b"[Infinity]", b"[-Infinity]", b"{", b'{"a":}', b"\xff\xfe", b""])
def test_what_is_not_json_is_refused(text):
    with pytest.raises(ValueError):
        jsonio.loads(text)


def test_malformed_input_keeps_the_standard_librarys_message():
    with pytest.raises(ValueError) as ours:
        jsonio.loads(b'{"id":1,"method":')
    with pytest.raises(ValueError) as theirs:
        json.loads(b'{"id":1,"method":')
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("value", [
    {"big": 2 ** 80, "small": -(2 ** 70)},
    ["\ud800", {"k": "\udfff"}],
    {"text": "plain", "n": [1, 2.5, None, True]},
])
def test_writing_reads_back_the_same(value):
    assert json.loads(jsonio.dumps(value)) == value


def test_writing_refuses_what_is_not_json_data():
    with pytest.raises((TypeError, ValueError)):
        jsonio.dumps({"x": object()})


def test_random_documents_round_trip_identically():
    rng = random.Random(7)

    def value(depth: int = 0):
        kind = rng.randrange(7 if depth < 4 else 4)
        if kind == 0:
            return rng.choice([rng.randrange(-10 ** 25, 10 ** 25), rng.randrange(-1000, 1000)])
        if kind == 1:
            return rng.random() * 10 ** rng.randrange(-5, 5)
        if kind == 2:
            return "".join(chr(rng.choice([rng.randrange(32, 127), rng.randrange(0xA0, 0x2FFF)]))
                           for _ in range(rng.randrange(12)))
        if kind == 3:
            return rng.choice([None, True, False])
        if kind in (4, 5):
            return [value(depth + 1) for _ in range(rng.randrange(4))]
        return {f"k{i}": value(depth + 1) for i in range(rng.randrange(4))}

    for _ in range(2000):
        document = value()
        text = json.dumps(document).encode()
        assert jsonio.loads(text) == json.loads(text)
        assert json.loads(jsonio.dumps(document)) == document


@pytest.fixture
def host_writing():
    """jsonio as the extension host sets it up: the standard library, but orjson for surely small values."""
    jsonio.standard_library_only(jsonio.SMALL_BYTES)
    try:
        yield
    finally:
        jsonio._fast, jsonio._small = True, None


@pytest.mark.parametrize("value", [
    ["step", 3, [2, {"content": [{"type": "text", "text": "hi \x00 info nano"}], "details": {"n": 1.5}}, []]],
    {"big": 2 ** 80},
    ["\ud800"],
    ["x" * 100] * 10_000,  # repeats: marshal version 0 counts each (this one goes to the standard library)
])
def test_the_hosts_writing_gives_the_standard_librarys_bytes(host_writing, value):
    assert jsonio.dumps(value) == stdjson.dumps(value)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_the_hosts_writing_refuses_non_finite_floats_even_in_small_values(host_writing, bad):
    with pytest.raises(ValueError):
        jsonio.dumps({"x": [1, bad]})


def _split(line: bytes, rng: random.Random) -> bytes:
    """``line`` through the sidecar's channel splitter in random pieces, as reads bring it; its frame decoded."""
    splitter = channel.LineSplitter(strings=True)
    data = line + b"\n"
    cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randrange(1, 40))))
    lines = []
    for start, end in zip([0] + cuts, cuts + [len(data)]):
        lines += splitter.feed(data[start:end])
    assert lines == [line]
    return channel.decode(lines[0], splitter.strings_of(lines[0]))


def test_long_strings_read_as_they_come_and_passed_through_are_what_parsing_and_encoding_give():
    """``LongStrings``/``loads_spans``/``dumps_parts`` (issue 32 item 4): the same values and the same bytes as
    ``loads``/``dumps``, however the pieces fall, whatever a long string holds and wherever it is (an object's value,
    a list's item, a key, twice)."""
    rng = random.Random(11)
    alphabet = ["a", "é", "😀", "\u2028", '"', "\\", "\n", "\x01", "/", " "]
    passed = 0
    for _ in range(150):
        strings = []
        for _ in range(rng.randrange(1, 4)):
            letters = alphabet[:rng.randrange(1, len(alphabet) + 1)]  # a, é, 😀, \u2028: no escape in JSON
            chunk = "".join(rng.choice(letters) for _ in range(97))
            size = rng.choice([10, 5000, 70_000, 200_000])
            strings.append((chunk * (size // 97 + 1))[:size])
        shape = rng.randrange(4)
        if shape == 0:
            body = {"result": {"content": [{"type": "text", "text": s} for s in strings]}}
        elif shape == 1:
            body = {s: i for i, s in enumerate(strings)}  # long keys: parsed with the rest
        elif shape == 2:
            body = [strings, {"same": strings[0]}, 12345678901234567890123]
        else:
            body = strings[0]
        line = json.dumps(["done", 3, body], ensure_ascii=rng.random() < 0.3, separators=(",", ":")).encode()
        frame = _split(line, rng)
        assert list(frame) == json.loads(line) and repr(list(frame)) == repr(json.loads(line))
        passed += bool(jsonio.kept())
        message = {"jsonrpc": "2.0", "id": 1, "result": frame[2]}
        assert b"".join(jsonio.dumps_parts(message)) == jsonio.dumps(message)
        assert b"".join(jsonio.dumps_parts(message)) == jsonio.dumps(message)  # written once: then encoded
    assert passed > 25  # the pass-through was taken
    jsonio._kept.clear()


@pytest.mark.parametrize("bad", [b"\x01", b"\xff\xfe", b"\xf0\x9f", b"\\x", b"\\u12g", b'"'])
def test_what_is_not_json_in_a_long_string_is_refused_however_it_comes(bad):
    rng = random.Random(5)
    for _ in range(20):
        line = b'["done",3,{"text":"' + b"a" * rng.randrange(1, 300_000) + bad + b"a" * 200_000 + b'"}]'
        with pytest.raises(channel.FrameError):
            _split(line, rng)
    jsonio._kept.clear()


@pytest.mark.parametrize("odd", [b"\\ud800", b"\\ud83d\\u0041", b"\\ud83d\\ude00", b"\\/\\u0041\\\\"])
def test_what_orjson_refuses_or_writes_otherwise_in_a_long_string_is_read_as_the_standard_library_reads_it(odd):
    rng = random.Random(6)
    for _ in range(20):
        line = b'["done",3,{"text":"' + b"a" * rng.randrange(1, 300_000) + odd + b"a" * 200_000 + b'"}]'
        frame = _split(line, rng)
        assert list(frame) == json.loads(line)
        message = {"jsonrpc": "2.0", "id": 1, "result": frame[2]}
        assert b"".join(jsonio.dumps_parts(message)) == jsonio.dumps(message)
    jsonio._kept.clear()


def _fed(line: bytes, piece: int = 1 << 20) -> tuple[float, channel.LineSplitter, bytes]:
    import time

    splitter = channel.LineSplitter(strings=True)
    began = time.perf_counter()
    out: list = []
    for at in range(0, len(line), piece):
        out += splitter.feed(line[at:at + piece])
    return time.perf_counter() - began, splitter, out[0]


def test_a_line_of_very_many_short_strings_is_split_in_time_linear_in_its_bytes():
    """The sidecar's splitter follows a long line's strings as its pieces come, on the event loop. 200,000 short
    strings in 1.2 MB once took ~6 s there (each string copied what followed it); the same run's whole-line parse of
    that line is the yardstick (~20 ms): feeding it must cost no more than a few parses, not hundreds."""
    import time

    line = json.dumps(["done", 1, {"items": ["ab"] * 200_000}]).encode() + b"\n"
    took, splitter, joined = min((_fed(line) for _ in range(3)), key=lambda r: r[0])
    began = time.perf_counter()
    for _ in range(3):
        json.loads(joined)
    parse = (time.perf_counter() - began) / 3
    assert took < 5 * parse, (took, parse)
    assert channel.decode(joined, splitter.strings_of(joined))[2] == {"items": ["ab"] * 200_000}


def test_commas_inside_a_long_text_are_not_counted_as_values():
    """A 6 MB CSV text is one value: the frame is parsed, not refused as too large (before: its 1.5 million commas
    counted as values and the result came back as 'larger than --max-result-bytes'). Very many small values still are
    refused before parsing."""
    csv = "id,name\n" + "1,a,2,x\n" * 750_000
    line = json.dumps(["done", 7, {"content": [{"type": "text", "text": csv}]}]).encode() + b"\n"
    _took, splitter, joined = _fed(line)
    assert channel.too_many_values(joined, splitter.commas_of(joined)) is None
    assert channel.decode(joined, splitter.strings_of(joined))[2]["content"][0]["text"] == csv
    many = json.dumps(["done", 8, {"content": [{"type": "text", "text": "ab"}] * 300_000}]).encode() + b"\n"
    _took, splitter, joined = _fed(many)
    assert channel.too_many_values(joined, splitter.commas_of(joined)) is not None
