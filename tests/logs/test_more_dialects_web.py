"""Hand-built recordings of the web-side dialects read since issue 26 (docs/log-formats.md):
HAR written one entry per line or with its whole ``log`` on one line, Polly.JS node-http's
encoded chunks, nock recordings, Betamax and php-vcr cassettes; detection telling every
recording dialect apart; hostile variants refused naming file, line and field.

Expected totals are the usage fields written into each recording, by the provider's rule
(docs/log-formats.md, "Usage conventions"), with the arithmetic beside them. The builders
shared with the other dialects are in tests/logs/test_more_dialects.py.
"""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from cachecast.core.limits import Limits, limits_in_force
from cachecast.logs import open_log
from tests.logs.helpers import read, totals
from tests.logs.test_more_dialects import (
    ANTHROPIC_REQUEST,
    CHAT,
    DATE,
    RUBY_VCR_1,
    anthropic_response,
    b64,
    chat_body,
    chat_response,
    compact,
    track,
    write_json,
)

# --- HAR, one entry per line ---------------------------------------------------------------


def har_entry(second: int, prompt: int, output: int, status: Any = 200) -> dict[str, Any]:
    return {
        "startedDateTime": f"2025-12-02T10:00:0{second}.000Z",
        "request": {
            "method": "POST",
            "url": CHAT,
            "headers": [{"name": "Content-Type", "value": "application/json"}],
            "postData": {"mimeType": "application/json", "text": json.dumps(chat_body("x"))},
        },
        "response": {
            "status": status,
            "headers": [],
            "content": {
                "mimeType": "application/json",
                "text": json.dumps(chat_response(prompt, 0, output)),
            },
        },
    }


def test_har_entries_as_json_lines(tmp_path: Path) -> None:
    path = tmp_path / "entries.jsonl"
    entries = [har_entry(1, 100, 1), har_entry(2, 200, 2), har_entry(3, 300, 3, status="x")]
    path.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
    result = read(path)
    assert result.format == "har"  # not cachecast's own lines, though each has "request"
    # input 100 + 200 = 300, output 1 + 2 = 3 (the third entry is bad)
    assert totals(result.requests) == {"input": 300, "read": 0, "write": 0, "output": 3}
    assert [request.line for request in result.requests] == [1, 2]
    assert [(e.line, e.field) for e in result.errors] == [(3, "response.status")]


def test_a_one_line_har_names_each_entry(tmp_path: Path) -> None:
    path = tmp_path / "oneline.har"
    entries = [har_entry(1, 100, 1), har_entry(2, 200, 2), har_entry(3, 300, 3, status="x")]
    path.write_text(json.dumps({"log": {"version": "1.2", "entries": entries}}) + "\n")
    result = read(path)
    assert result.format == "har"
    assert totals(result.requests) == {"input": 300, "read": 0, "write": 0, "output": 3}
    # every entry is on line 1: the rows' ids name the entry, the error its path
    assert [r.request_id for r in result.requests] == [
        "oneline.har:1 entry 1",
        "oneline.har:1 entry 2",
    ]
    assert [(e.line, e.field) for e in result.errors] == [(1, "log.entries[2].response.status")]


# --- Betamax -------------------------------------------------------------------------------


def test_betamax_cassette(tmp_path: Path) -> None:
    # Betamax (Python requests): Ruby VCR's JSON shape, http_interactions with
    # recorded_with "betamax/...", bodies {encoding, string} or {encoding, base64_string}.
    cassette = {
        "http_interactions": [
            {
                "recorded_at": "2025-12-02T10:00:00",
                "request": {
                    "method": "POST",
                    "uri": CHAT,
                    "headers": {"Content-Type": ["application/json"]},
                    "body": {"encoding": "utf-8", "string": json.dumps(chat_body("a"))},
                },
                "response": {
                    "status": {"code": 200, "message": "OK"},
                    "headers": {"Date": [DATE]},
                    "body": {"encoding": None, "base64_string": b64(chat_response(900, 512, 4))},
                    "url": CHAT,
                },
            }
        ],
        "recorded_with": "betamax/0.9.0",
    }
    result = read(write_json(tmp_path / "betamax.json", cassette))
    assert (result.format, result.errors) == ("vcr", [])
    assert totals(result.requests) == {"input": 900, "read": 512, "write": 0, "output": 4}


# --- nock ----------------------------------------------------------------------------------


def nock_definition(response: Any, **extra: Any) -> dict[str, Any]:
    return {
        "scope": "https://api.openai.com:443",
        "method": "POST",
        "path": "/v1/chat/completions",
        "body": chat_body("a"),
        "status": 200,
        "response": response,
        "rawHeaders": ["Date", DATE, "Content-Type", "application/json"],
        **extra,
    }


ANTHROPIC_STREAM = "".join(
    f"event: {kind}\ndata: {json.dumps(data)}\n\n"
    for kind, data in [
        (
            "message_start",
            {"type": "message_start", "message": anthropic_response(3, 0, 1_024, 1)},
        ),
        ("message_delta", {"type": "message_delta", "usage": {"output_tokens": 15}}),
        ("message_stop", {"type": "message_stop"}),
    ]
)


def test_nock_recording(tmp_path: Path) -> None:
    packed = gzip.compress(json.dumps(chat_response(700, 512, 6)).encode())
    anthropic_stream = {
        **nock_definition(ANTHROPIC_STREAM),
        "scope": "https://api.anthropic.com:443",
        "path": "/v1/messages",
        "body": {**ANTHROPIC_REQUEST, "stream": True},
        "rawHeaders": ["Content-Type", "text/event-stream", "Date", DATE],
    }
    definitions = [
        nock_definition(chat_response(1_000, 0, 4), responseIsBinary=False),
        # older nock: a gzip response as a list of hex chunks
        nock_definition(
            [packed[:10].hex(), packed[10:].hex()],
            rawHeaders=["Content-Encoding", "gzip", "Date", DATE],
        ),
        # nock 13+: bytes it could not keep as text, one hex string
        nock_definition(
            packed.hex(), responseIsBinary=True, rawHeaders=["Content-Encoding", "gzip"]
        ),
        anthropic_stream,
        {**nock_definition({}), "method": "GET", "path": "/v1/models", "body": ""},
    ]
    result = read(write_json(tmp_path / "recording.json", definitions))
    assert (result.format, result.errors) == ("nock", [])
    # OpenAI: input 1,000 + 700 + 700 = 2,400, read 512 + 512 = 1,024, output 4 + 6 + 6 = 16;
    # Anthropic stream: input 3 + 0 + 1,024 = 1,027 with 1,024 read, output 15 (the
    # message_delta's cumulative count). Input 3,427, read 2,048, output 31.
    assert totals(result.requests) == {"input": 3_427, "read": 2_048, "write": 0, "output": 31}
    assert result.skipped == {"recorded call that is not a model endpoint": 1}


@pytest.mark.parametrize(
    ("change", "field", "reason"),
    [
        ({"status": "200"}, "[0].status", "expected an HTTP status"),
        ({"rawHeaders": ["Date"]}, "[0].rawHeaders", "in pairs"),
        ({"response": "zz", "responseIsBinary": True}, "[0].response", "not hex bytes"),
        ({"response": "ab" * 6_000, "responseIsBinary": True}, "[0].response", "limit of"),
        ({"scope": 443}, "[0].scope", "expected a string"),
    ],
)
def test_nock_bad_fields_are_named(
    tmp_path: Path, change: dict[str, Any], field: str, reason: str
) -> None:
    path = write_json(tmp_path / "bad.json", [{**nock_definition({}), **change}])
    with limits_in_force(Limits(max_decompressed_bytes=5_000)):
        result = read(path)
    assert [(e.file, e.line, e.field) for e in result.errors] == [(str(path), 1, field)]
    assert reason in result.errors[0].reason


def test_detection_tells_the_recording_dialects_apart(tmp_path: Path) -> None:
    govcr = {"Tracks": [track(chat_body("a"), chat_response(1, 0, 1))]}
    cases = {
        "govcr": write_json(tmp_path / "a.cassette", govcr),
        "nock": write_json(tmp_path / "b.json", [nock_definition({})]),
        "har": write_json(tmp_path / "c.har", {"log": {"entries": [har_entry(1, 1, 1)]}}),
        "vcr": tmp_path / "d.yml",
    }
    cases["vcr"].write_text(RUBY_VCR_1, encoding="utf-8")
    entries = tmp_path / "e.jsonl"
    entries.write_text(json.dumps(har_entry(1, 1, 1)) + "\n", encoding="utf-8")
    cases_found = {name: open_log(path).format for name, path in cases.items()}
    assert cases_found == {name: name for name in cases}
    assert open_log(entries).format == "har"
    # cachecast's own wrapper line with a provider body is still cachecast's
    own = tmp_path / "own.jsonl"
    own.write_text(json.dumps({"request": chat_body("a"), "provider": "openai"}) + "\n")
    assert open_log(own).format == "cachecast"


# --- Polly.JS node-http: encoded responses kept as chunks ----------------------------------


@pytest.mark.parametrize("encoding", ["hex", "base64"])
def test_polly_node_http_encoded_chunks(tmp_path: Path, encoding: str) -> None:
    # A gzip response Polly's node-http adapter could not keep as text: content.text is a
    # JSON list of the encoded chunks (hex; or base64 with content.encoding base64), the
    # Content-Encoding header kept.
    packed = gzip.compress(json.dumps(chat_response(2_000, 1_792, 12)).encode())
    parts = [packed[:7], packed[7:]]
    chunks = [p.hex() if encoding == "hex" else base64.b64encode(p).decode() for p in parts]
    entry = har_entry(1, 0, 0)
    entry["response"]["headers"] = [{"name": "Content-Encoding", "value": "gzip"}]
    entry["response"]["content"] = {"mimeType": "application/json", "text": json.dumps(chunks)}
    if encoding == "base64":
        entry["response"]["content"]["encoding"] = "base64"
    result = read(write_json(tmp_path / "polly.har", {"log": {"entries": [entry]}}))
    assert (result.format, result.errors) == ("har", [])
    # prompt_tokens 2,000 including 1,792 cached, completion 12
    assert totals(result.requests) == {"input": 2_000, "read": 1_792, "write": 0, "output": 12}


def test_polly_chunks_past_the_bound_are_refused_before_decoding(tmp_path: Path) -> None:
    entry = har_entry(1, 0, 0)
    entry["response"]["headers"] = [{"name": "Content-Encoding", "value": "gzip"}]
    entry["response"]["content"] = {"text": json.dumps(["ab" * 3_000, "cd" * 3_000])}
    path = write_json(tmp_path / "big.har", {"log": {"entries": [entry]}})
    with limits_in_force(Limits(max_decompressed_bytes=5_000)):
        result = read(path)
    # 12,000 hex characters are 6,000 bytes, over 5,000
    assert [(e.line, e.field) for e in result.errors] == [
        (1, "log.entries[0].response.content.text")
    ]
    assert "limit of 5,000 bytes" in result.errors[0].reason


# --- php-vcr -------------------------------------------------------------------------------


def php_vcr_interaction(prompt: int, cached: int, completion: int) -> dict[str, Any]:
    return {
        "request": {
            "method": "POST",
            "url": CHAT,
            "headers": {"Content-Type": "application/json", "Host": "api.openai.com"},
            "body": compact(chat_body("a")),
        },
        "response": {
            "status": {"code": 200, "message": "OK"},
            "headers": {"date": DATE, "content-type": "application/json"},
            "body": json.dumps(chat_response(prompt, cached, completion), indent=2),
            "curl_info": {"http_code": 200, "total_time": 0.5},
        },
        "index": 0,
    }


@pytest.mark.parametrize("storage", ["yaml", "json"])
def test_php_vcr_cassette(tmp_path: Path, storage: str) -> None:
    interactions = [php_vcr_interaction(1_100, 1_024, 8), php_vcr_interaction(300, 0, 2)]
    interactions[1]["response"]["status"] = {"http_version": "1.1", "code": "200"}  # older
    path = tmp_path / f"cassette.{storage}"
    if storage == "yaml":  # php-vcr (Symfony YAML) writes "-" alone, then the mapping
        text = yaml.safe_dump(interactions, sort_keys=False, indent=4)
        text = "\n" + text.replace("-   request:", "-\n    request:")
        assert text.startswith("\n-\n    request:\n        method: POST\n")
        path.write_text(text, encoding="utf-8")
    else:
        path.write_text(json.dumps(interactions, indent=4), encoding="utf-8")
    result = read(path)
    assert (result.format, result.errors) == ("vcr", [])
    # input 1,100 + 300 = 1,400 of which 1,024 read; output 8 + 2 = 10
    assert totals(result.requests) == {"input": 1_400, "read": 1_024, "write": 0, "output": 10}
