"""Log formats, segment boundaries, usage normalization and bad lines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import quicktok

from cachecast.core.errors import LogRecordError
from cachecast.tokenizers import get_tokenizer, read_log, read_records
from cachecast.tokenizers.base import TiktokenTokenizer
from cachecast.tokenizers.encode import rendered_text
from cachecast.tokenizers.render import detect_api, render


def one(record: dict[str, Any], **options: Any):
    errors: list[LogRecordError] = []
    results = list(read_records([record], "mem.jsonl", errors=errors, **options))
    assert errors == []
    assert len(results) == 1
    return results[0]


def o200k() -> TiktokenTokenizer:
    tokenizer = get_tokenizer("gpt-4o")
    assert isinstance(tokenizer, TiktokenTokenizer)
    return tokenizer


CHAT = {
    "model": "gpt-4o",
    "messages": [
        {"role": "system", "content": "You are a careful assistant.\n\nAnswer briefly."},
        {"role": "user", "content": [{"type": "text", "text": "  what is 2+2?\n"}]},
        {"role": "assistant", "content": "4"},
        {"role": "user", "content": "and 3 + 3 ?"},
    ],
}


def test_openai_chat_count_follows_openai_rule() -> None:
    # OpenAI's counting rule: 3 tokens per message + role + content, plus 3 priming tokens.
    # "user" and "assistant" are one token each in o200k; "hello world" is two.
    request = one({"model": "gpt-4o", "messages": [{"role": "user", "content": "hello world"}]})
    assert request.input_tokens == 3 + 1 + 2 + 3
    assert request.exact and request.tokenizer == "o200k_base"
    # Ids: <|start|> user <|message|> hello world <|end|> <|start|> assistant <|message|>,
    # framing ids as published for o200k_harmony, text ids from quicktok's own encoder.
    upstream = quicktok.get_encoding("o200k_base")
    start, message, end = 200006, 200008, 200007
    assert list(request.tokens or []) == [
        start, *upstream.encode("user"), message, 24912, 2375, end,
        start, *upstream.encode("assistant"), message,
    ]  # fmt: skip


def test_segments_concatenate_to_whole_prompt_encoding() -> None:
    tokenizer = o200k()
    request = one(CHAT)
    whole = tokenizer.framed_encoding.encode(
        rendered_text(render(CHAT, detect_api(CHAT, None)), tokenizer), allowed_special="all"
    )
    assert list(request.tokens or []) == whole
    # Contiguous spans covering the prompt, one per message, then the reply priming.
    assert [s.label for s in request.segments] == [
        "messages[0]",
        "messages[1]",
        "messages[2]",
        "messages[3]",
        "reply_priming",
    ]
    assert request.segments[0].start == 0 and request.segments[-1].end == len(whole)
    for left, right in zip(request.segments, request.segments[1:], strict=False):
        assert left.end == right.start
    # Each span is exactly that message's framed rendering.
    decode = tokenizer.framed_encoding.decode
    tokens = list(request.tokens or [])
    span = request.segments[1]
    assert (
        decode(tokens[span.start : span.end]) == "<|start|>user<|message|>  what is 2+2?\n<|end|>"
    )
    span = request.segments[2]
    assert decode(tokens[span.start : span.end]) == "<|start|>assistant<|message|>4<|end|>"


def test_cl100k_segments_consistent() -> None:
    record = dict(CHAT, model="gpt-4-0613")
    tokenizer = get_tokenizer("gpt-4-0613")
    assert isinstance(tokenizer, TiktokenTokenizer)
    request = one(record)
    whole = tokenizer.framed_encoding.encode(
        rendered_text(render(record, "chat"), tokenizer), allowed_special="all"
    )
    assert list(request.tokens or []) == whole
    assert request.tokenizer == "cl100k_base"


def test_chat_tool_calls_and_tools_and_images() -> None:
    record = {
        "model": "gpt-4.1-mini",
        "tools": [{"type": "function", "function": {"name": "add", "parameters": {}}}],
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "look"},
                    {"type": "image_url", "image_url": {"url": "https://x/a.png", "detail": "low"}},
                ],
            },
            {
                "role": "assistant",
                "tool_calls": [{"id": "c1", "function": {"name": "add", "arguments": "{}"}}],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "3"},
        ],
    }
    request = one(record)
    assert [s.kind for s in request.segments] == [
        "tool",
        "message",
        "message",
        "message",
        "template",
    ]
    # The low-detail image costs 85 tokens (OpenAI's fixed price) inside messages[0]'s span:
    # 3 framing + "user" (1) + "look" (1) + 85.
    span = request.segments[1]
    assert span.end - span.start == 3 + 1 + 1 + 85
    assert not request.exact  # tool definitions: OpenAI's own rendering is not public


def test_responses_api() -> None:
    record = {
        "model": "gpt-5",
        "instructions": "Be terse.",
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "hello world"}]},
            {"type": "function_call", "name": "f", "arguments": "{}", "call_id": "1"},
            {"type": "function_call_output", "call_id": "1", "output": "ok"},
        ],
        "usage": {
            "input_tokens": 50,
            "input_tokens_details": {"cached_tokens": 32},
            "output_tokens": 7,
        },
    }
    request = one(record)
    assert [s.label for s in request.segments][:4] == [
        "instructions",
        "input[0]",
        "input[1]",
        "input[2]",
    ]
    assert request.observed is not None
    assert (request.observed.input_tokens, request.observed.cache_read_tokens) == (50, 32)
    assert request.output_tokens == 7
    # String input: one user message.
    assert one({"model": "gpt-5", "input": "hello world"}).input_tokens == 9


def test_anthropic_breakpoints_and_usage() -> None:
    record = {
        "timestamp": "2026-03-01T12:00:00Z",
        "scope": "org-a",
        "provider": "anthropic",
        "request": {
            "model": "claude-sonnet-4-5",
            "tools": [{"name": "t", "input_schema": {}, "cache_control": {"type": "ephemeral"}}],
            "system": [
                {
                    "type": "text",
                    "text": "You are helpful.",
                    "cache_control": {"type": "ephemeral", "ttl": "1h"},
                }
            ],
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "text",
                            "text": "hello world",
                            "cache_control": {"type": "ephemeral"},
                        }
                    ],
                }
            ],
        },
        "response": {
            "usage": {
                "input_tokens": 10,
                "cache_creation_input_tokens": 300,
                "cache_read_input_tokens": 2000,
                "cache_creation": {
                    "ephemeral_5m_input_tokens": 100,
                    "ephemeral_1h_input_tokens": 200,
                },
                "output_tokens": 12,
            }
        },
    }
    request = one(record)
    observed = request.observed
    assert observed is not None
    # Anthropic's input_tokens excludes cache reads and writes: total = 10 + 300 + 2000.
    assert observed.input_tokens == 2310
    assert observed.cache_write_by_ttl == {"5m": 100, "1h": 200}
    assert observed.cache_read_tokens == 2000 and observed.output_tokens == 12
    # The count is the provider's; the approximate ids are scaled to it, and the request
    # stays marked approximate (positions inside the prompt are estimated).
    assert not request.exact and request.input_tokens == 2310
    assert len(request.tokens or []) == 2310
    assert request.tokenizer == "o200k_base (approximation), calibrated to usage"
    assert request.timestamp == 1772366400.0  # 2026-03-01T12:00:00Z, epoch seconds
    assert request.scope == "org-a"
    # Breakpoints sit at the end of the marked blocks (tool, system block, user block).
    ends = {s.label: s.end for s in request.segments}
    assert [(b.offset, b.ttl) for b in request.breakpoints] == [
        (ends["tools[0]"], None),
        (ends["system[0]"], "1h"),
        (ends["messages[0].content[0]"], None),
    ]


def test_anthropic_without_usage_is_approximate() -> None:
    record = {
        "model": "claude-haiku-4-5",
        "system": "s",
        "messages": [{"role": "user", "content": "hi"}],
    }
    request = one(record)
    assert not request.exact
    assert request.tokenizer == "o200k_base (approximation), uncalibrated"


def test_gemini_and_deepseek_usage() -> None:
    gemini = {
        "model": "gemini-2.5-flash",
        "request": {
            "systemInstruction": {"parts": [{"text": "sys"}]},
            "contents": [{"role": "user", "parts": [{"text": "hello world"}]}],
        },
        "response": {
            "usageMetadata": {
                "promptTokenCount": 40,
                "cachedContentTokenCount": 16,
                "candidatesTokenCount": 3,
            }
        },
    }
    request = one(gemini)
    assert request.observed is not None
    assert (request.observed.input_tokens, request.observed.cache_read_tokens) == (40, 16)
    assert request.input_tokens == 40 and not request.exact
    deepseek = {
        "model": "deepseek-chat",
        "messages": [{"role": "user", "content": "x"}],
        "usage": {
            "prompt_tokens": 20,
            "prompt_cache_hit_tokens": 12,
            "prompt_cache_miss_tokens": 8,
            "completion_tokens": 2,
        },
    }
    request = one(deepseek)
    assert request.observed is not None
    assert (request.observed.input_tokens, request.observed.cache_read_tokens) == (20, 12)


def test_openai_usage_cached_and_written() -> None:
    record = dict(
        CHAT,
        usage={
            "prompt_tokens": 2048,
            "completion_tokens": 5,
            "prompt_tokens_details": {"cached_tokens": 1024, "cache_write_tokens": 512},
        },
    )
    observed = one(record).observed
    assert observed is not None
    assert (observed.input_tokens, observed.cache_read_tokens, observed.cache_write_tokens) == (
        2048,
        1024,
        512,
    )


def test_prompt_tokens_and_epoch_timestamps() -> None:
    request = one({"prompt": "hello world", "model": "gpt-3.5-turbo", "timestamp": 1700000000000})
    assert list(request.tokens or []) == [15339, 1917]  # no framing for a plain prompt
    assert request.timestamp == 1700000000.0  # milliseconds recognised
    request = one({"tokens": [5, 6, 7], "timestamp": 12.5})
    assert list(request.tokens or []) == [5, 6, 7] and request.timestamp == 12.5
    assert request.tokenizer == "pre-tokenized"


def test_mooncake_trace(mooncake_trace: Path) -> None:
    errors: list[LogRecordError] = []
    first = next(iter(read_log(mooncake_trace, errors=errors)))
    # First line of the trace: timestamp 0, input_length 40160, output 6, 79 hash ids (0..78):
    # ceil(40160 / 512) = 79.
    assert (first.timestamp, first.input_tokens, first.output_tokens) == (0.0, 40160, 6)
    assert list(first.block_keys or []) == list(range(79)) and first.block_size == 512
    assert errors == []


def test_model_option_overrides_and_unknown_model_lists_patterns() -> None:
    request = one({"model": "gpt-4", "prompt": "hello world"}, model="gpt-4o")
    assert request.tokenizer == "o200k_base"
    with pytest.raises(LogRecordError) as raised:
        list(read_records([{"model": "llama-9", "prompt": "x"}], "m.jsonl", strict=True))
    assert raised.value.field == "model" and "gpt-4o*" in str(raised.value)


BAD_LINES = [
    ("not json at all", "<line>", "invalid JSON"),
    ("[1, 2]", "<line>", "JSON object"),
    ('{"model": "gpt-4o", "messages": [{"content": "x"}]}', "messages[0].role", "missing"),
    ('{"model": "gpt-4o", "messages": "hi"}', "messages", "expected a list"),
    ('{"input_length": -3, "output_length": 1, "hash_ids": []}', "input_length", "negative"),
    ('{"input_length": 600, "output_length": 1, "hash_ids": [1]}', "hash_ids", "expected ceil"),
    ('{"model": "no-such-model", "prompt": "x"}', "model", "unknown model"),
    ('{"prompt": "x"}', "model", "no model"),
    ('{"model": "gpt-4o", "prompt": "x", "timestamp": "yesterday"}', "timestamp", "ISO 8601"),
    ('{"model": "gpt-4o", "tokens": [1, -2]}', "tokens[1]", "non-negative"),
    (
        '{"model": "gpt-4o", "messages": [{"role": "user", "content": [{"type": "video"}]}]}',
        "messages[0].content[0].type",
        "unsupported",
    ),
    (
        '{"model": "gpt-4o", "prompt": "x", "usage": {"prompt_tokens": "many"}}',
        "usage.prompt_tokens",
        "integer",
    ),
]


def test_every_bad_line_reported_with_file_line_field(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    good = json.dumps({"model": "gpt-4o", "prompt": "ok"})
    lines = [good]
    for text, _, _ in BAD_LINES:
        lines.append(text)
    lines.append(good)
    log.write_text("\n".join(lines) + "\n")
    errors: list[LogRecordError] = []
    results = list(read_log(log, errors=errors))
    assert [r.line for r in results] == [1, len(lines)]
    assert len(errors) == len(BAD_LINES)
    for error, (_, field, reason), line in zip(
        errors, BAD_LINES, range(2, len(lines)), strict=True
    ):
        assert (error.file, error.line, error.field) == (str(log), line, field)
        assert reason in error.reason
        assert str(error).startswith(f"{log}:{line}: {field}: ")
    with pytest.raises(LogRecordError) as raised:
        list(read_log(log, strict=True))
    assert raised.value.line == 2
