"""Bounded decoders: YAML aliases counted before the document is built, compressed bodies
inflated with a ceiling. Sizes here are computed by hand from the inputs' shapes."""

from __future__ import annotations

import base64
import dataclasses
import gzip
import json
import os
import zlib
from pathlib import Path
from typing import Any

import brotli
import pytest
import zstandard

from bench.peak import run_measured
from cachecast.core.errors import LimitExceededError, RecordFieldError
from cachecast.core.limits import DEFAULT_LIMITS, limits_in_force
from cachecast.logs.compressed import decompressed_copy, remove
from cachecast.logs.decoding import YamlError, decompress, load_yaml
from cachecast.logs.errors import LogFileError
from tests.logs.helpers import read, totals, vcr_cassette, vcr_interaction

REPO = Path(__file__).resolve().parents[2]


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
    data = load_yaml(text, source="c.yaml").data
    assert data == {"headers": {"a": ["x"]}, "again": {"a": ["x"]}}
    assert data["again"] is data["headers"]  # the one object the anchor names


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
        data = load_yaml(text, source="x.yaml").data
    assert data["a1"] == ["lol"] * 9
    tighter = dataclasses.replace(DEFAULT_LIMITS, max_yaml_nodes=13)
    with limits_in_force(tighter), pytest.raises(LimitExceededError):
        load_yaml(text, source="x.yaml")


def test_a_long_string_aliased_many_times_is_counted_in_characters() -> None:
    # One 1,000-character scalar aliased 100 times: 1,000 * 101 = 101,000 characters.
    text = "s: &s " + "x" * 1000 + "\nl: [" + ", ".join(["*s"] * 100) + "]\n"
    limits = dataclasses.replace(DEFAULT_LIMITS, max_yaml_chars=101_000 + 2)  # + keys "s", "l"
    with limits_in_force(limits):
        data = load_yaml(text, source="s.yaml").data
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


def assert_stopped_at_ten_megabytes(bomb: bytes, encoding: str) -> None:
    """``bomb`` refused under a ceiling of 10 MB (``max_decompressed_bytes``), the error
    naming the setting and the body's field."""
    limits = dataclasses.replace(DEFAULT_LIMITS, max_decompressed_bytes=10_000_000)
    with limits_in_force(limits), pytest.raises(LimitExceededError) as caught:
        decompress(bomb, encoding, field="response.body")
    assert "max_decompressed_bytes" in str(caught.value)
    assert caught.value.location.field == "response.body"


def test_a_gzip_bomb_stops_at_the_ceiling() -> None:
    # 50 MB of zeros compress to about 50 KB; the ceiling is 10 MB.
    bomb = gzip.compress(b"\0" * 50_000_000)
    assert len(bomb) < 100_000
    assert_stopped_at_ten_megabytes(bomb, "gzip")


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
        data = load_yaml(text, source="many.yaml").data
    assert data == list(range(101))


def test_a_cassette_of_a_million_written_nodes_is_read_in_bounded_memory(tmp_path: Path) -> None:
    """Issue 28: under the command line's node budget a 5 MB file of 1.25 million items was
    composed into a node tree at about a kilobyte a node (1.2 GB). Built from the parser's
    events, the items cost what their values do. One interaction holding 1,250,000 distinct
    integers (a sequence of 1 + 1,250,000 nodes, under the 2,000,000 of max_yaml_nodes) is
    one bad record, named by file, line 2 and field, in a child process under 500 MB."""
    cassette = tmp_path / "items.yaml"
    items = ",".join(str(1_000_000 + index) for index in range(1_250_000))
    cassette.write_text(f"interactions:\n- [{items}]\n")
    assert cassette.stat().st_size > 9_000_000  # 1.25M items of 8 bytes each
    ran = run_measured("cachecast", ["inspect", str(cassette)], env=_env(), cwd=REPO)
    assert "Traceback" not in ran.stderr
    assert f"{cassette}:2: interactions[0]: expected a mapping" in ran.stderr, ran.stderr
    assert ran.peak_kib < 500 * 1024, ran


def test_a_billion_laughs_cassette_is_exit_2_in_bounded_memory(tmp_path: Path) -> None:
    """The 500-byte bomb above as a cassette on the command line: exit 2 naming the file and
    the setting, the process under 500 MB (before issue 28: past 4 GB)."""
    cassette = tmp_path / "bomb.yaml"
    cassette.write_text("interactions:\n- x\n" + _laughs(9))
    ran = run_measured("cachecast", ["inspect", str(cassette)], env=_env(), cwd=REPO)
    assert ran.returncode == 2, ran.stderr
    assert str(cassette) in ran.stderr and "max_yaml_nodes" in ran.stderr
    assert "Traceback" not in ran.stderr
    assert ran.peak_kib < 500 * 1024, ran


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


def test_scalars_resolve_as_the_safe_schema_says() -> None:
    # YAML 1.1 implicit types (yaml.org/type): 012 is octal (10), 0x1F hexadecimal (31),
    # "yes" a bool, ~ null, 1.5e+3 a float; quoted text is a string whatever it reads as.
    text = "a: 012\nb: 0x1F\nc: yes\nd: ~\ne: 1.5e+3\nf: '12'\ng: 12\nh: text\n"
    data = load_yaml(text, source="t.yaml").data
    assert data == {
        **{"a": 10, "b": 31, "c": True, "d": None},
        **{"e": 1500.0, "f": "12", "g": 12, "h": "text"},
    }


def test_merge_keys_and_local_binary_tags() -> None:
    # `<<` takes the named mapping's entries, the mapping's own win; Ruby's !binary is
    # base64: "aGk=" is "hi".
    text = "base: &b {x: 1, y: 2}\nm:\n  <<: *b\n  y: 3\nbody: !binary aGk=\n"
    data = load_yaml(
        text, source="m.yaml", tag_aliases={"!binary": "tag:yaml.org,2002:binary"}
    ).data
    assert data["m"] == {"x": 1, "y": 3}
    assert data["body"] == b"hi"


@pytest.mark.parametrize(
    ("text", "words", "line"),
    [
        ("a: 1\n---\nb: 2\n", "a second document", 2),
        ("a: !ruby/object:Foo {}\n", "is not read here", 1),
        ("a: &x 1\nb: &x 2\n", "defined twice", 2),
        ("a: *nowhere\n", "undefined anchor", 1),
        ("a: 1\nb: " + "9" * 5000 + "\n", "an integer of 5,000 digits", 2),
        ("a: 2024-13-45\n", "cannot hold", 1),
        ("? [1, 2]\n: x\n", "a mapping key that is a list", 1),
    ],
)
def test_documents_it_cannot_build_name_their_line(text: str, words: str, line: int) -> None:
    with pytest.raises(YamlError) as caught:
        load_yaml(text, source="x.yaml")
    assert words in caught.value.reason
    assert caught.value.line == line


def test_a_gzip_body_is_held_to_the_document_bound(tmp_path: Path) -> None:
    """Issue 28: under the command line's max_decompressed_bytes (1 GB) a 1.2 MB HAR whose
    response body inflated to 900 MB took 2 GB to read. A body is held whole and parsed at
    once, as a JSON document is: it is bounded by max_document_bytes (64 MiB) too. Here 80
    MiB of spaces gzipped (about 80 KB): exit 2 naming file, line 1 (a HAR's entries are
    numbered as records on line 1), the entry's field and the setting, under 500 MB."""
    body = gzip.compress(b"{" + b" " * (80 * 1024 * 1024) + b"}", 9)
    entry = {
        "startedDateTime": "2026-01-01T00:00:00Z",
        "request": {
            "method": "POST",
            "url": "https://api.openai.com/v1/chat/completions",
            "headers": [],
            "postData": {"mimeType": "application/json", "text": '{"model": "gpt-4o"}'},
        },
        "response": {
            "status": 200,
            "headers": [{"name": "Content-Encoding", "value": "gzip"}],
            "content": {
                "mimeType": "application/json",
                "encoding": "base64",
                "text": base64.b64encode(body).decode(),
            },
        },
    }
    har = tmp_path / "bomb.har"
    har.write_text(json.dumps({"log": {"version": "1.2", "entries": [entry]}}))
    ran = run_measured("cachecast", ["inspect", str(har)], env=_env(), cwd=REPO)
    assert ran.returncode == 2, ran.stderr
    assert f"{har}:1: log.entries[0].response.body: a compressed body" in ran.stderr
    assert "max_document_bytes" in ran.stderr and "Traceback" not in ran.stderr
    assert ran.peak_kib < 500 * 1024, ran


def test_a_body_bound_names_the_smaller_setting() -> None:
    # 3 MB of zeros: over a document bound of 2 MB, under max_decompressed_bytes of 10 MB.
    bomb = gzip.compress(b"\0" * 3_000_000)
    limits = dataclasses.replace(
        DEFAULT_LIMITS, max_decompressed_bytes=10_000_000, max_document_bytes=2_000_000
    )
    with limits_in_force(limits), pytest.raises(LimitExceededError) as caught:
        decompress(bomb, "gzip", field="response.body")
    assert "max_document_bytes" in str(caught.value)


def test_a_cassette_of_many_bad_interactions_keeps_only_what_is_shown(tmp_path: Path) -> None:
    """Issue 28: a 5 MB cassette of 1.25 million items, each an interaction that is not a
    mapping, took the command line to 1.2 GB: every bad entry was held as its error (about
    a kilobyte) while the recording was read, and inspect kept them all to show 100. Now an
    entry is held as its line, field and reason, and inspect keeps the 100 it shows. 600,000
    items (2.4 MB): 600,000 bad lines counted, 100 listed, in a child under 500 MB."""
    cassette = tmp_path / "many.yaml"
    cassette.write_text("interactions:\n" + "- 1\n" * 600_000)
    ran = run_measured("cachecast", ["inspect", str(cassette), "--json"], env=_env(), cwd=REPO)
    assert "Traceback" not in ran.stderr
    (report,) = json.loads(ran.stdout)["files"]
    assert report["error_count"] == 600_000
    assert len(report["errors"]) == 100
    # The first item is on line 2 (line 1 holds the key).
    assert report["errors"][0].startswith(f"{cassette}:2: interactions[0]: expected a mapping")
    assert ran.peak_kib < 500 * 1024, ran


def test_python_call_tags_are_read_as_their_argument_never_called() -> None:
    # vcrpy dumping aiohttp's CIMultiDict headers writes each key as a call of multidict's
    # istr on the header name (docs/log-formats.md). With local tags read plain, a call is
    # read as its argument: a one-item sequence as that item, a mapping as its args; a
    # tuple as a list, !!python/unicode as text. The named callables do not exist here: were
    # they imported or called, reading would fail.
    text = (
        "headers:\n"
        "  ? !!python/object/apply:no_such_module.istr\n"
        "  - Accept\n"
        "  : - application/json\n"
        "  ? !!python/object/new:no_such_module.istr [Content-Type]\n"
        "  : - text/plain\n"
        "pair: !!python/object/apply:no_such_module.f {args: [1, 2], kwds: {x: 3}}\n"
        "state: !!python/object/new:no_such_module.C {state: {a: 1}}\n"
        "tuple: !!python/tuple [a, b]\n"
        "old: !!python/unicode caf\\xe9\n"
    )
    data = load_yaml(text, source="aiohttp.yaml", local_tags_plain=True).data
    assert data["headers"] == {"Accept": ["application/json"], "Content-Type": ["text/plain"]}
    assert data["pair"] == [1, 2]
    assert data["state"] == {"state": {"a": 1}}
    assert data["tuple"] == ["a", "b"]
    assert data["old"] == "caf\\xe9"
    # Without local tags read plain (every reader but the cassettes'), still refused.
    with pytest.raises(YamlError, match=r"python/object/apply:no_such_module\.istr"):
        load_yaml(text, source="aiohttp.yaml")


# OpenAI's chat usage (docs/log-formats.md): 1,500 prompt tokens of which 1,280 cached, 20 out.
CHAT_RESPONSE = {
    "object": "chat.completion",
    "model": "gpt-4o-2024-08-06",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "hello"}}],
    "usage": {
        "prompt_tokens": 1500,
        "completion_tokens": 20,
        "prompt_tokens_details": {"cached_tokens": 1280},
    },
}


@pytest.mark.parametrize(
    ("encoding", "compress"),
    [("br", brotli.compress), ("zstd", zstandard.ZstdCompressor().compress)],
)
def test_brotli_and_zstd_bodies_are_read_with_their_usage(
    tmp_path: Path, encoding: str, compress: Any
) -> None:
    body = json.dumps(CHAT_RESPONSE).encode()
    assert decompress(compress(body), encoding, field="body") == body
    cassette = vcr_cassette(
        tmp_path / f"{encoding}.yaml",
        vcr_interaction(
            "https://api.openai.com/v1/chat/completions",
            {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]},
            compress(body),
            content_encoding=encoding,
        ),
    )
    done = read(cassette)
    assert done.errors == [] and len(done.requests) == 1
    # The usage as written above: 1,500 in (1,280 of them read), 20 out.
    assert totals(done.requests) == {"input": 1500, "read": 1280, "write": 0, "output": 20}


def test_a_brotli_bomb_stops_at_the_ceiling() -> None:
    # 50 MB of zeros compress to a few dozen bytes under brotli; the ceiling is 10 MB, and
    # the decoder gives its output a megabyte or two at a time, so it stops near the ceiling.
    bomb = brotli.compress(b"\0" * 50_000_000)
    assert len(bomb) < 1_000
    assert_stopped_at_ten_megabytes(bomb, "br")


@pytest.mark.parametrize(
    ("encoding", "compress"),
    [("br", brotli.compress), ("zstd", zstandard.ZstdCompressor().compress)],
)
def test_corrupt_or_cut_brotli_and_zstd_bodies_name_the_field(encoding: str, compress: Any) -> None:
    whole = compress(json.dumps(CHAT_RESPONSE).encode())
    for broken in (whole[: len(whole) // 2], b"\x00not compressed at all\xff" * 4):
        with pytest.raises(RecordFieldError) as caught:
            decompress(broken, encoding, field="response.body")
        assert caught.value.field == "response.body"
        assert f"cannot decompress the {encoding} body" in caught.value.reason


def test_a_zstd_bomb_body_stops_at_the_ceiling() -> None:
    # 200 MB of zeros compress to a few KB; the ceiling is 10 MB: the body is refused after at
    # most one 1 KiB piece (32 MiB inflated, zstd's densest ratio) past it.
    bomb = zstandard.ZstdCompressor(level=19).compress(b"\0" * 200_000_000)
    assert len(bomb) < 100_000
    assert_stopped_at_ten_megabytes(bomb, "zstd")


def test_zstd_log_files_read_frame_after_frame_and_a_cut_file_is_named(tmp_path: Path) -> None:
    first = b"".join(b'{"a": %d}\n' % n for n in range(5_000))
    second = b"".join(b'{"b": %d}\n' % n for n in range(7_000))
    compressor = zstandard.ZstdCompressor()
    whole = tmp_path / "two-frames.jsonl.zst"
    whole.write_bytes(compressor.compress(first) + compressor.compress(second))
    copy = decompressed_copy(whole, "zstd", "two-frames.jsonl.zst")
    assert copy.read_bytes() == first + second  # both frames, in order
    remove(str(copy))
    cut = tmp_path / "cut.jsonl.zst"
    packed = compressor.compress(first + second)
    assert len(packed) > 1_000
    cut.write_bytes(packed[: len(packed) // 2])
    with pytest.raises(LogFileError) as caught:
        decompressed_copy(cut, "zstd", "cut.jsonl.zst")
    assert caught.value.one_line() == (
        "cut.jsonl.zst: cannot decompress the zstd file: the compressed data ends early"
    )
