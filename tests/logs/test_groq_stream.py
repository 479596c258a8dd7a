"""Groq's streamed chat completions in a VCR cassette: the usage is in the last chunk's
``x_groq.usage`` unless the request asked for OpenAI's usage chunk
(``stream_options.include_usage``), as Groq clients read it (docs/log-formats.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tests.logs.helpers import read

REQUEST = {
    "model": "llama-3.3-70b-versatile",
    "messages": [{"role": "user", "content": "Say hello"}],
    "stream": True,
}
# x_groq.usage as Groq sends it on the last chunk: its timings and token counts.
GROQ_USAGE = {
    "queue_time": 0.090321431,
    "prompt_tokens": 38,
    "prompt_time": 0.003210785,
    "completion_tokens": 4,
    "completion_time": 0.027554055,
    "total_tokens": 42,
    "total_time": 0.03076484,
}


def _chunk(content: str | None, finish: str | None, **extra: Any) -> str:
    delta = {} if content is None else {"content": content}
    chunk = {
        "id": "chatcmpl-bc4c2b5f",
        "object": "chat.completion.chunk",
        "created": 1769093744,
        "model": "llama-3.3-70b-versatile",
        "system_fingerprint": "fp_c06d5113ec",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        **extra,
    }
    return f"data: {json.dumps(chunk)}\n\n"


def _cassette(tmp_path: Path, body: str) -> Path:
    cassette = {
        "interactions": [
            {
                "request": {
                    "method": "POST",
                    "uri": "https://api.groq.com/openai/v1/chat/completions",
                    "body": json.dumps(REQUEST),
                },
                "response": {
                    "status": {"code": 200, "message": "OK"},
                    "headers": {
                        "Content-Type": ["text/event-stream"],
                        "Date": ["Thu, 22 Jan 2026 14:55:44 GMT"],
                    },
                    "body": {"string": body},
                },
            }
        ],
        "version": 1,
    }
    path = tmp_path / "groq_stream.yaml"
    path.write_text(yaml.safe_dump(cassette), "utf-8")
    return path


def test_a_groq_stream_without_a_usage_chunk_reports_x_groq_usage(tmp_path: Path) -> None:
    body = (
        _chunk("", None, x_groq={"id": "req_01kfk38ha1ey"})
        + _chunk("Hello", None)
        + _chunk(" World!", None)
        + _chunk(None, "stop", x_groq={"id": "req_01kfk38ha1ey", "usage": GROQ_USAGE})
        + "data: [DONE]\n\n"
    )
    result = read(_cassette(tmp_path, body))
    (request,) = result.requests
    assert (request.provider, request.model) == ("groq", "llama-3.3-70b-versatile")
    observed = request.observed
    assert observed is not None
    # prompt_tokens 38, completion_tokens 4; x_groq.usage names no cached tokens.
    assert (observed.input_tokens, observed.cache_read_tokens, observed.output_tokens) == (
        38,
        None,
        4,
    )


def test_a_groq_usage_chunk_is_read_before_x_groq_usage(tmp_path: Path) -> None:
    # With stream_options.include_usage Groq adds OpenAI's usage chunk (empty choices);
    # that chunk's counts (here with a cached read) are the ones read.
    usage_chunk = {
        "id": "chatcmpl-bc4c2b5f",
        "object": "chat.completion.chunk",
        "created": 1769093744,
        "model": "llama-3.3-70b-versatile",
        "choices": [],
        "usage": {
            "prompt_tokens": 2100,
            "completion_tokens": 50,
            "total_tokens": 2150,
            "prompt_tokens_details": {"cached_tokens": 1920},
        },
    }
    body = (
        _chunk("Hello", None)
        + _chunk(None, "stop", x_groq={"id": "req_01kfk38ha1ey", "usage": GROQ_USAGE})
        + f"data: {json.dumps(usage_chunk)}\n\n"
        + "data: [DONE]\n\n"
    )
    (request,) = read(_cassette(tmp_path, body)).requests
    observed = request.observed
    assert observed is not None
    assert (observed.input_tokens, observed.cache_read_tokens, observed.output_tokens) == (
        2100,
        1920,
        50,
    )
