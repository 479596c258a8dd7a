"""Request bodies the renderer reads now: Bedrock Converse (blocks keyed by kind, no type
field; cachePoint blocks as cache breakpoints, per the Bedrock API reference), InvokeModel's
Anthropic bodies (anthropic_version), and the cache mark cachecast puts on Gemini content."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from cachecast.core.errors import RecordFieldError
from cachecast.tokenizers import read_records
from cachecast.tokenizers.render import detect_api

MODEL = "anthropic.claude-sonnet-4-5-20250929-v1:0"
SYSTEM = "You review contracts. " * 30


def converse(question: str = "Is clause 4 enforceable?", system: str = SYSTEM) -> dict[str, Any]:
    return {
        "system": [{"text": system}, {"cachePoint": {"type": "default"}}],
        "toolConfig": {
            "tools": [
                {
                    "toolSpec": {
                        "name": "lookup",
                        "description": "Find a clause",
                        "inputSchema": {"json": {}},
                    }
                },
                {"cachePoint": {"type": "default"}},
            ]
        },
        "messages": [
            {
                "role": "user",
                "content": [
                    {"text": "Here is the contract. " * 20},
                    {"cachePoint": {"type": "default", "ttl": "1h"}},
                ],
            },
            {
                "role": "assistant",
                "content": [{"toolUse": {"toolUseId": "t1", "name": "lookup", "input": {"n": 4}}}],
            },
            {
                "role": "user",
                "content": [
                    {
                        "toolResult": {
                            "toolUseId": "t1",
                            "content": [{"text": "Clause 4: ..."}],
                            "status": "success",
                        }
                    },
                    {"text": question},
                ],
            },
        ],
        "inferenceConfig": {"maxTokens": 100},
    }


def one(body: dict[str, Any], **record: Any) -> Any:
    (request,) = read_records(
        [{"model": MODEL, "provider": "bedrock", "request": body, **record}], "mem"
    )
    return request


def test_converse_is_detected_apart_from_anthropic_and_chat() -> None:
    assert detect_api(converse(), "bedrock") == "bedrock"
    assert detect_api(converse(), None) == "bedrock"
    nova = {
        "schemaVersion": "messages-v1",
        "messages": [{"role": "user", "content": [{"text": "hi"}]}],
    }
    assert detect_api(nova, None) == "bedrock"  # Nova's InvokeModel body has the same blocks
    invoke = {
        "anthropic_version": "bedrock-2023-05-31",
        "max_tokens": 10,
        "messages": [
            {
                "role": "user",
                "content": [{"type": "image", "source": {"type": "base64", "data": "x"}}],
            }
        ],
    }
    assert detect_api(invoke, "bedrock") == "anthropic"
    chat = {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}
    assert detect_api(chat, None) == "chat"


def test_cache_points_mark_the_prefix_before_them() -> None:
    request = one(converse())
    # One breakpoint per cachePoint block, with its TTL (none given: the default).
    assert [b.ttl for b in request.breakpoints] == [None, None, "1h"]
    offsets = [b.offset for b in request.breakpoints]
    assert offsets == sorted(offsets) and offsets[0] > 0
    # What follows a cache point does not change the tokens before it...
    later = one(converse(question="And clause 5?"))
    assert [b.offset for b in later.breakpoints] == offsets
    tokens, later_tokens = list(request.tokens), list(later.tokens)
    assert tokens[: offsets[-1]] == later_tokens[: offsets[-1]]
    assert tokens != later_tokens
    # ...and what precedes it does: the tools come first, then the system prompt.
    other = one(converse(system="You review leases. " * 30))
    assert list(other.tokens)[: offsets[0]] == tokens[: offsets[0]]  # the tools' prefix
    assert list(other.tokens)[: offsets[1]] != tokens[: offsets[1]]
    assert [s.label for s in request.segments][:4] == [
        "toolConfig.tools[0]",
        "toolConfig.tools[1]",
        "system[0]",
        "system[1]",
    ]


def test_converse_observed_usage_fits_the_prompt() -> None:
    usage = {
        "inputTokens": 12,
        "outputTokens": 4,
        "cacheReadInputTokens": 2_000,
        "cacheWriteInputTokens": 0,
    }
    request = one(converse(), response={"usage": usage})
    assert request.input_tokens == 2_012  # the approximate tokens are fitted to the count
    assert request.observed is not None and request.observed.cache_read_tokens == 2_000


def test_malformed_converse_blocks() -> None:
    body = converse()
    body["messages"][0]["content"].insert(0, {"audio": {}})
    with pytest.raises(RecordFieldError, match=r"expected a text, image, document"):
        read_records_strict(body)
    bad_ttl = copy.deepcopy(converse())
    bad_ttl["system"][1]["cachePoint"]["ttl"] = 5
    with pytest.raises(RecordFieldError, match=r"cachePoint\.ttl"):
        read_records_strict(bad_ttl)


def read_records_strict(body: dict[str, Any]) -> None:
    from cachecast.core.errors import LogRecordError

    try:
        list(read_records([{"model": MODEL, "request": body}], "mem", strict=True))
    except LogRecordError as exc:
        raise RecordFieldError(exc.field, exc.reason) from exc


def test_gemini_cache_mark_is_a_breakpoint() -> None:
    contents = [
        {
            "role": "user",
            "parts": [{"text": "The manual. " * 50}],
            "cache_control": {"type": "ephemeral", "ttl": "1h"},
        },
        {"role": "user", "parts": [{"text": "Page 3?"}]},
    ]
    (request,) = read_records(
        [{"model": "gemini-2.5-flash", "request": {"contents": contents}}], "mem"
    )
    assert [b.ttl for b in request.breakpoints] == ["1h"]
    assert request.breakpoints[0].offset == request.segments[0].end
