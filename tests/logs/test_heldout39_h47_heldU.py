"""Mocking servers' recordings of model calls (2026 pseudo-held-out set h47u), each
hand-built on its recorder's documented layout (docs/log-formats.md, "Recordings read by
their shape"): MockServer's recorded expectations (``httpRequest`` keeping ``path`` and a
``Host`` header, ``httpResponse``), OkReplay / Betamax tapes. Every expected count is the
usage written into the file, worked by hand in the comments."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cachecast.logs import structural
from tests.logs.helpers import read, totals

CHAT_REQUEST = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Say hi"}]}


def chat_reply(prompt: int, cached: int, output: int) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1727776800,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "Hi"}, "finish_reason": "stop"}
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": output,
            "total_tokens": prompt + output,
            "prompt_tokens_details": {"cached_tokens": cached},
        },
    }


def mockserver_expectation(host_headers: Any, request_body: Any, reply_body: Any) -> dict[str, Any]:
    """One recorded expectation as MockServer's ``retrieveRecordedExpectations`` returns it
    (mock-server.com, "Retrieving Recorded Expectations"): the request's ``path`` and its
    headers (``Host`` among them, no URL), bodies as ``{"type": "JSON", "json": ...}`` or
    ``{"type": "STRING", "string": ...}``."""
    return {
        "httpRequest": {
            "method": "POST",
            "path": "/v1/chat/completions",
            "headers": host_headers,
            "body": request_body,
        },
        "httpResponse": {
            "statusCode": 200,
            "headers": {
                "Content-Type": ["application/json"],
                "Date": ["Tue, 01 Oct 2024 10:00:00 GMT"],
            },
            "body": reply_body,
        },
        "times": {"unlimited": True},
        "timeToLive": {"unlimited": True},
    }


def test_mockserver_recorded_expectations_joined_to_their_host_header(tmp_path: Path) -> None:
    path = tmp_path / "recorded.json"
    expectations = [
        # headers as a map of lists; JSON bodies
        mockserver_expectation(
            {"Host": ["api.openai.com"], "Content-Type": ["application/json"]},
            {"type": "JSON", "json": CHAT_REQUEST},
            {"type": "JSON", "json": chat_reply(1200, 1024, 7)},
        ),
        # headers as a list of {name, values}; bodies as JSON text
        mockserver_expectation(
            [{"name": "Host", "values": ["api.openai.com:443"]}],
            {"type": "STRING", "string": json.dumps(CHAT_REQUEST)},
            json.dumps(chat_reply(30, 0, 5)),
        ),
    ]
    path.write_text(json.dumps(expectations, indent=2), encoding="utf-8")
    got = read(path)
    assert got.format == "by-shape"
    assert not got.errors
    assert [(r.provider, r.model) for r in got.requests] == [("openai", "gpt-4o-mini")] * 2
    # input 1200 + 30, of which 1024 + 0 read from the cache; output 7 + 5
    assert totals(got.requests) == {"input": 1230, "read": 1024, "write": 0, "output": 12}


def test_mockserver_path_without_a_host_is_no_call(tmp_path: Path) -> None:
    # a path alone names no host: nothing says which provider answered
    expectation = mockserver_expectation(
        {"Content-Type": ["application/json"]},
        {"type": "JSON", "json": CHAT_REQUEST},
        {"type": "JSON", "json": chat_reply(30, 0, 5)},
    )
    assert not structural.fits([expectation])
