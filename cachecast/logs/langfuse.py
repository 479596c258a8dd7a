"""Langfuse exports: a trace with its observations (``{"trace": {...}, "observations":
[...]}``, as the UI exports it, or the trace's own fields beside ``observations``, as the
public API's ``GET /traces/{id}`` returns it), a JSON list of such traces, a JSON list of
observations, an API page ``{"data": [...], "meta": {...}}`` of either (``GET
/observations``, ``GET /v2/observations``), or observations as JSON lines.

Each ``GENERATION`` observation is one model call (spans, tools, agents are not):

* model ``model`` (the v2 API's ``providedModelName``); provider from ``metadata``
  (LangChain's ``ls_provider``, or the OTel attributes Langfuse keeps:
  ``gen_ai.provider.name`` / ``gen_ai.system`` / ``llm.system``), else from the model name;
* prompt ``input`` (a JSON string or value): chat messages in any of the shapes
  cachecast.logs.messages reads, or Responses items (with ``modelParameters.instructions``
  where the integration put the instructions there). An input that is no message list is
  kept as an unrecorded prompt; messages that call tools without ``toolDefinitions`` make
  the request ``prompt_complete`` false;
* usage ``usageDetails`` (Langfuse's free-form usage types: ``input`` counts uncached input
  only, the other keys add to it; cachecast.logs.usage, "langfuse"). ``costDetails`` are
  Langfuse's own price-table estimates and are not taken as an observed cost. Without
  ``usageDetails``: ``usage`` (``{input, output, total}``, or the first SDKs'
  ``{promptTokens, completionTokens, totalTokens}``), else the deprecated
  ``promptTokens`` / ``completionTokens`` / ``totalTokens`` of the observation;
* timestamp ``startTime``; session the trace's ``sessionId`` (the v2 API puts it on the
  observation), else its trace id.

Observations of one document are handed on in start-time order; ``line`` is the
observation's position in the document (or its JSON line).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from cachecast.core.errors import RecordFieldError
from cachecast.logs.canonical import iso_seconds, make_record, require_dict, unrecorded_prompt
from cachecast.logs.errors import LogRecordError
from cachecast.logs.messages import (
    body_for,
    chat_messages,
    chat_tools,
    has_tool_calls,
    is_responses_input,
    maybe_json,
)
from cachecast.logs.providers import resolve_provider
from cachecast.logs.stream import Item, LogStream, TimeOrdered, documents
from cachecast.logs.usage import normalize_usage

OBSERVATION_TYPES = frozenset(
    {
        "GENERATION",
        "SPAN",
        "EVENT",
        "AGENT",
        "TOOL",
        "CHAIN",
        "RETRIEVER",
        "EMBEDDING",
        "EVALUATOR",
        "GUARDRAIL",
    }
)


def is_observation(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and value.get("type") in OBSERVATION_TYPES
        and ("traceId" in value or "usageDetails" in value)
    )


def is_trace(value: Any) -> bool:
    """A trace with its observations inline (the public API's ``GET /traces/{id}``:
    the trace's fields beside ``observations``, each an observation object)."""
    if not isinstance(value, dict) or not isinstance(value.get("observations"), list):
        return False
    if isinstance(value.get("trace"), dict):
        return True
    found = [v for v in value["observations"][:8] if isinstance(v, dict)]
    return bool(found) and all(v.get("type") in OBSERVATION_TYPES for v in found)


def _list_fits(items: list[Any]) -> bool:
    head = items[:8]
    return bool(head) and (all(is_observation(v) for v in head) or all(is_trace(v) for v in head))


def fits(value: Any) -> bool:
    if isinstance(value, dict):
        if is_trace(value):
            return True
        if isinstance(value.get("data"), list):  # an API page: {data: [...], meta: {...}}
            return _list_fits(value["data"])
        return is_observation(value)
    if isinstance(value, list):
        return _list_fits(value)
    return False


Part = tuple[dict[str, Any], Any, str | None]


def _trace_part(document: dict[str, Any], prefix: str) -> Part:
    found = document.get("trace")
    # {trace, observations} (the UI's export), or the trace's own fields beside them.
    trace: dict[str, Any] = found if isinstance(found, dict) else document
    return trace, document["observations"], prefix


def _parts(document: Any) -> list[Part] | None:
    """(trace, observations, field prefix) of each trace ``document`` holds."""
    if isinstance(document, dict) and "observations" in document:
        return [_trace_part(document, "observations")]
    base, items = "", document
    if isinstance(document, dict) and isinstance(document.get("data"), list):
        base, items = "data", document["data"]
    if isinstance(items, list):
        if items and all(is_trace(v) for v in items[:8]):
            return [
                _trace_part(t, f"{base}[{i}].observations")
                for i, t in enumerate(items)
                if isinstance(t, dict)
            ]
        return [({}, items, base)]
    if is_observation(document):
        return [({}, [document], None)]
    return None


def read(stream: LogStream) -> Iterator[Item]:
    for line, document in documents(stream):
        if isinstance(document, LogRecordError):
            yield line, document
            continue
        parts = _parts(document)
        if parts is None:
            yield line, stream.error(line, "observations", "missing: not a Langfuse export")
            continue
        ordered = TimeOrdered(
            stream, "Langfuse observation that is not a generation (span, tool, ...)"
        )
        position = 0
        for trace, observations, prefix in parts:
            if not isinstance(observations, list):
                where = prefix or "observations"
                ordered.add(line, lambda: _not_a_list(where))  # noqa: B023
                continue
            for index, observation in enumerate(observations):
                position += 1
                at = position if stream.whole_document and prefix is not None else line
                where = f"{prefix}[{index}]" if prefix is not None else ""
                ordered.add(
                    at,
                    lambda: _generation(stream, at, trace, observation, where),  # noqa: B023
                )
        yield from ordered


def _not_a_list(where: str) -> dict[str, Any] | None:
    raise RecordFieldError(where, "expected a list")


def _field(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _generation(
    stream: LogStream, line: int, trace: dict[str, Any], value: Any, where: str
) -> dict[str, Any] | None:
    obs = require_dict(value, where or "<record>")
    if obs.get("type") != "GENERATION":
        return None
    # The v2 observations API names the model providedModelName (ObservationV2).
    key = "model" if obs.get("model") is not None else "providedModelName"
    model = obs.get(key)
    if model is not None and not isinstance(model, str):
        raise RecordFieldError(_field(where, key), f"expected a string, got {model!r}")
    metadata = maybe_json(obs.get("metadata"))
    provider = _provider(metadata if isinstance(metadata, dict) else {})
    provider, model = resolve_provider(provider, model)
    parameters = maybe_json(obs.get("modelParameters"))
    parameters = parameters if isinstance(parameters, dict) else {}
    body, complete = _body(
        maybe_json(obs.get("input")), provider, model, parameters, obs, _field(where, "input")
    )
    if body is None:
        body, complete = unrecorded_prompt(stream.source, line), False
    observed = None
    usage = obs.get("usageDetails")
    if not usage:
        usage = _legacy_usage(obs) or usage
    if usage:
        observed = normalize_usage(
            require_dict(usage, _field(where, "usageDetails")),
            convention="langfuse",
            path=_field(where, "usageDetails"),
        )
    start = obs.get("startTime")
    session = (
        trace.get("sessionId") or obs.get("sessionId") or obs.get("traceId") or trace.get("id")
    )
    return make_record(
        request=body,
        model=model,
        provider=provider,
        timestamp=None if start is None else iso_seconds(start, _field(where, "startTime")),
        request_id=obs.get("id") if isinstance(obs.get("id"), str) else None,
        session=session if isinstance(session, str) else None,
        observed=observed,
        prompt_complete=complete,
    )


LEGACY_USAGE = {"promptTokens": "input", "completionTokens": "output", "totalTokens": "total"}


def _legacy_usage(obs: dict[str, Any]) -> dict[str, Any] | None:
    """Usage in the older spellings: ``usage`` as ``{input, output, total}`` or (the
    SDKs' first ingestion schema) ``{promptTokens, completionTokens, totalTokens}``, else
    the observation's own deprecated ``promptTokens`` / ``completionTokens`` /
    ``totalTokens`` (docs/log-formats.md, "Langfuse"). None of them says anything of cache
    reads, so the input is the whole prompt."""
    usage = obs.get("usage")
    if isinstance(usage, dict):
        found = {k: v for k, v in usage.items() if k in ("input", "output", "total")}
        found |= {LEGACY_USAGE[k]: v for k, v in usage.items() if k in LEGACY_USAGE}
        if found:
            return found
    found = {LEGACY_USAGE[k]: obs[k] for k in LEGACY_USAGE if obs.get(k) is not None}
    return found if "input" in found or "output" in found else None


def _provider(metadata: dict[str, Any]) -> str | None:
    for key in ("ls_provider", "provider"):
        if isinstance(metadata.get(key), str):
            return str(metadata[key])
    attributes = maybe_json(metadata.get("attributes"))
    if isinstance(attributes, dict):
        for key in ("gen_ai.provider.name", "gen_ai.system", "llm.provider", "llm.system"):
            if isinstance(attributes.get(key), str):
                return str(attributes[key])
    return None


def _body(
    recorded: Any,
    provider: str | None,
    model: str | None,
    parameters: dict[str, Any],
    obs: dict[str, Any],
    path: str,
) -> tuple[dict[str, Any] | None, bool]:
    if isinstance(recorded, dict) and isinstance(recorded.get("messages"), list):
        recorded = recorded["messages"]
    if not isinstance(recorded, list) or not recorded:
        return None, False
    if not all(isinstance(m, dict | list | str) for m in recorded):
        return None, False
    definitions = maybe_json(obs.get("toolDefinitions"))
    if isinstance(definitions, dict):
        definitions = list(definitions.values())
    tools = chat_tools(definitions)
    instructions = parameters.get("instructions")
    if is_responses_input(recorded):
        body: dict[str, Any] = {"input": recorded}
        if model is not None:
            body["model"] = model
        if isinstance(instructions, str):
            body["instructions"] = instructions
        if tools:
            body["tools"] = tools
        calls = any(isinstance(i, dict) and i.get("type") == "function_call" for i in recorded)
        return body, tools is not None or not calls
    if not all(isinstance(m, dict | list) for m in recorded):
        return None, False
    if not any(isinstance(m, dict) and ("role" in m or "type" in m or "lc" in m) for m in recorded):
        return None, False
    messages = chat_messages(recorded, path)
    if isinstance(instructions, str):
        messages.insert(0, {"role": "system", "content": instructions})
    complete = tools is not None or not has_tool_calls(messages)
    return body_for(provider, model, messages, tools), complete
