"""Held-out set 46p (recordings from Java and Elixir projects' test suites).

1. dd-trace-java's HTTP records (docs/log-formats.md, "VCR and HAR"): plain
   text, one call per ``.rec`` file, no host kept; no reader knew them. Hand-built here on
   the recorder's documented layout (``RequestResponseRecord.dump``: ``method:``, ``path:``,
   the request body between marker lines, ``status code:``, the response headers, the
   response body, each body followed by one line break before its closing marker; the files
   end the response body with bytes that are not text).
2. ExLLM's test cache (docs/log-formats.md, "Recordings read by their shape"): each call kept
   as ``{request_body, response_body, endpoint: "v1_messages", provider: "unknown"}``, no
   URL; read by its bodies' own shape.

The totals are the usage fields written into each file, added by hand.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cachecast.passes.log_input import expand_log_paths
from tests.logs.helpers import read, totals

OPENAI_HEADERS = (
    "content-type: application/json\n"
    "date: Tue, 31 Mar 2026 20:38:37 GMT\n"
    "openai-organization: example-org\n"
    "openai-version: 2020-10-01\n"
)


def _record(path: str, request: dict[str, Any], headers: str, body: str, tail: str) -> str:
    """A record as the recorder writes it: each body, a line break, the closing marker (the
    request's ends with a space); ``tail``: what the file keeps after the response body's
    last character."""
    return (
        f"method: POST\npath: {path}\n-- begin request body --\n"
        f"{json.dumps(request, separators=(',', ':'))}\n-- end request body -- \n"
        f"status code: 200\n-- begin response headers --\n{headers}"
        f"-- end response headers --\n-- begin response body --\n"
        f"{body}{tail}\n-- end response body --\n"
    )


def test_a_chat_completion_record_is_joined_to_openais_base_url(tmp_path: Path) -> None:
    request = {
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "system", "content": "You are a helpful assistant. " * 300},
            {"role": "user", "content": "Say hello."},
        ],
    }
    reply = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1774989516,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello!"}}],
        "usage": {
            "prompt_tokens": 2_500,
            "completion_tokens": 40,
            "total_tokens": 2_540,
            "prompt_tokens_details": {"cached_tokens": 2_048},
        },
    }
    path = tmp_path / "44176131e15bf8c0+81d6f6852e8115be.POST.rec"
    text = _record(
        "chat/completions", request, OPENAI_HEADERS, json.dumps(reply, indent=2), "\n\ufffd"
    )
    path.write_text(text, encoding="utf-8")
    found = read(path)
    assert found.format == "dd-http-record"
    assert not found.errors
    (call,) = found.requests
    assert call.provider == "openai"
    assert call.model == "gpt-4o-mini"
    # prompt 2,500 of which 2,048 read from the cache; output 40
    assert totals(found.requests) == {"input": 2_500, "read": 2_048, "write": 0, "output": 40}
    # the folder of records is read too (.rec is a log suffix)
    assert expand_log_paths([str(tmp_path)]) == [path]
    # the same record checked out with CRLF line ends (git's autocrlf) reads the same
    crlf = tmp_path / "crlf" / path.name
    crlf.parent.mkdir()
    crlf.write_bytes(text.replace("\n", "\r\n").encode("utf-8"))
    again = read(crlf)
    assert (again.format, again.errors) == ("dd-http-record", [])
    assert totals(again.requests) == totals(found.requests)


def test_a_streamed_responses_record_keeps_its_last_event(tmp_path: Path) -> None:
    request = {"model": "gpt-4.1", "input": "What's the weather like?", "stream": True}
    done = {
        "type": "response.completed",
        "response": {
            "id": "resp_1",
            "object": "response",
            "status": "completed",
            "model": "gpt-4.1-2025-04-14",
            "output": [],
            "usage": {
                "input_tokens": 60,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 36,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 96,
            },
        },
        "sequence_number": 1,
    }
    started = {"type": "response.created", "response": {"id": "resp_1", "usage": None}}
    stream = (
        f"event: response.created\ndata: {json.dumps(started)}\n\n"
        f"event: response.completed\ndata: {json.dumps(done)}\n\n"
    )
    headers = OPENAI_HEADERS.replace("application/json", "text/event-stream; charset=utf-8")
    path = tmp_path / "a8a4c449b7013574+9a07feeaa92c52c1.POST.rec"
    # the stray bytes follow the stream's last blank line: the last event is still whole
    path.write_text(
        _record("responses", request, headers, stream, "\ufffd\ufffd"), encoding="utf-8"
    )
    found = read(path)
    assert found.format == "dd-http-record"
    assert not found.errors
    assert totals(found.requests) == {"input": 60, "read": 0, "write": 0, "output": 36}


def test_the_recorders_first_generation_markers_are_read(tmp_path: Path) -> None:
    # "> method:", "> begin request body <", "> response code:", headers "name -> value"
    request = {"model": "gpt-3.5-turbo-instruct", "prompt": "Tell me a story."}
    reply = {
        "id": "cmpl-1",
        "object": "text_completion",
        "created": 1763064851,
        "model": "gpt-3.5-turbo-instruct:20230824-v2",
        "choices": [{"text": "Once upon a time", "index": 0, "finish_reason": "length"}],
        "usage": {"prompt_tokens": 7, "completion_tokens": 16, "total_tokens": 23},
    }
    text = (
        "> method: POST\n> path: completions\n> begin request body <\n"
        f"{json.dumps(request)}\n> end request body <\n> response code: 200\n"
        "> begin response headers <\ncontent-type -> application/json\n"
        "date -> Thu, 13 Nov 2025 20:14:11 GMT\nopenai-version -> 2020-10-01\n"
        "> end response headers <\n> begin response body <\n"
        f"{json.dumps(reply, indent=2)}\n\ufffd\n> end response body <\n"
    )
    path = tmp_path / "1288497d87888ffed0ea0a99184a54b9.POST.rec"
    path.write_text(text, encoding="utf-8")
    found = read(path)
    assert (found.format, found.errors) == ("dd-http-record", [])
    (call,) = found.requests
    assert call.provider == "openai"
    assert totals(found.requests) == {"input": 7, "read": 0, "write": 0, "output": 16}


def test_a_record_whose_headers_name_no_provider_is_a_bad_record(tmp_path: Path) -> None:
    request = {"model": "some-model", "messages": [{"role": "user", "content": "Hi"}]}
    reply = {"object": "chat.completion", "usage": {"prompt_tokens": 8, "completion_tokens": 2}}
    path = tmp_path / "0000+0000.POST.rec"
    headers = "content-type: application/json\n"
    path.write_text(
        _record("chat/completions", request, headers, json.dumps(reply), ""), encoding="utf-8"
    )
    found = read(path)
    assert found.format == "dd-http-record"
    assert not found.requests
    (error,) = found.errors
    assert error.field == "record.path"
    assert "no provider" in error.reason
