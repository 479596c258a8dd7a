"""pydantic-ai's xAI gRPC cassettes (``tests/models/cassettes/test_xai/*.xai.yaml``;
docs/log-formats.md, "pydantic-ai's xAI gRPC cassettes"): the xai-sdk speaks gRPC, which VCR
cannot record, so pydantic-ai's ``XaiProtoCassette`` keeps each call's protobuf messages,
with their JSON form (``MessageToDict``, proto field names) beside them::

    version: 1
    interactions:
    - request_sample: {json: {messages: [{content: [{text}], role: ROLE_USER}], model}, raw}
      response_sample: {json: {id, outputs: [...], created, model, usage: {...}}, raw}
    - request_stream: {json, raw}
      response_stream: {chunks_json: [...], chunks_raw: [...]}

Only the JSON form is read (``raw`` is protobuf, which we do not decode); a model call
without it is an error naming ``request_sample.json``. Each call is read as the xAI chat
completion it stands for (no URI is recorded; it is ``https://api.x.ai/v1/chat/completions``
in effect, provider ``xai``): messages with their roles (``ROLE_SYSTEM`` -> ``system``...),
text parts joined as OpenAI content parts, tool calls and tool definitions as OpenAI's; the
usage (``prompt_tokens`` includes ``cached_prompt_text_tokens``, the cache read) as xAI's
chat completions report it; the time from ``created`` (RFC 3339). Other recorded calls
(``collections_method``, ``image_method``) are no chat calls and are skipped.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from cachecast.core.errors import RecordFieldError
from cachecast.logs.http.exchange import Exchange
from cachecast.logs.sanitize import shown

URL = "https://api.x.ai/v1/chat/completions"  # what the gRPC chat service stands for
OTHER_CALL = "grpc://api.x.ai/other"  # a recorded call that is no chat completion
KEYS = ("request_sample", "request_stream", "collections_method", "image_method")
_ROLES = {
    "ROLE_SYSTEM": "system",
    "ROLE_USER": "user",
    "ROLE_ASSISTANT": "assistant",
    "ROLE_TOOL": "tool",
    "ROLE_FUNCTION": "tool",
    "ROLE_DEVELOPER": "developer",
}


def is_grpc(interaction: Any) -> bool:
    """Whether a cassette interaction is one of pydantic-ai's xAI proto interactions."""
    return isinstance(interaction, dict) and any(key in interaction for key in KEYS)


def as_exchange(interaction: dict[str, Any], line: int, where: str) -> Exchange:
    at = f"{where}." if where else ""
    kind = "sample" if "request_sample" in interaction else "stream"
    if "request_sample" not in interaction and "request_stream" not in interaction:
        return Exchange(line, where, "POST", OTHER_CALL, {}, None, 200, {}, None)
    request = _json(interaction.get(f"request_{kind}"), "json", f"{at}request_{kind}")
    response_block = interaction.get(f"response_{kind}")
    if kind == "sample":
        response = _json(response_block, "json", f"{at}response_sample")
    else:
        chunks = _json(response_block, "chunks_json", f"{at}response_stream")
        response = _last_usage(chunks, f"{at}response_stream.chunks_json")
    body = _chat_body(request, f"{at}request_{kind}.json")
    reply = _chat_reply(response, f"{at}response_{kind}")
    return Exchange(
        line=line,
        where=where,
        method="POST",
        url=URL,
        request_headers={"content-type": "application/json"},
        request_body=body,
        status=200,
        response_headers={"content-type": "application/json"},
        response_body=reply,
        timestamp=None,  # the reply's ``created`` dates it (response_usage.response_time)
    )


def _json(block: Any, key: str, where: str) -> Any:
    if not isinstance(block, dict):
        raise RecordFieldError(where, "missing or not a mapping")
    if key not in block:
        raise RecordFieldError(
            f"{where}.{key}",
            "missing: only the JSON form is read (the raw protobuf bytes are not decoded)",
        )
    return block[key]


def _last_usage(chunks: Any, where: str) -> dict[str, Any]:
    if not isinstance(chunks, list):
        raise RecordFieldError(where, "expected a list of chunks")
    for chunk in reversed(chunks):
        if isinstance(chunk, dict) and isinstance(chunk.get("usage"), dict):
            return chunk
    return next((c for c in chunks if isinstance(c, dict)), {})


def _chat_body(request: Any, where: str) -> dict[str, Any]:
    if not isinstance(request, dict):
        raise RecordFieldError(where, "expected a mapping")
    messages = request.get("messages")
    if not isinstance(messages, list):
        raise RecordFieldError(f"{where}.messages", "missing or not a list")
    body: dict[str, Any] = {
        "messages": [_message(m, f"{where}.messages[{i}]") for i, m in enumerate(messages)]
    }
    if isinstance(request.get("model"), str):
        body["model"] = request["model"]
    tools = request.get("tools")
    if isinstance(tools, list):
        body["tools"] = [_tool(t, f"{where}.tools[{i}]") for i, t in enumerate(tools)]
    return body


def _message(message: Any, where: str) -> dict[str, Any]:
    if not isinstance(message, dict):
        raise RecordFieldError(where, "expected a mapping")
    role = message.get("role", "ROLE_USER")
    if role not in _ROLES:
        raise RecordFieldError(
            f"{where}.role", f"expected one of {', '.join(_ROLES)}, got {shown(role)}"
        )
    parts = message.get("content", [])
    if isinstance(parts, str):
        parts = [{"text": parts}]
    if not isinstance(parts, list):
        raise RecordFieldError(f"{where}.content", "expected a list of parts")
    texts = [
        part["text"]
        for part in parts
        if isinstance(part, dict) and isinstance(part.get("text"), str)
    ]
    out: dict[str, Any] = {
        "role": _ROLES[role],
        "content": [{"type": "text", "text": text} for text in texts],
    }
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        out["tool_calls"] = [
            {
                "id": str(call.get("id", "")),
                "type": "function",
                "function": {
                    "name": str((call.get("function") or {}).get("name", "")),
                    "arguments": str((call.get("function") or {}).get("arguments", "")),
                },
            }
            for call in calls
            if isinstance(call, dict)
        ]
    if isinstance(message.get("tool_call_id"), str):
        out["tool_call_id"] = message["tool_call_id"]
    return out


def _tool(tool: Any, where: str) -> dict[str, Any]:
    function = tool.get("function") if isinstance(tool, dict) else None
    if not isinstance(function, dict):
        raise RecordFieldError(f"{where}.function", "missing or not a mapping")
    parameters = function.get("parameters")
    if isinstance(parameters, str):  # the proto keeps the JSON schema as text
        try:
            parameters = json.loads(parameters)
        except ValueError:
            raise RecordFieldError(f"{where}.function.parameters", "not JSON text") from None
    spec: dict[str, Any] = {"name": str(function.get("name", ""))}
    if isinstance(function.get("description"), str):
        spec["description"] = function["description"]
    if parameters is not None:
        spec["parameters"] = parameters
    return {"type": "function", "function": spec}


def _chat_reply(response: Any, where: str) -> dict[str, Any]:
    if not isinstance(response, dict):
        raise RecordFieldError(f"{where}.json", "expected a mapping")
    reply: dict[str, Any] = {"object": "chat.completion"}
    for key in ("id", "model"):
        if isinstance(response.get(key), str):
            reply[key] = response[key]
    created = response.get("created")
    if isinstance(created, str) and len(created) <= 64:
        try:
            moment = dt.datetime.fromisoformat(created.replace("Z", "+00:00"))
        except ValueError:
            moment = None
        if moment is not None:
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=dt.UTC)
            reply["created"] = int(moment.timestamp())
    usage = response.get("usage")
    if isinstance(usage, dict):
        reply["usage"] = _usage(usage)
    return reply


def _usage(usage: dict[str, Any]) -> dict[str, Any]:
    """xAI's gRPC ``SamplingUsage`` as its chat completions write usage: the cached prompt
    tokens under ``prompt_tokens_details.cached_tokens``, reasoning under
    ``completion_tokens_details`` (whether it lies inside ``completion_tokens`` is told by
    ``total_tokens``, as for xAI's REST chat completions: ``usage._openai_chat``)."""
    counts = {key: _int(value) for key, value in usage.items()}
    out: dict[str, Any] = {
        k: counts[k] for k in ("prompt_tokens", "completion_tokens", "total_tokens") if k in counts
    }
    if "cached_prompt_text_tokens" in counts or "prompt_tokens" in counts:
        # MessageToDict leaves out a field at its default value (protobuf's JSON mapping): an
        # absent count of cached tokens is a read of 0, not one left unreported
        # (docs/log-formats.md, "Absent cache reads").
        cached = counts.get("cached_prompt_text_tokens", 0)
        out["prompt_tokens_details"] = {"cached_tokens": cached}
    if "reasoning_tokens" in counts:
        out["completion_tokens_details"] = {"reasoning_tokens": counts["reasoning_tokens"]}
    return out


def _int(value: Any) -> Any:
    # MessageToDict writes 64-bit integers as decimal strings; the usage reader checks the rest
    if isinstance(value, str) and value.isdigit() and len(value) <= 20:
        return int(value)
    return value
