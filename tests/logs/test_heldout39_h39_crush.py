"""Request shapes of the Crush coding agent's go-vcr cassettes (the sixth 2026 pseudo-held-out
set: one agent test per file, a ~50 kB system prompt and twelve tool schemas sent again every
turn), each hand-built on the format's documented definition (docs/log-formats.md, go-vcr;
the providers' streaming formats). Every expected count is the usage written into the file,
added up by hand in the comments."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml

from tests.logs.helpers import read, totals

SYSTEM = "You are Crush, a powerful AI Assistant that runs in the CLI. " * 40


def _cassette(path: Path, exchanges: list[tuple[str, dict[str, Any], str]]) -> Path:
    """A go-vcr v2 cassette (``version: 2``, ``interactions`` of request and response)."""
    interactions = [
        {
            "id": number,
            "request": {
                "proto": "HTTP/1.1",
                "content_length": len(json.dumps(body)),
                "host": "",
                "body": json.dumps(body),
                "headers": {"Content-Type": ["application/json"]},
                "url": url,
                "method": "POST",
            },
            "response": {
                "proto": "HTTP/2.0",
                "content_length": -1,
                "body": reply,
                "headers": {"Content-Type": ["text/event-stream"]},
                "status": "200 OK",
                "code": 200,
                "duration": "1s",
            },
        }
        for number, (url, body, reply) in enumerate(exchanges)
    ]
    path.write_text(
        yaml.safe_dump({"version": 2, "interactions": interactions}, sort_keys=False),
        encoding="utf-8",
    )
    return path


def _sse(events: list[dict[str, Any]], separator: str = "\n\n") -> str:
    return "".join(f"data: {json.dumps(event)}{separator}" for event in events) + (
        "data: [DONE]" + separator if separator == "\n\n" else ""
    )


OPENROUTER = "https://openrouter.ai/api/v1/chat/completions"
EPHEMERAL = {"type": "ephemeral"}


def _openrouter_usage(prompt: int, cached: int, completion: int, cost: str) -> dict[str, Any]:
    # OpenRouter's usage accounting (usage: {include: true}): cost in USD, cache writes apart
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "cost": float(cost),
        "is_byok": False,
        "prompt_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }


def test_openrouter_cache_control_on_messages_and_on_a_tool_call_entry(tmp_path: Path) -> None:
    # Crush marks the system message and the last messages with cache_control; on the turn
    # after a tool call the marker sits inside the assistant's tool_calls entry.
    tools = [{"type": "function", "function": {"name": "view", "parameters": {"type": "object"}}}]
    first = {
        "model": "moonshotai/kimi-k2-0905",
        "messages": [
            {"role": "system", "content": SYSTEM, "cache_control": EPHEMERAL},
            {"role": "user", "content": "Read the go mod", "cache_control": EPHEMERAL},
        ],
        "tools": tools,
        "usage": {"include": True},
        "stream": True,
    }
    call = {
        "id": "functions.view:0",
        "type": "function",
        "function": {"name": "view", "arguments": '{"file_path": "go.mod"}'},
        "cache_control": EPHEMERAL,
    }
    second = {
        **first,
        "messages": [
            {"role": "system", "content": SYSTEM, "cache_control": EPHEMERAL},
            {"role": "user", "content": "Read the go mod"},
            {"role": "assistant", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "functions.view:0", "content": "module x"},
        ],
    }
    done = {"choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "stop"}]}
    replies = [
        _sse([done, {"choices": [], "usage": _openrouter_usage(11648, 11520, 33, "0.0018452")}]),
        _sse([done, {"choices": [], "usage": _openrouter_usage(11726, 11648, 1, "0.0017804")}]),
    ]
    path = _cassette(
        tmp_path / "kimi.yaml",
        [(OPENROUTER, first, replies[0]), (OPENROUTER, second, replies[1])],
    )
    result = read(path)
    assert result.errors == []
    one, two = result.requests
    # OpenRouter's vendor prefix names the provider behind it (docs/log-formats.md)
    assert (one.provider, one.model) == ("moonshot", "kimi-k2-0905")
    # input 11,648 + 11,726 = 23,374; reads 11,520 + 11,648 = 23,168; output 33 + 1
    assert totals(result.requests) == {"input": 23374, "read": 23168, "write": 0, "output": 34}
    # the gateway's charge as reported: 0.0018452 + 0.0017804
    assert [one.observed.cost, two.observed.cost] == [Decimal("0.0018452"), Decimal("0.0017804")]


def test_vertex_sse_with_crlf_events_takes_the_last_usage(tmp_path: Path) -> None:
    # Vertex AI's streamGenerateContent?alt=sse (go-genai records the query as ``form``): the
    # events are separated by CRLF CRLF, the first ones carry usageMetadata without counts
    url = (
        "https://aiplatform.googleapis.com/v1beta1/projects/p/locations/global/publishers/"
        "google/models/gemini-2.0-flash-exp:streamGenerateContent?alt=sse"
    )
    body = {
        "contents": [{"parts": [{"text": "Read the go mod"}], "role": "user"}],
        "systemInstruction": {"parts": [{"text": SYSTEM}], "role": "user"},
    }
    events = [
        {
            "candidates": [{"content": {"role": "model", "parts": [{"text": "Okay"}]}}],
            "usageMetadata": {"trafficType": "ON_DEMAND"},
        },
        {
            "candidates": [
                {"content": {"role": "model", "parts": [{"text": "\n"}]}, "finishReason": "STOP"}
            ],
            "usageMetadata": {
                "promptTokenCount": 11301,
                "candidatesTokenCount": 2,
                "totalTokenCount": 11303,
                "trafficType": "ON_DEMAND",
            },
        },
    ]
    path = _cassette(tmp_path / "vertex.yaml", [(url, body, _sse(events, "\r\n\r\n"))])
    text = path.read_text(encoding="utf-8").replace(
        "    method: POST\n", "    form:\n      alt:\n      - sse\n    method: POST\n", 1
    )
    path.write_text(text, encoding="utf-8")
    result = read(path)
    assert result.errors == []
    (one,) = result.requests
    # the Vertex host is read as provider google (docs/contracts.md, contracts-v19)
    assert (one.provider, one.model) == ("google", "gemini-2.0-flash-exp")
    # the last event's counts only: 11,301 in, 2 out, no cachedContentTokenCount
    assert totals(result.requests) == {"input": 11301, "read": 0, "write": 0, "output": 2}


def test_zai_coding_plan_endpoint_with_reasoning_content(tmp_path: Path) -> None:
    # Z.ai's GLM Coding Plan endpoint (.../api/coding/paas/v4/chat/completions): the usage
    # rides on the chunk that finishes; reasoning tokens are inside completion_tokens
    url = "https://api.z.ai/api/coding/paas/v4/chat/completions"
    body = {
        "model": "glm-4.6",
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Hi"}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    delta = {"role": "assistant", "reasoning_content": "\n"}
    events = [
        {"choices": [{"index": 0, "delta": delta}]},
        {
            "choices": [{"index": 0, "finish_reason": "stop", "delta": {"content": ""}}],
            "usage": {
                "prompt_tokens": 12039,
                "completion_tokens": 46,
                "total_tokens": 12085,
                "prompt_tokens_details": {"cached_tokens": 11922},
                "completion_tokens_details": {"reasoning_tokens": 1},
            },
        },
    ]
    path = _cassette(tmp_path / "zai.yaml", [(url, body, _sse(events))])
    result = read(path)
    assert result.errors == []
    (one,) = result.requests
    assert (one.provider, one.model) == ("zai", "glm-4.6")
    # total 12,085 = 12,039 + 46: the reasoning token is inside the 46
    assert totals(result.requests) == {"input": 12039, "read": 11922, "write": 0, "output": 46}


def test_go_vcr_content_length_is_not_a_header(tmp_path: Path) -> None:
    # go-vcr v2 writes the length it saw as ``content_length``; an edited cassette keeps the old
    # number (docs/log-formats.md, go-vcr's content_length). Only a Content-Length header
    # says the stored body is not what was sent.
    url = "https://api.z.ai/api/paas/v4/chat/completions"
    body = {"model": "glm-4.6", "messages": [{"role": "user", "content": "Hi"}]}
    reply = _sse(
        [
            {
                "choices": [{"index": 0, "finish_reason": "stop", "delta": {"content": "Hi"}}],
                "usage": {"prompt_tokens": 9, "completion_tokens": 1, "total_tokens": 10},
            }
        ]
    )
    stale = _cassette(tmp_path / "stale.yaml", [(url, body, reply)])
    text = stale.read_text(encoding="utf-8")
    sent = len(json.dumps(body))
    stale.write_text(
        text.replace(f"content_length: {sent}", f"content_length: {sent - 43}"), encoding="utf-8"
    )
    assert f"content_length: {sent - 43}\n" in stale.read_text(encoding="utf-8")
    (one,) = read(stale).requests
    assert one.prompt_complete is True
    header = tmp_path / "header.yaml"
    header.write_text(
        text.replace(
            "Content-Type:\n      - application/json\n",
            "Content-Type:\n      - application/json\n"
            f"      Content-Length:\n      - '{sent - 43}'\n",
            1,
        ),
        encoding="utf-8",
    )
    (two,) = read(header).requests
    assert two.prompt_complete is False
