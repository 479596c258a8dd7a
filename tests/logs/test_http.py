"""Recorded HTTP traffic: the real VCR cassettes in ../shared/data/recordings/vcr_cassettes,
and a HAR 1.2 file built here with one exchange per endpoint, from the providers' API
references (OpenAI Chat and Responses, Anthropic Messages streaming events, Bedrock Converse
with cachePoint blocks and InvokeModel's event stream, Gemini generateContent and
cachedContents)."""

from __future__ import annotations

import base64
import gzip
import json
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest
import yaml

from cachecast.logs import open_log
from tests.conftest import shared_data
from tests.logs.helpers import read, totals

CASSETTES = [
    "test_anthropic_prompt_caching_legacy.yaml",
    "test_anthropic_prompt_caching_async_legacy.yaml",
    "test_anthropic_prompt_caching_stream_legacy.yaml",
    "test_openai_prompt_caching.yaml",
    "test_openai_prompt_caching_async.yaml",
    "test_invoke_model_cache_tokens.yaml",
]


def cassette_usage(path: Path) -> list[dict[str, int]]:
    """Each interaction's usage, read from the cassette with PyYAML, gzip and json."""
    found = []
    for interaction in yaml.safe_load(path.read_text(encoding="utf-8"))["interactions"]:
        raw = interaction["response"]["body"]["string"]
        text = gzip.decompress(raw).decode() if isinstance(raw, bytes) else raw
        if text.startswith("event:"):  # Anthropic streaming: message_start, then message_delta
            usage: dict[str, int] = {}
            for block in text.split("\n\n"):
                data = [line[6:] for line in block.splitlines() if line.startswith("data: ")]
                if not data:
                    continue
                event = json.loads(data[0])
                if event["type"] == "message_start":
                    usage.update(event["message"]["usage"])
                elif event["type"] == "message_delta":
                    usage.update(event["usage"])
        else:
            usage = json.loads(text)["usage"]
        if "prompt_tokens" in usage:  # OpenAI: prompt_tokens includes cached_tokens
            found.append(
                {
                    "input": usage["prompt_tokens"],
                    "read": usage["prompt_tokens_details"]["cached_tokens"],
                    "write": 0,
                    "output": usage["completion_tokens"],
                }
            )
        else:  # Anthropic (also through Bedrock): input_tokens excludes the cache
            found.append(
                {
                    "input": usage["input_tokens"]
                    + usage["cache_creation_input_tokens"]
                    + usage["cache_read_input_tokens"],
                    "read": usage["cache_read_input_tokens"],
                    "write": usage["cache_creation_input_tokens"],
                    "output": usage["output_tokens"],
                }
            )
    return found


@pytest.mark.parametrize("name", CASSETTES)
def test_cassette_usage(name: str) -> None:
    path = shared_data(f"recordings/vcr_cassettes/openllmetry/{name}")
    expected = cassette_usage(path)
    result = read(path)
    assert result.format == "vcr"
    assert result.errors == []
    assert [totals([r]) for r in result.requests] == expected
    lines = path.read_text(encoding="utf-8").splitlines()
    for request in result.requests:  # each request's line is where its interaction starts
        assert lines[request.line - 1].startswith("- request:")


def test_cassette_facts_stated_by_the_publisher() -> None:
    folder = "recordings/vcr_cassettes/openllmetry"
    openai = read(shared_data(f"{folder}/test_openai_prompt_caching.yaml"))
    assert [r.observed.cache_read_tokens for r in openai.requests if r.observed] == [0, 1024, 0, 0]
    # Our exact o200k rendering counts the prompt as OpenAI did (1,149 tokens).
    assert [r.input_tokens for r in openai.requests] == [1149] * 4
    assert all(r.exact and r.tokenizer == "o200k_base" for r in openai.requests)
    bedrock = read(shared_data(f"{folder}/test_invoke_model_cache_tokens.yaml"))
    assert [r.provider for r in bedrock.requests] == ["bedrock", "bedrock"]
    assert [r.model for r in bedrock.requests] == ["anthropic.claude-3-5-haiku-20241022-v1:0"] * 2
    assert [
        (r.observed.cache_write_tokens, r.observed.cache_read_tokens)
        for r in bedrock.requests
        if r.observed
    ] == [
        (18_131, 0),
        (0, 18_131),
    ]
    stream = read(shared_data(f"{folder}/test_anthropic_prompt_caching_stream_legacy.yaml"))
    assert [r.observed.cache_write_tokens for r in stream.requests if r.observed] == [1_165, 0]
    assert all(r.breakpoints for r in stream.requests)  # the requests' cache_control


# --- a HAR file with every endpoint ----------------------------------------------------------


def entry(
    url: str,
    body: Any,
    response: Any,
    *,
    status: int = 200,
    mime: str = "application/json",
    started: str = "2026-03-01T10:00:00.000Z",
    method: str = "POST",
) -> dict[str, Any]:
    content: dict[str, Any] = {"size": 0, "mimeType": mime}
    if isinstance(response, bytes):
        content.update(text=base64.b64encode(response).decode(), encoding="base64")
    else:
        content["text"] = response if isinstance(response, str) else json.dumps(response)
    request: dict[str, Any] = {"method": method, "url": url, "headers": []}
    if body is not None:
        request["postData"] = {"mimeType": "application/json", "text": json.dumps(body)}
    return {
        "startedDateTime": started,
        "request": request,
        "response": {"status": status, "headers": [], "content": content},
    }


def event_message(event_type: str, payload: dict[str, Any]) -> bytes:
    """One AWS event-stream message: prelude (total length, headers length, CRC32), headers
    (name, type 7 = string, value), payload, CRC32 of all before it."""
    headers = b""
    for name, value in ((":event-type", event_type), (":message-type", "event")):
        headers += bytes([len(name)]) + name.encode() + b"\x07"
        headers += struct.pack(">H", len(value)) + value.encode()
    data = json.dumps(payload).encode()
    total = 12 + len(headers) + len(data) + 4
    prelude = struct.pack(">II", total, len(headers))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + headers + data
    return message + struct.pack(">I", zlib.crc32(message))


def chunk(event: dict[str, Any]) -> bytes:
    return event_message("chunk", {"bytes": base64.b64encode(json.dumps(event).encode()).decode()})


def sse(*events: dict[str, Any]) -> str:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)


BEDROCK = "https://bedrock-runtime.us-east-1.amazonaws.com/model"
GEMINI = "https://generativelanguage.googleapis.com/v1beta"
SYSTEM = "You are a careful assistant. " * 40


def har_entries() -> list[dict[str, Any]]:
    return [
        entry(  # 1 OpenAI Chat Completions
            "https://api.openai.com/v1/chat/completions",
            {"model": "gpt-4o", "messages": [{"role": "user", "content": "Hello"}]},
            {
                "id": "chatcmpl-1",
                "model": "gpt-4o-2024-08-06",
                "usage": {
                    "prompt_tokens": 2_000,
                    "completion_tokens": 50,
                    "prompt_tokens_details": {"cached_tokens": 1_024},
                    "completion_tokens_details": {"reasoning_tokens": 10},
                },
            },
        ),
        entry("https://api.openai.com/v1/models", None, {"data": []}, method="GET"),  # 2
        entry(  # 3 Anthropic Messages, streamed
            "https://api.anthropic.com/v1/messages",
            {
                "model": "claude-sonnet-4-5",
                "max_tokens": 100,
                "stream": True,
                "system": [
                    {"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}
                ],
                "messages": [{"role": "user", "content": "Hi"}],
            },
            sse(
                {
                    "type": "message_start",
                    "message": {
                        "id": "msg_1",
                        "model": "claude-sonnet-4-5-20250929",
                        "usage": {
                            "input_tokens": 10,
                            "cache_creation_input_tokens": 0,
                            "cache_read_input_tokens": 1_500,
                            "output_tokens": 1,
                        },
                    },
                },
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn"},
                    "usage": {"output_tokens": 87},
                },
                {"type": "message_stop"},
            ),
            mime="text/event-stream",
        ),
        entry(  # 4 rate limited: not billed
            "https://api.openai.com/v1/chat/completions",
            {"model": "gpt-4o", "messages": [{"role": "user", "content": "Hello"}]},
            {"error": {"message": "Rate limit"}},
            status=429,
        ),
        entry(  # 5 Bedrock Converse with cache points
            f"{BEDROCK}/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse",
            {
                "system": [{"text": SYSTEM}, {"cachePoint": {"type": "default"}}],
                "messages": [
                    {
                        "role": "user",
                        "content": [
                            {"text": "Summarize the document."},
                            {"cachePoint": {"type": "default", "ttl": "1h"}},
                        ],
                    }
                ],
                "toolConfig": {
                    "tools": [{"toolSpec": {"name": "search", "inputSchema": {"json": {}}}}]
                },
                "inferenceConfig": {"maxTokens": 200},
            },
            {
                "output": {"message": {"role": "assistant", "content": [{"text": "Done."}]}},
                "usage": {
                    "inputTokens": 20,
                    "outputTokens": 5,
                    "totalTokens": 3_025,
                    "cacheReadInputTokens": 0,
                    "cacheWriteInputTokens": 3_000,
                    "cacheDetails": [
                        {"ttl": "1h", "inputTokens": 2_000},
                        {"ttl": "5m", "inputTokens": 1_000},
                    ],
                },
            },
        ),
        entry(  # 6 Gemini explicit cache creation
            f"{GEMINI}/cachedContents",
            {
                "model": "models/gemini-2.5-flash",
                "systemInstruction": {"parts": [{"text": SYSTEM}]},
                "contents": [{"role": "user", "parts": [{"text": "The manual: " + "page " * 300}]}],
                "ttl": "3600s",
            },
            {
                "name": "cachedContents/abc123",
                "model": "models/gemini-2.5-flash",
                "usageMetadata": {"totalTokenCount": 5_000},
            },
        ),
        entry(  # 7 Gemini generateContent using it
            f"{GEMINI}/models/gemini-2.5-flash:generateContent",
            {
                "cachedContent": "cachedContents/abc123",
                "contents": [{"role": "user", "parts": [{"text": "Page 3?"}]}],
            },
            {
                "candidates": [{"content": {"role": "model", "parts": [{"text": "It says..."}]}}],
                "usageMetadata": {
                    "promptTokenCount": 5_100,
                    "cachedContentTokenCount": 5_000,
                    "candidatesTokenCount": 30,
                    "thoughtsTokenCount": 100,
                    "totalTokenCount": 5_230,
                },
            },
        ),
        entry(  # 8 OpenAI Responses, streamed
            "https://api.openai.com/v1/responses",
            {
                "model": "gpt-5",
                "instructions": "Be brief.",
                "input": "What is 2+2?",
                "stream": True,
            },
            "event: response.completed\ndata: "
            + json.dumps(
                {
                    "type": "response.completed",
                    "response": {
                        "id": "resp_1",
                        "model": "gpt-5",
                        "output": [
                            {
                                "type": "message",
                                "role": "assistant",
                                "content": [{"type": "output_text", "text": "4"}],
                            }
                        ],
                        "usage": {
                            "input_tokens": 30,
                            "output_tokens": 20,
                            "input_tokens_details": {"cached_tokens": 0},
                        },
                    },
                }
            )
            + "\n\n",
            mime="text/event-stream",
        ),
        entry(  # 9 the next turn, by previous_response_id
            "https://api.openai.com/v1/responses",
            {"model": "gpt-5", "previous_response_id": "resp_1", "input": "And 3+3?"},
            {"id": "resp_2", "output": [], "usage": {"input_tokens": 45, "output_tokens": 9}},
        ),
        entry(  # 10 Bedrock InvokeModel, streamed as an event stream
            f"{BEDROCK}/anthropic.claude-3-5-haiku-20241022-v1%3A0/invoke-with-response-stream",
            {
                "anthropic_version": "bedrock-2023-05-31",
                "max_tokens": 50,
                "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
            },
            chunk(
                {
                    "type": "message_start",
                    "message": {"id": "msg_b", "usage": {"input_tokens": 8, "output_tokens": 1}},
                }
            )
            + chunk({"type": "message_delta", "delta": {}, "usage": {"output_tokens": 12}}),
            mime="application/vnd.amazon.eventstream",
        ),
    ]


def test_har_endpoints(tmp_path: Path) -> None:
    path = tmp_path / "traffic.har"
    path.write_text(json.dumps({"log": {"version": "1.2", "entries": har_entries()}}, indent=2))
    result = read(path)
    assert result.format == "har"
    assert result.errors == []
    assert [r.line for r in result.requests] == [1, 3, 5, 6, 7, 8, 9, 10]  # entry positions
    chat, anthropic, converse, creation, gemini, first, second, invoke = result.requests
    assert [r.provider for r in result.requests] == [
        "openai",
        "anthropic",
        "bedrock",
        "google",
        "google",
        "openai",
        "openai",
        "bedrock",
    ]
    # The cachedContents creation is a record of its own: its content is its prompt, its
    # usage the creation's totalTokenCount (all written), its lifetime the TTL asked for
    # (3600s: the recording neither updates nor deletes it). No reply priming follows it.
    assert creation.controls.creates is not None
    assert creation.controls.creates.name == "cachedContents/abc123"
    assert creation.controls.creates.lifetime_seconds == 3600
    assert totals([creation]) == {"input": 5_000, "read": 0, "write": 5_000, "output": 0}
    assert creation.segments[-1].kind != "template"
    assert gemini.controls.cached_content == "cachedContents/abc123"
    assert totals([chat]) == {"input": 2_000, "read": 1_024, "write": 0, "output": 50}
    assert totals([anthropic]) == {"input": 1_510, "read": 1_500, "write": 0, "output": 87}
    # Converse: inputTokens excludes the cache: 20 + 3,000; the writes split by TTL.
    assert totals([converse]) == {"input": 3_020, "read": 0, "write": 3_000, "output": 5}
    assert converse.observed is not None
    assert converse.observed.cache_write_by_ttl == {"1h": 2_000, "5m": 1_000}
    assert converse.model == "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    assert [b.ttl for b in converse.breakpoints] == [None, "1h"]
    # Gemini: thoughts are billed as output; the cachedContent is put in front of the
    # request, with a breakpoint at its end, under the cache's TTL.
    assert totals([gemini]) == {"input": 5_100, "read": 5_000, "write": 0, "output": 130}
    assert [b.ttl for b in gemini.breakpoints] == ["1h"]
    assert gemini.prompt_complete
    assert totals([first]) == {"input": 30, "read": 0, "write": 0, "output": 20}
    assert second.prompt_complete  # its first turn is in the recording
    assert totals([invoke]) == {"input": 8, "read": 0, "write": 0, "output": 12}
    assert result.skipped == {
        "recorded call that is not a model endpoint": 1,
        "HTTP 429 response (not billed)": 1,
    }
    records = {line: r for line, r in open_log(path) if isinstance(r, dict)}
    merged = records[7]["request"]
    assert "cachedContent" not in merged
    assert merged["systemInstruction"]["parts"][0]["text"] == SYSTEM
    assert [c["parts"][0]["text"][:8] for c in merged["contents"]] == ["The manu", "Page 3?"]
    chained = records[9]["request"]["input"]
    assert [item.get("role") for item in chained] == ["user", "assistant", "user"]
    assert chained[-1]["content"] == "And 3+3?" and chained[1]["content"][0]["text"] == "4"


def test_har_malformed_entries(tmp_path: Path) -> None:
    entries = har_entries()[:1]
    broken = dict(entries[0])
    broken["request"] = {**broken["request"], "postData": {"text": "{not json"}}
    unknown = entry(
        f"{BEDROCK}/amazon.nova-pro-v1%3A0/converse",
        {"messages": [{"role": "user", "content": [{"video2": {}}]}]},
        {"usage": {"inputTokens": 5, "outputTokens": 1}},
    )
    path = tmp_path / "bad.har"
    path.write_text(json.dumps({"log": {"entries": [broken, entries[0], unknown]}}, indent=1))
    result = read(path)
    assert [r.line for r in result.requests] == [2]
    assert [(e.line, e.field) for e in result.errors] == [
        (1, "log.entries[0].request.body"),
        (3, "messages[0].content[0]"),
    ]
    assert result.errors[0].reason.startswith("not JSON")
    assert "cachePoint" in result.errors[1].reason


def test_har_unreadable_entries_name_their_position(tmp_path: Path) -> None:
    # A HAR file written as one JSON document over many lines: an entry's line is its 1-based
    # position in log.entries (as logs/har.py states); an entry that is no object, or whose
    # request lacks a method, is an error naming that entry, and the entries after it are
    # still read.
    good = har_entries()[0]
    no_method = {**good, "request": {"url": good["request"]["url"]}}
    path = tmp_path / "entries.har"
    path.write_text(json.dumps({"log": {"entries": ["not an entry", no_method, good]}}, indent=1))
    result = read(path)
    assert [r.line for r in result.requests] == [3]
    assert [(e.line, e.field, e.reason) for e in result.errors] == [
        (1, "log.entries[0]", "expected an entry object"),
        (2, "log.entries[1].request", "needs method and url"),
    ]


def test_cassette_with_gzip_and_bad_interaction(tmp_path: Path) -> None:
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "Hi"}]}
    response = {"usage": {"prompt_tokens": 8, "completion_tokens": 2}}
    cassette = {
        "interactions": [
            {
                "request": {
                    "method": "POST",
                    "uri": "https://api.openai.com/v1/chat/completions",
                    "body": json.dumps(body),
                },
                "response": {
                    "status": {"code": 200, "message": "OK"},
                    "headers": {
                        "Content-Encoding": ["gzip"],
                        "Date": ["Tue, 18 Mar 2025 08:45:42 GMT"],
                    },
                    "body": {"string": gzip.compress(json.dumps(response).encode())},
                },
            },
            {"request": {"method": "POST"}, "response": {}},
            {
                "request": {
                    "method": "POST",
                    "uri": "https://api.openai.com/v1/chat/completions",
                    "body": json.dumps(body),
                },
                "response": {"status": {"code": 200}, "body": {"parsed_body": response}},
            },
        ],
        "version": 1,
    }
    path = tmp_path / "cassette.yaml"
    path.write_text(yaml.safe_dump(cassette))
    result = read(path)
    assert result.format == "vcr"
    assert [r.observed.input_tokens for r in result.requests if r.observed] == [8, 8]
    assert result.requests[0].timestamp == 1742287542.0  # the Date header
    (error,) = result.errors
    assert error.field == "interactions[1].request" and error.reason == "needs method and uri"
    lines = path.read_text().splitlines()
    assert "request" in lines[error.line - 1]
