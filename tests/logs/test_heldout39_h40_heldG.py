"""Dialects the fifth held-out set (non-Python ecosystems) showed unread, hand-built here from
their documented formats (docs/log-formats.md): the Azure SDK test proxy's recordings (the
.NET SDKs' ``SessionRecords``: ``{Entries, Variables}``) and ReqLLM's fixtures (Elixir:
``{request: {body: {b64}}, response: {body: <the JSON object>}}``). Totals are the usage
fields written here, added by hand (the rule in test_stub_dialects.py's docstring).
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from pathlib import Path
from typing import Any

from tests.logs.helpers import read, totals
from tests.logs.test_more_dialects import (
    ANTHROPIC_REQUEST,
    DATE,
    anthropic_response,
    chat_body,
    chat_response,
    write_json,
)


def b64(value: Any) -> str:
    return base64.b64encode(json.dumps(value).encode("utf-8")).decode("ascii")


# --- Azure SDK test proxy ------------------------------------------------------------------


def entry(
    method: str,
    uri: str,
    request_body: Any,
    response_body: Any,
    *,
    request_type: str | None = "application/json",
    response_type: str = "application/json",
    status: Any = 200,
) -> dict[str, Any]:
    """One ``RecordEntry`` as the test proxy serializes it (RecordEntry.Serialize)."""
    request_headers: dict[str, Any] = {"Authorization": "Sanitized", "Accept": "application/json"}
    if request_type is not None:
        request_headers["Content-Type"] = request_type
    return {
        "RequestUri": uri,
        "RequestMethod": method,
        "RequestHeaders": request_headers,
        "RequestBody": request_body,
        "StatusCode": status,
        # a header seen twice is a list (SerializeHeaders)
        "ResponseHeaders": {
            "Access-Control-Expose-Headers": ["X-Request-ID", "CF-Ray"],
            "Content-Type": response_type,
            "Date": DATE,
        },
        "ResponseBody": response_body,
    }


def responses_stream(prompt: int, cached: int, output: int) -> list[str]:
    """A Responses API event stream as the proxy writes text with line breaks: one string per
    line, each ending with its line break."""
    completed = {
        "type": "response.completed",
        "response": {
            "id": "resp_1",
            "object": "response",
            "model": "gpt-4o-2024-08-06",
            "status": "completed",
            "output": [],
            "usage": {
                "input_tokens": prompt,
                "input_tokens_details": {"cached_tokens": cached},
                "output_tokens": output,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": prompt + output,
            },
        },
    }
    created = {"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}}
    return [
        "event: response.created\n",
        f"data: {json.dumps(created)}\n\n",
        "event: response.completed\n",
        f"data: {json.dumps(completed)}\n\n",
    ]


def test_test_proxy_recording(tmp_path: Path) -> None:
    """JSON bodies written as themselves, an event stream as a list of lines, a body whose
    side names no text Content-Type as base64, and a GET of a response's input items that
    is no model call."""
    recording = {
        "Entries": [
            entry(
                "POST",
                "https://api.openai.com/v1/chat/completions",
                chat_body("a"),
                chat_response(1_500, 1_024, 20),
            ),
            entry(
                "POST",
                "https://api.openai.com/v1/responses",
                {"model": "gpt-4o", "input": "b", "stream": True},
                responses_stream(2_000, 1_536, 30),
                response_type="text/event-stream; charset=utf-8",
            ),
            entry(
                "GET",
                "https://api.openai.com/v1/responses/resp_1/input_items",
                None,
                {"object": "list", "data": []},
                request_type=None,
            ),
            entry(
                "POST",
                "https://api.anthropic.com/v1/messages",
                b64(ANTHROPIC_REQUEST),  # no Content-Type on the request: base64 bytes
                anthropic_response(4, 0, 2_000, 11),
                request_type=None,
            ),
        ],
        "Variables": {"OPENAI_API_KEY": "api-key"},
    }
    result = read(write_json(tmp_path / "TwoCalls.json", recording))
    assert (result.format, result.errors) == ("test-proxy", [])
    # input 1,500 + 2,000 + (4 + 0 + 2,000) = 5,504; read 1,024 + 1,536 + 2,000 = 4,560;
    # output 20 + 30 + 11 = 61 (the GET is not a model call)
    assert totals(result.requests) == {"input": 5_504, "read": 4_560, "write": 0, "output": 61}
    assert [request.line for request in result.requests] == [1, 2, 4]  # entries' positions
    # DATE, Tue, 02 Dec 2025 10:00:00 GMT, is 1,764,669,600 s after the epoch
    assert int(result.requests[0].timestamp or 0) == 1_764_669_600


def test_test_proxy_bad_fields_are_named(tmp_path: Path) -> None:
    bad_status = entry(
        "POST", "https://api.openai.com/v1/chat/completions", chat_body("a"), {}, status="OK"
    )
    bad_body = entry(
        "POST",
        "https://api.openai.com/v1/chat/completions",
        "not base64!",  # no Content-Type: the proxy would have written base64
        chat_response(10, 0, 1),
        request_type=None,
    )
    path = write_json(tmp_path / "bad.json", {"Entries": [bad_status, bad_body]})
    result = read(path)
    assert [(e.line, e.field) for e in result.errors] == [
        (1, "Entries[0].StatusCode"),
        (2, "Entries[1].RequestBody"),
    ]
    assert "expected an HTTP status" in result.errors[0].reason
    assert "not base64" in result.errors[1].reason


# --- ReqLLM fixtures -----------------------------------------------------------------------


def req_llm_fixture(url: str, body: Any, response: Any, **extra: Any) -> dict[str, Any]:
    """A fixture as ReqLLM's recorder writes it (test/support/fixtures/<provider>/<model>/)."""
    return {
        "model_spec": "anthropic:claude-3-5-sonnet-20241022",
        "provider": "anthropic",
        **extra,
        "request": {
            "body": {"b64": b64(body)},
            "canonical_json": body,
            "headers": {"content-type": ["application/json"], "x-api-key": "[REDACTED]"},
            "method": "post",
            "url": url,
        },
        "response": {
            "body": response,
            "headers": {"content-type": ["application/json"]},
            "status": 200,
        },
        "streaming": False,
    }


def test_req_llm_fixtures(tmp_path: Path) -> None:
    """The request body is base64 under ``b64``; the response body is the JSON object
    itself, an Anthropic message with ``type`` and ``content`` included (no pydantic-ai
    ``{type, content}`` wrapper)."""
    anthropic = req_llm_fixture(
        "https://api.anthropic.com/v1/messages",
        ANTHROPIC_REQUEST,
        anthropic_response(10, 1_500, 0, 7),
        captured_at="2026-10-09T01:55:18.160794Z",
    )
    result = read(write_json(tmp_path / "basic.json", anthropic))
    assert (result.format, result.errors) == ("vcr", [])
    # input 10 + 1,500 written + 0 read = 1,510; written 1,500; output 7
    assert totals(result.requests) == {"input": 1_510, "read": 0, "write": 1_500, "output": 7}
    # no Date header: captured_at is the time
    captured = dt.datetime(2026, 10, 9, 1, 55, 18, tzinfo=dt.UTC).timestamp()
    assert int(result.requests[0].timestamp or 0) == int(captured)
    openai = req_llm_fixture(
        "https://api.openai.com/v1/chat/completions",
        chat_body("a"),
        chat_response(1_200, 1_024, 5),
    )
    result = read(write_json(tmp_path / "openai.json", openai))
    assert (result.format, result.errors) == ("vcr", [])
    assert totals(result.requests) == {"input": 1_200, "read": 1_024, "write": 0, "output": 5}


def test_req_llm_streamed_fixture(tmp_path: Path) -> None:
    """A streamed response: ``body: null``, the stream's reads as ``chunks: [{b64, decoded}]``;
    a read may end inside an event (the bytes are joined before the events are parsed)."""
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-3-5-sonnet-20241022",
            "content": [],
            "usage": {
                "input_tokens": 30,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 1_024,
                "output_tokens": 1,
            },
        },
    }
    delta = {
        "type": "message_delta",
        "delta": {"stop_reason": "end_turn"},
        "usage": {"output_tokens": 12},
    }
    stream = (
        f"event: message_start\ndata: {json.dumps(start)}\n\n"
        f"event: message_delta\ndata: {json.dumps(delta)}\n\n"
        'event: message_stop\ndata: {"type": "message_stop"}\n\n'
    ).encode()
    cut = len(stream) // 2
    reads = [stream[:cut], stream[cut:]]
    fixture = req_llm_fixture(
        "https://api.anthropic.com/v1/messages", {**ANTHROPIC_REQUEST, "stream": True}, None
    )
    fixture["chunks"] = [
        {"b64": base64.b64encode(part).decode(), "decoded": part.decode()} for part in reads
    ]
    result = read(write_json(tmp_path / "streaming.json", fixture))
    assert (result.format, result.errors) == ("vcr", [])
    # input 30 + 0 written + 1,024 read = 1,054; read 1,024; output 12 (message_delta's)
    assert totals(result.requests) == {"input": 1_054, "read": 1_024, "write": 0, "output": 12}


def test_req_llm_bad_b64_is_named(tmp_path: Path) -> None:
    fixture = req_llm_fixture(
        "https://api.openai.com/v1/chat/completions", chat_body("a"), chat_response(10, 0, 1)
    )
    fixture["request"]["body"] = {"b64": "%%%"}
    path = write_json(tmp_path / "bad.json", fixture)
    result = read(path)
    assert [(e.line, e.field) for e in result.errors] == [(1, "request.body.b64")]
    assert "not base64" in result.errors[0].reason
