"""The JSON Schema of one inline log record, as the OpenAPI document gives it.

A record is read by the same reader as a JSONL log line (``cachecast.tokenizers.records``),
which tells its shape by the key that carries the prompt (``render.detect_api``): ``tokens``,
``prompt``, ``contents`` (Gemini), ``messages`` (OpenAI Chat, Anthropic, Bedrock Converse),
``input`` / ``instructions`` (OpenAI Responses), Mooncake's ``input_length`` and
``hash_ids``, or a wrapper whose ``request`` (or ``body``) holds one of those. The schema is
the union of these shapes, each told apart by its key (``oneOf`` with the key required and
the others' keys absent), with the types the reader checks: token ids within 0..2**32-1 and
at most ``max_request_tokens`` of them, counts non-negative integers, timestamps epoch
numbers or ISO 8601 strings. Further keys are allowed, as in a log; usage objects are
documented in docs/log-formats.md rather than here.

What no schema can say is left to the reader, which answers 422 naming the record and field:
whether a model has a tokenizer, whether usage follows the convention its keys name, whether
a Mooncake record's ``hash_ids`` count matches its ``input_length``.
"""

from __future__ import annotations

from typing import Any

from cachecast.core.limits import SERVICE_LIMITS

MAX_TOKEN_ID = 2**32 - 1
_PROMPT_KEYS = ("tokens", "prompt", "contents", "messages", "input", "instructions")

_COUNT = {"type": "integer", "minimum": 0, "maximum": SERVICE_LIMITS.max_request_tokens}
_TEXT = {"type": "string"}
# Read as absent when null (the reader's optional strings and ids).
_OPTIONAL_TEXT = {"anyOf": [{"type": "string"}, {"type": "null"}]}
_ID = {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]}
_TIMESTAMP = {
    "anyOf": [
        {"type": "number", "minimum": 0, "description": "epoch seconds (above 1e11: ms)"},
        {"type": "string", "format": "date-time", "description": "ISO 8601 (naive = UTC)"},
        {"type": "null", "description": "the previous record's (0 for the first)"},
    ]
}
# Fields a wrapper record may carry around its body, with the reader's types.
_WRAPPER_FIELDS: dict[str, Any] = {
    "timestamp": _TIMESTAMP,
    "scope": _ID,
    "session": _OPTIONAL_TEXT,
    "request_id": {
        "description": "a string or integer names the request; anything else is ignored"
    },
    "model": {**_OPTIONAL_TEXT, "description": "the model the request was logged with"},
    "provider": _OPTIONAL_TEXT,
    "output_tokens": _COUNT,
    "prompt_complete": {"type": "boolean"},
    "service_tier": {
        **_OPTIONAL_TEXT,
        "description": "batch, flex, priority or scale: billed at on-demand prices all the"
        " same, and the report's notes say so (other values: standard processing)",
    },
}
# Content is text, parts or null, each API with its own part types: left to the reader.
_MESSAGE = {
    "type": "object",
    "required": ["role"],
    "properties": {"role": {"type": "string", "examples": ["system", "user", "assistant"]}},
}


# The keys the reader looks for before a Responses body's (``render.detect_api``).
_RESPONSES_EXCLUDED = (
    *("tokens", "prompt", "contents", "messages"),
    *("input_length", "hash_ids", "request", "body"),
)


def _absent(*keys: str) -> dict[str, Any]:
    return {"not": {"anyOf": [{"required": [key]} for key in keys]}} if keys else {}


def _shape(title: str, key: str, schema: Any, description: str) -> dict[str, Any]:
    others = [name for name in _PROMPT_KEYS if name != key]
    return {
        "title": title,
        "description": description,
        "type": "object",
        "required": [key],
        "properties": {**_WRAPPER_FIELDS, key: schema},
        **_absent(*others, "input_length", "hash_ids", "request", "body"),
    }


SHAPES: list[dict[str, Any]] = [
    _shape(
        "TokensRecord",
        "tokens",
        {
            "type": "array",
            "items": {"type": "integer", "minimum": 0, "maximum": MAX_TOKEN_ID},
            "maxItems": SERVICE_LIMITS.max_request_tokens,
        },
        "pre-tokenized: the prompt's token ids",
    ),
    _shape("PromptRecord", "prompt", _TEXT, "a completion prompt"),
    _shape(
        "ChatRecord",
        "messages",
        {"type": "array", "items": _MESSAGE},
        "OpenAI Chat Completions (Anthropic Messages with provider anthropic or a system)",
    ),
    _shape(
        "GeminiRecord",
        "contents",
        {"type": "array", "items": {"type": "object"}},
        "Gemini generateContent (or a cachedContents creation, with ttl and displayName)",
    ),
    {
        "title": "ResponsesRecord",
        "description": "OpenAI Responses: input (text or items), optional instructions",
        "type": "object",
        "required": ["input"],
        "properties": {
            **_WRAPPER_FIELDS,
            "input": {"anyOf": [{"type": "string"}, {"type": "array"}]},
            "instructions": _OPTIONAL_TEXT,
        },
        **_absent(*_RESPONSES_EXCLUDED),
    },
    {
        "title": "MooncakeRecord",
        "description": "a Mooncake trace line: one hash id per 512-token block",
        "type": "object",
        "required": ["input_length", "hash_ids"],
        "properties": {
            "timestamp": {
                "anyOf": [{"type": "number", "minimum": 0}, {"type": "null"}],
                "description": "milliseconds",
            },
            "input_length": _COUNT,
            "output_length": _COUNT,
            "hash_ids": {"type": "array", "items": {"type": "integer"}},
            "model": _OPTIONAL_TEXT,
        },
        **_absent(*_PROMPT_KEYS, "request", "body"),
    },
]

WRAPPER = {
    "title": "WrappedRecord",
    "description": "a wrapper whose request (or body) is one of the bodies above",
    "type": "object",
    "required": ["request"],
    "properties": {
        **_WRAPPER_FIELDS,
        "request": {"type": "object", "anyOf": [{"required": [key]} for key in _PROMPT_KEYS]},
        "response": {"type": "object"},
        "usage": {"type": "object"},
    },
    **_absent(*_PROMPT_KEYS, "body"),
}

RECORD_SCHEMA: dict[str, Any] = {
    "title": "LogRecord",
    "description": "one request of a log, in one of the shapes cachecast reads (see each)",
    "oneOf": [*SHAPES, WRAPPER],
}
