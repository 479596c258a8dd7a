"""Hand-built recordings of more recording dialects (docs/log-formats.md): EasyVCR
cassettes (C# and Java), LangChain's vcrpy cassettes (``requests:`` beside ``responses:``,
gzip YAML), and folders of stub-server recordings (WireMock roots, talkback tapes,
mitmproxy's ``.zhar``); each picked by detection, with totals from the usage fields written
here (the rule in test_stub_dialects.py's docstring).
"""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path
from typing import Any

import yaml

from cachecast.passes.log_input import expand_log_paths
from tests.logs.helpers import read, totals
from tests.logs.test_more_dialects import (
    ANTHROPIC_REQUEST,
    DATE,
    anthropic_response,
    chat_body,
    chat_response,
    write_json,
)
from tests.logs.test_more_dialects_web import har_entry
from tests.logs.test_stub_dialects import TAPE, mapping

# --- EasyVCR -------------------------------------------------------------------------------


def easyvcr_csharp(request_body: Any, response_body: Any, code: Any = 200) -> dict[str, Any]:
    """An interaction as EasyVCR for C# (Newtonsoft.Json) writes it."""
    return {
        "Duration": 812,
        "RecordedAt": "2025-06-01T10:00:00.1234567+00:00",
        "Request": {
            "Body": json.dumps(request_body),
            "BodyContentType": "Json",
            "ContentHeaders": {"Content-Type": "application/json; charset=utf-8"},
            "Method": "POST",
            "RequestHeaders": {"Authorization": "Bearer [REDACTED]"},
            "Uri": "https://api.openai.com/v1/chat/completions",
        },
        "Response": {
            "Body": json.dumps(response_body),
            "BodyContentType": "Json",
            "ContentHeaders": {"Content-Type": "application/json"},
            "HttpVersion": "1.1",
            "ResponseHeaders": {"Date": DATE},
            "Status": {"Code": code, "Message": "OK"},
        },
    }


def test_easyvcr_csharp_and_java(tmp_path: Path) -> None:
    cassette = [
        easyvcr_csharp(chat_body("a"), chat_response(1_500, 1_024, 9)),
        # a writer that spells HttpStatusCode by name
        easyvcr_csharp(chat_body("b"), chat_response(600, 0, 3), code="OK"),
        easyvcr_csharp(chat_body("c"), {"error": {}}, code="TooManyRequests"),
    ]
    result = read(write_json(tmp_path / "chat.json", cassette))
    assert (result.format, result.errors) == ("easyvcr", [])
    # input 1,500 + 600 = 2,100, read 1,024, output 9 + 3 = 12 (the 429 is not billed)
    assert totals(result.requests) == {"input": 2_100, "read": 1_024, "write": 0, "output": 12}
    assert result.skipped == {"HTTP 429 response (not billed)": 1}
    # 2025-06-01T10:00:00Z is 1,748,772,000 s after the epoch; C# keeps ticks (.1234567)
    assert int(result.requests[0].timestamp or 0) == 1_748_772_000
    java = [
        {
            "recordedAt": 1_748_772_000,
            "request": {
                "body": json.dumps(ANTHROPIC_REQUEST),
                "method": "POST",
                "headers": {"Content-Type": ["application/json"]},
                "uri": "https://api.anthropic.com/v1/messages",
            },
            "response": {
                "body": json.dumps(anthropic_response(4, 0, 2_000, 11)),
                "httpVersion": {"protocol": "HTTP", "major": 1, "minor": 1},
                "headers": {"Content-Type": ["application/json"]},
                "status": {"code": 200, "message": "OK"},
                "uri": "https://api.anthropic.com/v1/messages",
            },
            "duration": 640,
        }
    ]
    result = read(write_json(tmp_path / "java.json", java))
    assert (result.format, result.errors) == ("easyvcr", [])
    # input 4 + 0 written + 2,000 read = 2,004; output 11
    assert totals(result.requests) == {"input": 2_004, "read": 2_000, "write": 0, "output": 11}


def test_easyvcr_bad_status_is_named(tmp_path: Path) -> None:
    path = write_json(tmp_path / "bad.json", [easyvcr_csharp({}, {}, code="Teapotish")])
    result = read(path)
    assert [(e.file, e.line, e.field) for e in result.errors] == [
        (str(path), 1, "[0].Response.Status.Code")
    ]
    assert "expected an HTTP status" in result.errors[0].reason


# --- folders -------------------------------------------------------------------------------


def test_folders_of_stub_recordings(tmp_path: Path) -> None:
    """A WireMock root given as a folder is its mappings (its __files bodies are no
    recordings of their own); talkback's .json5 tapes and mitmproxy's zlib-compressed .zhar
    are log files too."""
    root = tmp_path / "wiremock"
    (root / "mappings").mkdir(parents=True)
    (root / "__files").mkdir()
    (root / "__files" / "body-1.json").write_text(
        json.dumps(chat_response(1_100, 1_024, 8)), encoding="utf-8"
    )
    write_json(
        root / "mappings" / "chat-1.json", mapping(chat_body("a"), {"bodyFileName": "body-1.json"})
    )
    (tmp_path / "tapes").mkdir()
    (tmp_path / "tapes" / "unnamed-1.json5").write_text(TAPE, encoding="utf-8")
    har = {"log": {"version": "1.2", "entries": [har_entry(1, 300, 2)]}}
    (tmp_path / "flows.zhar").write_bytes(zlib.compress(json.dumps(har).encode(), 9))
    paths = expand_log_paths([tmp_path])
    assert paths == [
        tmp_path / "flows.zhar",
        tmp_path / "tapes" / "unnamed-1.json5",
        root / "mappings" / "chat-1.json",
    ]
    results = [read(path) for path in paths]
    assert [(r.format, r.errors) for r in results] == [
        ("har", []),
        ("talkback", []),
        ("wiremock", []),
    ]
    # HAR: 300 in, 2 out; the tape: 1,200 in (1,024 read), 7 out; the mapping: 1,100 in
    # (1,024 read), 8 out. Input 2,600, read 2,048, output 17.
    assert totals([q for r in results for q in r.requests]) == {
        "input": 2_600,
        "read": 2_048,
        "write": 0,
        "output": 17,
    }


# --- LangChain's vcrpy persister -----------------------------------------------------------


def test_langchain_cassette_of_requests_and_responses(tmp_path: Path) -> None:
    """langchain-tests' persister dumps vcrpy's own cassette dict with yaml.safe_dump (keys
    sorted, bytes as !!binary) and gzips it: ``requests:`` and ``responses:`` side by side."""
    cassette = {
        "requests": [
            {
                "body": json.dumps(chat_body(t)).encode(),
                "headers": {"content-type": ["application/json"], "api-key": ["PLACEHOLDER"]},
                "method": "POST",
                "uri": "https://api.openai.com/v1/chat/completions",
            }
            for t in "ab"
        ],
        "responses": [
            {
                "body": {"string": json.dumps(chat_response(prompt, cached, 3)).encode()},
                "headers": {"Date": [DATE], "Content-Type": ["application/json"]},
                "status": {"code": 200, "message": "OK"},
            }
            for prompt, cached in ((2_000, 0), (2_100, 1_920))
        ],
    }
    path = tmp_path / "test_stream_usage.yaml.gz"
    path.write_bytes(gzip.compress(yaml.safe_dump(cassette).encode()))
    result = read(path)
    assert (result.format, result.errors) == ("vcr", [])
    # input 2,000 + 2,100 = 4,100, read 1,920, output 3 + 3 = 6
    assert totals(result.requests) == {"input": 4_100, "read": 1_920, "write": 0, "output": 6}
    # each pair is named by its request's line: the second request's "- body" line
    text = yaml.safe_dump(cassette).splitlines()
    starts = [n for n, line in enumerate(text, start=1) if line.startswith("- body:")]
    assert [q.line for q in result.requests] == starts[:2]


def test_langchain_cassette_bad_response_names_both_lists(tmp_path: Path) -> None:
    cassette = {
        "requests": [
            {
                "body": json.dumps(chat_body("a")),
                "headers": {},
                "method": "POST",
                "uri": "https://api.openai.com/v1/chat/completions",
            }
        ],
        "responses": [{"body": {"string": "{}"}, "headers": {}, "status": {"code": "OK"}}],
    }
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(cassette), encoding="utf-8")
    result = read(path)
    assert [(e.line, e.field) for e in result.errors] == [
        (2, "requests[0]/responses[0].response.status.code")
    ]
