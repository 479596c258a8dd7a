"""LiteLLM's StandardLoggingPayload (the ``standard_logging_object`` its loggers write:
S3 / GCS buckets, custom callbacks), one payload per JSON line or a JSON list.

Per payload: ``model`` (with ``custom_llm_provider``, or the ``provider/model`` prefix
LiteLLM routes on), ``messages`` (OpenAI chat messages; Anthropic ``cache_control`` marks on
their parts are kept), tools from ``model_parameters.tools``, ``startTime`` (epoch
seconds), usage ``metadata.usage_object`` (LiteLLM's OpenAI-shaped usage: ``prompt_tokens``
includes the cache reads and writes it also lists as ``cache_read_input_tokens`` /
``cache_creation_input_tokens``; cachecast.logs.usage, "openai-chat"), else the payload's
``prompt_tokens`` / ``completion_tokens``. ``response_cost`` is LiteLLM's price-table
estimate, not an observed cost; OpenRouter's own ``cost`` inside the usage object is.

Not billed, so counted in ``skipped``: payloads with ``status`` ``failure``, and
``cache_hit`` true (LiteLLM answered from its own response cache without calling the
provider).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from cachecast.core.errors import RecordFieldError
from cachecast.logs.canonical import iso_seconds, make_record, unrecorded_prompt
from cachecast.logs.messages import body_for, chat_messages, chat_tools, has_tool_calls, maybe_json
from cachecast.logs.providers import resolve_provider
from cachecast.logs.stream import Item, LogStream, each_record
from cachecast.logs.usage import normalize_usage


def fits(record: Any) -> bool:
    if isinstance(record, list):
        return bool(record) and all(fits(r) for r in record[:8])
    return (
        isinstance(record, dict)
        and "call_type" in record
        and "model" in record
        and ("messages" in record or "metadata" in record or "response_cost" in record)
    )


def read(stream: LogStream) -> Iterator[Item]:
    return each_record(stream, lambda line, payload: _payload(stream, line, payload))


def _payload(stream: LogStream, line: int, payload: Any) -> dict[str, Any] | None:
    if not isinstance(payload, dict):
        raise RecordFieldError("<record>", "expected a StandardLoggingPayload object")
    if payload.get("status") == "failure":
        stream.skip("LiteLLM call that failed (not billed)")
        return None
    if payload.get("cache_hit") is True:
        stream.skip("LiteLLM response-cache hit (no provider call)")
        return None
    model = payload.get("model")
    if not isinstance(model, str):
        raise RecordFieldError("model", f"expected a string, got {model!r}")
    hidden = maybe_json(payload.get("hidden_params"))
    hidden = hidden if isinstance(hidden, dict) else {}
    named = payload.get("custom_llm_provider")
    routed = hidden.get("litellm_model_name")
    if not isinstance(named, str) and "/" not in model and isinstance(routed, str):
        model = routed  # the "provider/model" LiteLLM routed on names the provider
    provider, model = resolve_provider(named if isinstance(named, str) else None, model)
    parameters = maybe_json(payload.get("model_parameters"))
    parameters = parameters if isinstance(parameters, dict) else {}
    tools = chat_tools(parameters.get("tools"))
    messages = maybe_json(payload.get("messages"))
    complete = True
    if isinstance(messages, list) and messages:
        chat = chat_messages(messages, "messages")
        body = body_for(provider, model, chat, tools)
        complete = tools is not None or not has_tool_calls(chat)
    elif isinstance(messages, str) and messages:
        body = {"prompt": messages}
    else:
        body, complete = unrecorded_prompt(stream.source, line), False
    metadata = maybe_json(payload.get("metadata"))
    metadata = metadata if isinstance(metadata, dict) else {}
    usage = maybe_json(metadata.get("usage_object"))
    observed = None
    if isinstance(usage, dict) and usage:
        observed = normalize_usage(usage, convention="openai-chat", path="metadata.usage_object")
    elif payload.get("prompt_tokens") is not None or payload.get("completion_tokens") is not None:
        observed = normalize_usage(
            {k: payload.get(k) for k in ("prompt_tokens", "completion_tokens")},
            convention="openai-chat",
            path="<payload>",
        )
    start = payload.get("startTime")
    session = payload.get("trace_id")
    return make_record(
        request=body,
        model=model,
        provider=provider,
        timestamp=None if start is None else iso_seconds(start, "startTime"),
        request_id=payload.get("id") if isinstance(payload.get("id"), str) else None,
        session=session if isinstance(session, str) else None,
        observed=observed,
        prompt_complete=complete,
    )
