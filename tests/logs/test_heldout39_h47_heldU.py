"""Mocking servers' recordings of model calls (2026 pseudo-held-out set h47u), each
hand-built on its recorder's documented layout (docs/log-formats.md, "Recordings read by
their shape"): MockServer's recorded expectations (``httpRequest`` keeping ``path`` and a
``Host`` header, ``httpResponse``), OkReplay / Betamax tapes. Every expected count is the
usage written into the file, worked by hand in the comments."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cachecast.logs import open_log, structural
from cachecast.logs.errors import LogFileError, UnknownLogFormatError
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


def test_mockserver_socket_address_says_where_the_request_went(tmp_path: Path) -> None:
    # ``socketAddress`` (MockServer's HttpRequest.withSocketAddress: the remote address
    # where the Host header does not give it): the Host header names the proxy here
    expectation = mockserver_expectation(
        {"Host": ["localhost:1080"]},
        {"type": "JSON", "json": CHAT_REQUEST},
        {"type": "JSON", "json": chat_reply(40, 0, 3)},
    )
    expectation["httpRequest"]["socketAddress"] = {
        "host": "api.openai.com",
        "port": 443,
        "scheme": "HTTPS",
    }
    path = tmp_path / "recorded.json"
    path.write_text(json.dumps([expectation]), encoding="utf-8")
    got = read(path)
    assert [(r.provider, r.model) for r in got.requests] == [("openai", "gpt-4o-mini")]
    assert totals(got.requests) == {"input": 40, "read": 0, "write": 0, "output": 3}


def test_mockserver_path_without_a_host_is_no_call(tmp_path: Path) -> None:
    # a path alone names no host: nothing says which provider answered
    expectation = mockserver_expectation(
        {"Content-Type": ["application/json"]},
        {"type": "JSON", "json": CHAT_REQUEST},
        {"type": "JSON", "json": chat_reply(30, 0, 5)},
    )
    assert not structural.fits([expectation])


MESSAGES_REQUEST = {
    "model": "claude-3-5-haiku-20241022",
    "max_tokens": 64,
    "messages": [{"role": "user", "content": "Say hi"}],
}


def message_reply(fresh: int, read_: int, written: int, output: int) -> str:
    return json.dumps(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-3-5-haiku-20241022",
            "content": [{"type": "text", "text": "Hi"}],
            "stop_reason": "end_turn",
            "usage": {
                "input_tokens": fresh,
                "cache_read_input_tokens": read_,
                "cache_creation_input_tokens": written,
                "output_tokens": output,
            },
        }
    )


def recorded_is(body: str) -> dict[str, Any]:
    """A reply a Mountebank proxy saved (mbtest.org, "Proxies"): ``is`` {statusCode,
    headers, body as text}, ``_mode: "text"``."""
    return {
        "is": {
            "statusCode": 200,
            "headers": {
                "Content-Type": "application/json",
                "Date": "Tue, 01 Oct 2024 10:00:00 GMT",
            },
            "body": body,
            "_mode": "text",
        }
    }


def imposters_file(tmp_path: Path, stubs: list[dict[str, Any]], indent: int | None = None) -> Path:
    """``mb save``'s file: one HTTP imposter on port 4545 holding ``stubs``."""
    imposters = {"imposters": [{"protocol": "http", "port": 4545, "stubs": stubs}]}
    path = tmp_path / "imposters.json"
    path.write_text(json.dumps(imposters, indent=indent), encoding="utf-8")
    return path


def test_mountebank_proxy_always_stub_on_the_proxied_host(tmp_path: Path) -> None:
    # ``mb save`` without removeProxies: the proxy stub (``to``) stays last; proxyAlways put
    # both replies to the same request in one stub's responses
    path = imposters_file(
        tmp_path,
        [
            {
                "predicates": [
                    {"deepEquals": {"method": "POST", "path": "/v1/messages"}},
                    {"deepEquals": {"body": json.dumps(MESSAGES_REQUEST)}},
                ],
                "responses": [
                    recorded_is(message_reply(3, 2048, 0, 9)),
                    recorded_is(message_reply(3, 0, 2048, 11)),
                ],
            },
            {
                "responses": [
                    {
                        "proxy": {
                            "to": "https://api.anthropic.com",
                            "mode": "proxyAlways",
                            "predicateGenerators": [
                                {"matches": {"method": True, "path": True, "body": True}}
                            ],
                        }
                    }
                ]
            },
        ],
        indent=2,
    )
    got = read(path)
    assert got.format == "by-shape"
    assert not got.errors
    assert [(r.provider, r.model) for r in got.requests] == [
        ("anthropic", "claude-3-5-haiku-20241022")
    ] * 2
    # input: 3 + 2048 and 3 + 2048 (Anthropic's input_tokens exclude the cache's);
    # read 2048 + 0, written 0 + 2048, output 9 + 11
    assert totals(got.requests) == {"input": 4102, "read": 2048, "write": 2048, "output": 20}


def test_mountebank_saved_without_proxies_told_by_the_bodies(tmp_path: Path) -> None:
    # ``removeProxies``: no host is kept; the request body names a model and its messages
    # and the reply is an Anthropic Message, so the call went to Anthropic's Messages API
    path = imposters_file(
        tmp_path,
        [
            {
                "predicates": [
                    {
                        "equals": {
                            "method": "POST",
                            "path": "/v1/messages",
                            "body": MESSAGES_REQUEST,
                        }
                    }
                ],
                "responses": [recorded_is(message_reply(25, 0, 0, 4))],
            },
            # a stub of another service: no model call
            {
                "predicates": [{"equals": {"method": "GET", "path": "/health"}}],
                "responses": [{"is": {"statusCode": 200, "body": "ok"}}],
            },
        ],
    )
    got = read(path)
    assert got.format == "by-shape"
    assert [(r.provider, r.model) for r in got.requests] == [
        ("anthropic", "claude-3-5-haiku-20241022")
    ]
    assert totals(got.requests) == {"input": 25, "read": 0, "write": 0, "output": 4}


RESPONSES_RECORDING = f"""\
responses:
- response:
    auto_calculate_content_length: false
    body: '{json.dumps(chat_reply(10, 0, 2))}'
    content_type: text/plain
    headers:
      x-request-id: req_1
    method: POST
    status: 200
    url: https://api.openai.com/v1/chat/completions
"""


def test_python_responses_recording_of_replies_alone_is_refused_saying_why(
    tmp_path: Path,
) -> None:
    # getsentry/responses' recorder (responses._recorder.record) keeps each reply, not the
    # request body: the prompt is not recorded
    path = tmp_path / "responses.yaml"
    path.write_text(RESPONSES_RECORDING, encoding="utf-8")
    with pytest.raises(LogFileError) as caught:
        open_log(path)
    assert "replies alone" in caught.value.reason
    assert "responses[0].response" in caught.value.reason


def test_a_responses_recording_of_other_services_stays_unknown(tmp_path: Path) -> None:
    path = tmp_path / "responses.yaml"
    path.write_text(
        RESPONSES_RECORDING.replace(
            "https://api.openai.com/v1/chat/completions", "https://example.com/a"
        ),
        encoding="utf-8",
    )
    with pytest.raises(UnknownLogFormatError):
        open_log(path)


def test_okreplay_tape_is_read_as_a_vcr_cassette(tmp_path: Path) -> None:
    # OkReplay / Betamax (Java, Android) tapes: a ``!tape`` YAML of ``interactions``, each
    # ``recorded`` (its time), ``request`` {method, uri, headers, body} and ``response``
    # {status, headers, body} (airbnb/okreplay's YamlTape; Betamax's tapes likewise)
    request = json.dumps(CHAT_REQUEST)
    first, second = json.dumps(chat_reply(1500, 0, 20)), json.dumps(chat_reply(1520, 1408, 6))
    tape = f"""\
!tape
name: chat
interactions:
- recorded: 2024-10-01T10:00:00.000Z
  request:
    method: POST
    uri: https://api.openai.com/v1/chat/completions
    headers:
      Content-Type: application/json
    body: '{request}'
  response:
    status: 200
    headers:
      Content-Type: application/json
    body: '{first}'
- recorded: 2024-10-01T10:00:05.000Z
  request:
    method: POST
    uri: https://api.openai.com/v1/chat/completions
    headers:
      Content-Type: application/json
    body: '{request}'
  response:
    status: 200
    headers:
      Content-Type: application/json
    body: '{second}'
"""
    path = tmp_path / "chat.yaml"
    path.write_text(tape, encoding="utf-8")
    got = read(path)
    assert got.format == "vcr"
    assert [r.timestamp for r in got.requests] == [1727776800.0, 1727776805.0]
    # input 1500 + 1520, read 0 + 1408, output 20 + 6
    assert totals(got.requests) == {"input": 3020, "read": 1408, "write": 0, "output": 26}
