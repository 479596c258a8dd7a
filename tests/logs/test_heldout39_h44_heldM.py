"""ExVCR cassettes (Elixir, parroty/exvcr), found in the 2026 pseudo-held-out set h44m
(docs/log-formats.md, "Recorded HTTP"): a top-level JSON list of ``{request: {body, headers,
method, options, request_body, url}, response: {binary, body, headers, status_code, type}}``.
A response body that is not UTF-8 (the gzip bytes the Finch adapter records) is kept as
``binary: true`` and the base64 of ``:erlang.term_to_binary(body)`` (``ExVCR.JSON.save``):
version byte 131, tag 109 (BINARY_EXT), a 4-byte big-endian length, the bytes. Every
cassette here is hand-built on that shape; every expected count is the usage written into it,
added up by hand in the comments."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path
from typing import Any

from tests.logs.helpers import read, totals


def _erlang_binary(payload: bytes) -> str:
    """What ExVCR writes for a body that is not UTF-8: base64 of the Erlang binary term."""
    return base64.b64encode(bytes([131, 109]) + len(payload).to_bytes(4, "big") + payload).decode()


def _interaction(
    url: str, request: dict[str, Any], response: dict[str, Any], date: str
) -> dict[str, Any]:
    return {
        "request": {
            "options": {"receive_timeout": 120000},
            "body": json.dumps(request),
            "url": url,
            "headers": {"content-type": "application/json", "x-api-key": "[FILTERED]"},
            "method": "post",
            "request_body": "",
        },
        "response": {"type": "ok", **response, "headers": {"date": date, **response["headers"]}},
    }


def _write(path: Path, interactions: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps(interactions, indent=2), encoding="utf-8")
    return path


ANTHROPIC = "https://api.anthropic.com/v1/messages"
OPENAI = "https://api.openai.com/v1/chat/completions"


def _anthropic_body(read_tokens: int, write_tokens: int, fresh: int, out: int) -> bytes:
    return json.dumps(
        {
            "model": "claude-3-5-haiku-20241022",
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "content": [{"type": "text", "text": "Hello"}],
            "usage": {
                "input_tokens": fresh,
                "cache_creation_input_tokens": write_tokens,
                "cache_read_input_tokens": read_tokens,
                "output_tokens": out,
            },
        }
    ).encode()


def test_a_finch_binary_gzip_body_is_unwrapped_and_read(tmp_path: Path) -> None:
    request = {
        "model": "claude-3-5-haiku-latest",
        "max_tokens": 64,
        "system": [{"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": "Hello"}],
    }
    first = _interaction(
        ANTHROPIC,
        request,
        {
            "binary": True,
            "body": _erlang_binary(gzip.compress(_anthropic_body(0, 2100, 12, 5))),
            "headers": {"content-type": "application/json", "content-encoding": "gzip"},
            "status_code": 200,
        },
        "Wed, 21 Jan 2026 10:55:54 GMT",
    )
    second = _interaction(
        ANTHROPIC,
        request,
        {
            "binary": True,
            "body": _erlang_binary(gzip.compress(_anthropic_body(2100, 0, 12, 7))),
            "headers": {"content-type": "application/json", "content-encoding": "gzip"},
            "status_code": 200,
        },
        "Wed, 21 Jan 2026 10:55:56 GMT",
    )
    result = read(_write(tmp_path / "anthropic.json", [first, second]))
    assert result.format == "vcr"
    assert result.errors == []
    one, two = result.requests
    assert (one.provider, two.provider) == ("anthropic", "anthropic")
    # Anthropic's input is input_tokens + cache_creation + cache_read:
    # (12 + 2100 + 0) + (12 + 0 + 2100) = 4224; read 2100; write 2100; output 5 + 7 = 12
    assert totals(result.requests) == {"input": 4224, "read": 2100, "write": 2100, "output": 12}
    # the Date header: 2026-01-21 10:55:54 UTC is 1768992954 seconds after the epoch
    assert (one.timestamp, two.timestamp) == (1768992954.0, 1768992956.0)


def test_a_gemini_call_with_its_key_in_the_query_is_read(tmp_path: Path) -> None:
    # the Finch adapter records Gemini's gzip body the same way; the API key sits in the URL
    # (ExVCR's filter replaced it) and the model is the URL's
    body = {
        "candidates": [{"content": {"role": "model", "parts": [{"text": "OK"}]}}],
        "usageMetadata": {
            "promptTokenCount": 2300,
            "cachedContentTokenCount": 2048,
            "candidatesTokenCount": 2,
            "totalTokenCount": 2302,
        },
        "modelVersion": "gemini-2.0-flash",
    }
    interaction = _interaction(
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash:generateContent"
        "?key=[FILTERED]",
        {"contents": [{"role": "user", "parts": [{"text": "Hello"}]}]},
        {
            "binary": True,
            "body": _erlang_binary(gzip.compress(json.dumps(body).encode())),
            "headers": {"content-type": "application/json", "content-encoding": "gzip"},
            "status_code": 200,
        },
        "Wed, 21 Jan 2026 10:55:01 GMT",
    )
    result = read(_write(tmp_path / "gemini.json", [interaction]))
    assert result.errors == []
    (one,) = result.requests
    assert (one.provider, one.model) == ("google", "gemini-2.0-flash")
    # promptTokenCount 2300 includes the 2048 cached; candidates 2
    assert totals(result.requests) == {"input": 2300, "read": 2048, "write": 0, "output": 2}


def test_a_failed_call_is_no_response_and_the_next_is_read(tmp_path: Path) -> None:
    failed = _interaction(
        OPENAI,
        {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]},
        {"body": "%Mint.TransportError{reason: :timeout}", "headers": {}},
        "Wed, 21 Jan 2026 10:55:40 GMT",
    )
    failed["response"] = {"type": "error", "body": "%Mint.TransportError{reason: :timeout}"}
    ok = _interaction(
        OPENAI,
        {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]},
        {
            "binary": False,
            "body": json.dumps(
                {
                    "id": "chatcmpl-2",
                    "object": "chat.completion",
                    "model": "gpt-4o-mini-2024-07-18",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}],
                    "usage": {"prompt_tokens": 9, "completion_tokens": 1, "total_tokens": 10},
                }
            ),
            "headers": {"content-type": "application/json"},
            "status_code": 200,
        },
        "Wed, 21 Jan 2026 10:55:44 GMT",
    )
    result = read(_write(tmp_path / "retry.json", [failed, ok]))
    assert result.errors == []
    # only the answered call carries usage: prompt 9, completion 1
    assert totals([r for r in result.requests if r.observed is not None]) == {
        "input": 9,
        "read": 0,
        "write": 0,
        "output": 1,
    }


def test_a_binary_body_that_is_no_erlang_term_is_named(tmp_path: Path) -> None:
    interaction = _interaction(
        OPENAI,
        {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]},
        {
            "binary": True,
            "body": base64.b64encode(b"\x1f\x8b\x08\x00 not a term").decode(),
            "headers": {"content-type": "application/json"},
            "status_code": 200,
        },
        "Wed, 21 Jan 2026 10:55:41 GMT",
    )
    result = read(_write(tmp_path / "bad.json", [interaction]))
    assert result.requests == []
    (error,) = result.errors
    assert "[0].response.body" in str(error)
    assert "Erlang binary term" in str(error)


def test_a_term_whose_length_disagrees_is_named(tmp_path: Path) -> None:
    # the term says 10 bytes and holds 3
    short = base64.b64encode(bytes([131, 109, 0, 0, 0, 10]) + b"abc").decode()
    interaction = _interaction(
        OPENAI,
        {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]},
        {
            "binary": True,
            "body": short,
            "headers": {"content-type": "application/json"},
            "status_code": 200,
        },
        "Wed, 21 Jan 2026 10:55:41 GMT",
    )
    result = read(_write(tmp_path / "short.json", [interaction]))
    (error,) = result.errors
    assert "says 10 bytes, holds 3" in str(error)
