"""Hand-built recordings of the dialects read since issue 26 (docs/log-formats.md): govcr
cassettes (v1-v4 and v5+), Ruby VCR 1.x (Psych and Syck), other local YAML tags, and Ruby
VCR's compressed serializer (zlib under a .gz name); each picked by detection, with totals
from the usage fields written here, and hostile variants refused naming file, line and field.
The web-side dialects (HAR lines, Polly.JS, nock, Betamax, php-vcr) are in
test_more_dialects_web.py.

Expected totals are the usage fields written into each recording, by the provider's rule
(docs/log-formats.md, "Usage conventions"), with the arithmetic beside them.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
import zlib
from pathlib import Path
from typing import Any

import pytest

from cachecast.core.errors import LimitExceededError
from cachecast.core.limits import Limits, limits_in_force
from cachecast.logs import open_log
from cachecast.logs.errors import LogFileError, UnknownLogFormatError
from tests.logs import test_dialect_variants as dialect_variants
from tests.logs.helpers import read, totals

CHAT = "https://api.openai.com/v1/chat/completions"
DATE = "Tue, 02 Dec 2025 10:00:00 GMT"


def chat_body(text: str) -> dict[str, Any]:
    return {"model": "gpt-4o", "messages": [{"role": "user", "content": text}]}


def chat_response(prompt: int, cached: int, completion: int) -> dict[str, Any]:
    """A Chat Completions response that names no id (the request id is then the reader's)."""
    response = dialect_variants.chat_response(prompt, cached, completion)
    del response["id"]
    return response


def anthropic_response(fresh: int, written: int, read_: int, output: int) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "model": "claude-3-5-sonnet-20241022",
        "content": [{"type": "text", "text": "Hi"}],
        "usage": {
            "input_tokens": fresh,
            "cache_creation_input_tokens": written,
            "cache_read_input_tokens": read_,
            "output_tokens": output,
        },
    }


# --- govcr ---------------------------------------------------------------------------------


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def b64(value: Any) -> str:
    """A Go []byte as encoding/json writes it."""
    raw = value if isinstance(value, bytes) else json.dumps(value).encode()
    return base64.b64encode(raw).decode()


def go_url(host: str, path: str, query: str = "") -> dict[str, Any]:
    """Go's url.URL as encoding/json writes it (every exported field)."""
    return {
        "Scheme": "https",
        "Opaque": "",
        "User": None,
        "Host": host,
        "Path": path,
        "RawPath": "",
        "OmitHost": False,
        "ForceQuery": False,
        "RawQuery": query,
        "Fragment": "",
        "RawFragment": "",
    }


def track(request: Any, response: Any, status: int = 200, **extra: Any) -> dict[str, Any]:
    return {
        "Request": {
            "Method": "POST",
            "URL": go_url("api.openai.com", "/v1/chat/completions"),
            "Header": {"Content-Type": ["application/json"]},
            "Body": b64(request),
            "ContentLength": 0,
        },
        "Response": {
            "Status": f"{status} OK",
            "StatusCode": status,
            "Proto": "HTTP/2.0",
            "Header": {"Date": [DATE], "Content-Type": ["application/json"]},
            "Body": b64(response),
            "ContentLength": -1,
            "TLS": None,
        },
        "ErrType": None,
        "ErrMsg": None,
        "UUID": "00000000-0000-0000-0000-000000000000",
        **extra,
    }


def write_json(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value, indent=2), encoding="utf-8")
    return path


def test_govcr_v5_cassette(tmp_path: Path) -> None:
    failed = track(chat_body("c"), {}, status=200)
    failed.update(Response=None, ErrType="*net.OpError", ErrMsg="dial tcp: i/o timeout")
    cassette = {
        "Name": "chat",
        "Tracks": [
            track(chat_body("a"), chat_response(1_500, 1_024, 20)),
            track(chat_body("b"), chat_response(2_000, 1_536, 30)),
            failed,  # a transport error: no response, not billed
            track(chat_body("d"), {"error": {"message": "slow down"}}, status=429),
        ],
    }
    result = read(write_json(tmp_path / "chat.cassette", cassette))
    assert (result.format, result.errors) == ("govcr", [])
    # prompt_tokens includes cached: input 1,500 + 2,000 = 3,500, read 1,024 + 1,536 = 2,560,
    # output 20 + 30 = 50
    assert totals(result.requests) == {"input": 3_500, "read": 2_560, "write": 0, "output": 50}
    assert [request.line for request in result.requests] == [1, 2]  # the tracks' positions
    assert sum(result.skipped.values()) == 2
    assert result.requests[0].timestamp == 1_764_669_600.0  # the Date header, 2025-12-02 10:00


def test_govcr_v4_cassette_url_value_and_empty_error_strings(tmp_path: Path) -> None:
    # govcr v1-v4: URL is a url.URL value, ErrType/ErrMsg "" for none, no UUID; here an
    # Anthropic call with a query string and a gzip response body it did not inflate.
    request = {"model": "claude-3-5-sonnet-20241022", "max_tokens": 10, "messages": []}
    request["messages"] = [{"role": "user", "content": "Hello"}]
    body = gzip.compress(json.dumps(anthropic_response(12, 2_048, 0, 7)).encode())
    cassette = {
        "Tracks": [
            {
                "Request": {
                    "Header": {"Content-Type": ["application/json"]},
                    "Body": b64(request),
                    "Method": "POST",
                    "URL": go_url("api.anthropic.com", "/v1/messages", "beta=true"),
                },
                "Response": {
                    "Status": "200 OK",
                    "StatusCode": 200,
                    "Header": {"Content-Encoding": ["gzip"], "Date": [DATE]},
                    "Body": b64(body),
                },
                "ErrType": "",
                "ErrMsg": "",
            }
        ]
    }
    result = read(write_json(tmp_path / "v4.cassette", cassette))
    assert (result.format, result.errors) == ("govcr", [])
    # Anthropic's input excludes the cache: 12 + 2,048 written + 0 read = 2,060
    assert totals(result.requests) == {"input": 2_060, "read": 0, "write": 2_048, "output": 7}
    assert result.requests[0].provider == "anthropic"


def test_govcr_tracks_on_one_line_get_their_entry_numbers(tmp_path: Path) -> None:
    # Compact JSON (one line): every track is on line 1; the request ids (the responses
    # name none) tell them apart by entry.
    cassette = {"Tracks": [track(chat_body(t), chat_response(100, 0, 1)) for t in "ab"]}
    path = tmp_path / "compact.json"
    path.write_text(json.dumps(cassette) + "\n", encoding="utf-8")
    result = read(path)
    assert result.format == "govcr"
    assert [r.request_id for r in result.requests] == [
        "compact.json:1 entry 1",
        "compact.json:1 entry 2",
    ]


@pytest.mark.parametrize(
    ("change", "field", "reason"),
    [
        ({"Body": "%%% not base64 %%%"}, "Tracks[0].Request.Body", "not base64"),
        ({"Method": 7}, "Tracks[0].Request.Method", "expected a method"),
        ({"URL": {"Scheme": "https"}}, "Tracks[0].Request.URL.Host", "names no host"),
        ({"URL": {"Host": ["x"]}}, "Tracks[0].Request.URL.Host", "expected a string"),
    ],
)
def test_govcr_bad_request_fields_are_named(
    tmp_path: Path, change: dict[str, Any], field: str, reason: str
) -> None:
    bad = track(chat_body("a"), chat_response(100, 0, 1))
    bad["Request"].update(change)
    path = write_json(tmp_path / "bad.cassette", {"Tracks": [bad]})
    result = read(path)
    assert [(e.file, e.line, e.field) for e in result.errors] == [(str(path), 1, field)]
    assert reason in result.errors[0].reason


def test_govcr_bad_status_and_oversized_base64_are_named(tmp_path: Path) -> None:
    bad_status = track(chat_body("a"), chat_response(100, 0, 1))
    bad_status["Response"]["StatusCode"] = "200"
    big = track(chat_body("b"), chat_response(100, 0, 1))
    big["Response"]["Body"] = "QUFB" * 3_000  # 12,000 base64 characters: 9,000 bytes
    path = write_json(tmp_path / "hostile.cassette", {"Tracks": [bad_status, big]})
    with limits_in_force(Limits(max_decompressed_bytes=8_000)):
        result = read(path)
    assert [(e.line, e.field) for e in result.errors] == [
        (1, "Tracks[0].Response.StatusCode"),
        (2, "Tracks[1].Response.Body"),
    ]
    assert "max_decompressed_bytes" in result.errors[1].reason


def test_govcr_gzip_bomb_body_is_stopped_at_the_decompression_bound(tmp_path: Path) -> None:
    bomb = track(chat_body("a"), {})
    bomb["Response"]["Header"]["Content-Encoding"] = ["gzip"]
    bomb["Response"]["Body"] = b64(gzip.compress(b" " * 2_000_000))  # 2 MB of spaces
    path = write_json(tmp_path / "bomb.cassette", {"Tracks": [bomb]})
    bound = limits_in_force(Limits(max_decompressed_bytes=1_000_000))
    with bound, pytest.raises(LimitExceededError) as caught:
        read(path)
    assert caught.value.location.source == str(path)
    assert "max_decompressed_bytes" in str(caught.value)


def test_govcr_deep_nesting_is_refused_before_reading(tmp_path: Path) -> None:
    deep: Any = "x"
    for _ in range(300):
        deep = [deep]
    cassette = {"Tracks": [track(chat_body("a"), chat_response(1, 0, 1), Extra=deep)]}
    path = write_json(tmp_path / "deep.cassette", cassette)
    result = read(path)
    assert result.requests == []
    assert len(result.errors) == 1
    assert result.errors[0].field.startswith("Tracks[0].Extra")
    assert "nest" in result.errors[0].reason


def test_an_encrypted_govcr_cassette_is_named_as_such(tmp_path: Path) -> None:
    path = tmp_path / "secret.cassette"
    path.write_bytes(b"$ENC$\x0c" + bytes(range(12)) + b"ciphertext")
    with pytest.raises(UnknownLogFormatError) as caught:
        open_log(path)
    assert "an encrypted govcr cassette" in caught.value.reason


# --- Ruby VCR 1.x --------------------------------------------------------------------------


def ruby_interaction(method: str, uri: str, body: str, headers: str, response: str) -> str:
    """One interaction as VCR 1.x wrote it (Psych's layout; ``body`` and ``headers`` are
    YAML text placed after their keys)."""
    return f"""\
- !ruby/struct:VCR::HTTPInteraction
  request: !ruby/struct:VCR::Request
    method: {method}
    uri: {uri}
    body:{body}
    headers:{headers}
  response: !ruby/struct:VCR::Response
    status: !ruby/struct:VCR::ResponseStatus
      code: 200
      message: OK
    headers:
      date:
      - Tue, 02 Dec 2025 10:00:00 GMT
    body: '{response}'
    http_version: "1.1"
"""


ANTHROPIC_REQUEST = {
    "model": "claude-3-5-sonnet-20241022",
    "max_tokens": 10,
    "messages": [{"role": "user", "content": "Hi"}],
}
OPENAI_REQUEST = {"model": "gpt-4o", "messages": [{"role": "user", "content": "Hi"}]}
OPENAI_RESPONSE = {**chat_response(1_300, 1_280, 9), "created": 1_764_669_600}
JSON_HEADERS = "\n      content-type:\n      - application/json"
RUBY_VCR_1 = "---\n" + "".join(
    [
        ruby_interaction(":get", "https://api.openai.com:443/v1/models", "", "", '{"data": []}'),
        ruby_interaction(
            ":post",
            "https://api.anthropic.com:443/v1/messages",
            f" '{compact(ANTHROPIC_REQUEST)}'",
            JSON_HEADERS,
            compact(anthropic_response(20, 0, 4_096, 5)),
        ),
        ruby_interaction(  # Psych's symbol tag, and a !binary (ASCII-8BIT) body
            "!ruby/sym post",
            "https://api.openai.com:443/v1/chat/completions",
            f" !binary |\n      {b64(OPENAI_REQUEST)}",
            "",
            compact(OPENAI_RESPONSE),
        ),
    ]
)
# Syck (Ruby 1.8) wrote a space after every key or tag that opens a block.
SYCK = re.sub(r"(:|Interaction|Request|Response|Status|---)$", r"\1 ", RUBY_VCR_1, flags=re.M)


@pytest.mark.parametrize("text", [RUBY_VCR_1, SYCK], ids=["psych", "syck"])
def test_ruby_vcr_1_cassette(tmp_path: Path, text: str) -> None:
    path = tmp_path / "old.yml"
    path.write_text(text, encoding="utf-8")
    result = read(path)
    assert (result.format, result.errors) == ("vcr", [])
    # Anthropic: 20 + 0 + 4,096 = 4,116 input, 4,096 read; OpenAI: 1,300 input incl. 1,280
    # read. Input 4,116 + 1,300 = 5,416, read 4,096 + 1,280 = 5,376, output 5 + 9 = 14.
    assert totals(result.requests) == {"input": 5_416, "read": 5_376, "write": 0, "output": 14}
    starts = [n for n, line in enumerate(text.splitlines(), 1) if line.startswith("- !ruby")]
    assert [request.line for request in result.requests] == starts[1:]  # after GET /models
    assert result.skipped == {"recorded call that is not a model endpoint": 1}  # GET /models


def test_ruby_vcr_1_tags_never_build_objects_and_bounds_hold(tmp_path: Path) -> None:
    # An alias bomb under Ruby tags: refused by the node budget, nothing built.
    lines = ["---", "- !ruby/struct:VCR::HTTPInteraction", "  a0: &a0 [x, x, x, x, x, x, x, x]"]
    lines += [f"  a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}]" for i in range(1, 9)]
    lines.append("  request: !ruby/object:Kernel {method: post, uri: 'http://x'}")
    path = tmp_path / "bomb.yml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    bound = limits_in_force(Limits(max_yaml_nodes=100_000))
    with bound, pytest.raises(LimitExceededError) as caught:
        list(open_log(path))
    # 8 x 4^8 = 524,288 scalars expanded, over 100,000
    assert caught.value.location.source == str(path)
    assert "max_yaml_nodes" in str(caught.value)


def test_ruby_vcr_1_bad_status_is_named(tmp_path: Path) -> None:
    path = tmp_path / "bad.yml"
    first, second, rest = RUBY_VCR_1.split("code: 200", 2)  # the second interaction's code
    path.write_text(f"{first}code: 200{second}code: two hundred{rest}", encoding="utf-8")
    result = read(path)
    starts = [n for n, line in enumerate(RUBY_VCR_1.splitlines(), 1) if line.startswith("- !")]
    assert [(e.line, e.field) for e in result.errors] == [(starts[1], "[1].response.status.code")]


# --- Ruby VCR's compressed serializer: zlib under a .gz name ----------------------------------


def test_ruby_vcr_compressed_serializer(tmp_path: Path) -> None:
    path = tmp_path / "cassette.gz"
    path.write_bytes(zlib.compress(RUBY_VCR_1.encode()))  # Zlib.deflate(yaml), as VCR writes
    result = read(path)
    assert (result.format, result.errors) == ("vcr", [])
    # the totals of test_ruby_vcr_1_cassette: input 4,116 + 1,300, read 4,096 + 1,280, output 14
    assert totals(result.requests) == {"input": 5_416, "read": 5_376, "write": 0, "output": 14}


def test_zlib_files_cut_short_or_inflating_past_the_bound_are_refused(tmp_path: Path) -> None:
    cut = tmp_path / "cut.gz"
    cut.write_bytes(zlib.compress(RUBY_VCR_1.encode())[:40])
    with pytest.raises(LogFileError) as caught:
        open_log(cut)
    assert (caught.value.file, caught.value.reason) == (
        str(cut),
        "cannot decompress the zlib file: the compressed data ends early",
    )
    bomb = tmp_path / "bomb.gz"
    bomb.write_bytes(zlib.compress(b"a" * 5_000_000))  # 5 MB of "a": under 10 KB packed
    bound = limits_in_force(Limits(max_decompressed_bytes=1_000_000))
    with bound, pytest.raises(LimitExceededError) as limit:
        open_log(bomb)
    assert "max_decompressed_bytes" in str(limit.value)
    assert str(bomb) in str(limit.value)


def test_other_local_tags_are_read_as_plain_values(tmp_path: Path) -> None:
    # Syck's !str and Rails' HashWithIndifferentAccess headers in a Ruby VCR 2 cassette.
    cassette = f"""\
---
http_interactions:
- request:
    method: post
    uri: {CHAT}
    body:
      encoding: UTF-8
      string: !str '{compact(chat_body("a"))}'
    headers: !ruby/hash:ActiveSupport::HashWithIndifferentAccess
      Content-Type:
      - application/json
  response:
    status:
      code: !str 200
      message: OK
    headers: !ruby/hash:ActiveSupport::HashWithIndifferentAccess
      Date:
      - {DATE}
    body:
      encoding: UTF-8
      string: '{compact(chat_response(640, 512, 3))}'
  recorded_at: {DATE}
recorded_with: VCR 6.2.0
"""
    path = tmp_path / "tags.yml"
    path.write_text(cassette, encoding="utf-8")
    result = read(path)
    assert (result.format, result.errors) == ("vcr", [])
    assert totals(result.requests) == {"input": 640, "read": 512, "write": 0, "output": 3}
