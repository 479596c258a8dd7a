"""Bounded decoders: YAML aliases counted before the document is built, compressed bodies
inflated with a ceiling. Sizes here are computed by hand from the inputs' shapes."""

from __future__ import annotations

import dataclasses
import gzip
import zlib

import pytest

from cachecast.core.errors import LimitExceededError, RecordFieldError
from cachecast.core.limits import DEFAULT_LIMITS, limits_in_force
from cachecast.logs.decoding import YamlError, decompress, load_yaml


def _laughs(levels: int, fan_out: int = 9) -> str:
    """The classic bomb: level k is a list of ``fan_out`` aliases of level k-1."""
    lines = ['a0: &a0 "lol"']
    for level in range(1, levels + 1):
        items = ", ".join(f"*a{level - 1}" for _ in range(fan_out))
        lines.append(f"a{level}: &a{level} [{items}]")
    return "\n".join(lines) + "\n"


def test_an_ordinary_alias_is_read_as_the_same_value() -> None:
    # vcrpy (PyYAML's dumper) writes an anchor for an object that appears twice.
    text = "headers: &id001\n  a: [x]\nagain: *id001\n"
    data, node = load_yaml(text, source="c.yaml")
    assert data == {"headers": {"a": ["x"]}, "again": {"a": ["x"]}}
    assert node is not None and node.start_mark.line == 0


def test_billion_laughs_is_refused_before_it_is_built() -> None:
    # 9 levels of 9 aliases: the last level alone expands to 9**9 = 387,420,489 scalars, far
    # over 20,000,000 nodes, from a file of 500 bytes.
    text = _laughs(9)
    assert len(text) == 500  # 14 + 9 lines of 54 bytes
    with pytest.raises(LimitExceededError) as caught:
        load_yaml(text, source="bomb.yaml")
    assert "max_yaml_nodes" in str(caught.value)
    assert caught.value.location.source == "bomb.yaml"


def test_the_node_count_is_exact_at_the_limit() -> None:
    # a0 is 1 scalar; a1 = 1 sequence + 9 = 10 nodes; the root mapping holds keys a0, a1
    # (2 scalars) and values a0 (1) and a1 (10): 1 + 2 + 1 + 10 = 14 nodes expanded.
    text = _laughs(1)
    tight = dataclasses.replace(DEFAULT_LIMITS, max_yaml_nodes=14)
    with limits_in_force(tight):
        data, _ = load_yaml(text, source="x.yaml")
    assert data["a1"] == ["lol"] * 9
    tighter = dataclasses.replace(DEFAULT_LIMITS, max_yaml_nodes=13)
    with limits_in_force(tighter), pytest.raises(LimitExceededError):
        load_yaml(text, source="x.yaml")


def test_a_long_string_aliased_many_times_is_counted_in_characters() -> None:
    # One 1,000-character scalar aliased 100 times: 1,000 * 101 = 101,000 characters.
    text = "s: &s " + "x" * 1000 + "\nl: [" + ", ".join(["*s"] * 100) + "]\n"
    limits = dataclasses.replace(DEFAULT_LIMITS, max_yaml_chars=101_000 + 2)  # + keys "s", "l"
    with limits_in_force(limits):
        data, _ = load_yaml(text, source="s.yaml")
    assert len(data["l"]) == 100
    limits = dataclasses.replace(DEFAULT_LIMITS, max_yaml_chars=100_000)
    with limits_in_force(limits), pytest.raises(LimitExceededError) as caught:
        load_yaml(text, source="s.yaml")
    assert "max_yaml_chars" in str(caught.value)


def test_a_self_referencing_alias_is_invalid_yaml() -> None:
    with pytest.raises(YamlError) as caught:
        load_yaml("a: &a [1, *a]\n", source="loop.yaml")
    assert "contains it" in caught.value.reason


def test_text_that_is_not_yaml_names_its_line() -> None:
    with pytest.raises(YamlError) as caught:
        load_yaml("a: [1, 2\nb: c: d\n", source="bad.yaml")
    assert caught.value.line is not None


def test_gzip_and_deflate_round_trip() -> None:
    body = b'{"usage": {"input_tokens": 12}}'
    assert decompress(gzip.compress(body), "gzip", field="body") == body
    assert decompress(zlib.compress(body), "deflate", field="body") == body
    raw = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    raw_deflate = raw.compress(body) + raw.flush()
    assert decompress(raw_deflate, "Deflate", field="body") == body
    # Two gzip members back to back are one gzip stream (RFC 1952, section 2.2).
    assert decompress(gzip.compress(b"ab") + gzip.compress(b"cd"), "gzip", field="b") == b"abcd"


def test_a_gzip_bomb_stops_at_the_ceiling() -> None:
    # 50 MB of zeros compress to about 50 KB; the ceiling is 10 MB.
    bomb = gzip.compress(b"\0" * 50_000_000)
    assert len(bomb) < 100_000
    limits = dataclasses.replace(DEFAULT_LIMITS, max_decompressed_bytes=10_000_000)
    with limits_in_force(limits), pytest.raises(LimitExceededError) as caught:
        decompress(bomb, "gzip", field="response.body")
    assert "max_decompressed_bytes" in str(caught.value)
    assert caught.value.location.field == "response.body"


def test_truncated_and_unknown_encodings_name_the_field() -> None:
    with pytest.raises(RecordFieldError) as caught:
        decompress(gzip.compress(b"hello world")[:-10], "gzip", field="response.body")
    assert caught.value.field == "response.body"
    with pytest.raises(RecordFieldError):
        decompress(b"abc", "compress", field="response.body")


def test_a_document_of_many_written_nodes_is_refused_before_it_is_built() -> None:
    # No alias at all: a list of 101 scalars written out is 1 sequence + 101 scalars = 102
    # nodes. Under a limit of 101 the parser's 102nd node event refuses it (line 101: the
    # 101st item; the sequence's own event is the first), before any node is composed.
    text = "".join(f"- {index}\n" for index in range(101))
    tight = dataclasses.replace(DEFAULT_LIMITS, max_yaml_nodes=101)
    with limits_in_force(tight), pytest.raises(LimitExceededError) as caught:
        load_yaml(text, source="many.yaml")
    assert "max_yaml_nodes" in str(caught.value) and "at least 102" in str(caught.value)
    assert caught.value.location.source == "many.yaml"
    assert caught.value.location.line == 101
    exact = dataclasses.replace(DEFAULT_LIMITS, max_yaml_nodes=102)
    with limits_in_force(exact):
        data, _ = load_yaml(text, source="many.yaml")
    assert data == list(range(101))
