"""OpenTelemetry GenAI spans as OTLP/JSON (``{"resourceSpans": [{"scopeSpans": [{"spans":
[...]}]}]}``), one document per file (the file exporter, a collector's dump) or per line.

A span is a model call when its ``gen_ai.operation.name`` is chat / text_completion /
generate_content (agent, tool and embedding spans are not, even when they sum usage), when
OpenInference marks it ``openinference.span.kind = LLM``, or, for older instrumentations
that name no operation, when it has a model and token counts. Per span:

* prompt: OpenInference's ``input.value`` when it is the JSON request itself; else the
  current conventions' ``gen_ai.input.messages`` (+ ``gen_ai.system_instructions``,
  ``gen_ai.tool.definitions``); else the deprecated ``gen_ai.prompt.N.role/content/...``
  (+ ``llm.request.functions.N.*``); else OpenInference's ``llm.input_messages.N.message.*``
  (+ ``llm.tools.N.tool.json_schema``). A span without any (content capture off) keeps its
  usage with an unrecorded prompt; one whose messages call tools it has no definitions for
  is ``prompt_complete`` false;
* usage: ``gen_ai.usage.*`` (current names, then deprecated ones) or ``llm.token_count.*``
  (cachecast.logs.usage, "otel" and "openinference");
* provider ``gen_ai.provider.name`` / ``gen_ai.system`` / ``llm.provider`` / ``llm.system``;
  model ``gen_ai.request.model`` / ``gen_ai.response.model`` / ``llm.model_name``;
* the span's start time is the timestamp; its conversation id (``gen_ai.conversation.id``,
  OpenInference ``session.id``) or else its trace id is the session.

Within a document the model-call spans are handed on in start-time order; ``line`` is the
span's position among the document's spans (or the JSON line of its document).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from cachecast.core.errors import RecordFieldError
from cachecast.logs.canonical import epoch_nanos, iso_seconds, make_record, unrecorded_prompt
from cachecast.logs.errors import LogRecordError
from cachecast.logs.messages import (
    body_for,
    chat_messages,
    chat_tools,
    has_tool_calls,
    maybe_json,
)
from cachecast.logs.providers import openai_body_provider, resolve_provider
from cachecast.logs.sanitize import int_text, shown
from cachecast.logs.stream import Item, LogStream, TimeOrdered, documents
from cachecast.logs.types import ObservedUsage
from cachecast.logs.usage import normalize_usage

MODEL_OPERATIONS = frozenset({"chat", "text_completion", "generate_content", "completion"})
# The first OpenLLMetry names (before gen_ai.*), which Prompt Flow and RAAF still write:
# ``llm.usage.prompt_tokens`` / ``completion_tokens`` / ``total_tokens``, OpenAI's names.
LLM_USAGE = "llm.usage."


def fits(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("resourceSpans"), list)


def read(stream: LogStream) -> Iterator[Item]:
    missing = ("resourceSpans", "missing: not an OTLP/JSON traces document")
    for line, document in documents(stream, fits, missing):
        if isinstance(document, LogRecordError):
            yield line, document
            continue
        yield from _document(stream, line, document)


def _document(stream: LogStream, line: int, document: dict[str, Any]) -> Iterator[Item]:
    ordered = TimeOrdered(stream, "OTel span that is not a model call (workflow, agent, tool, ...)")
    position = 0
    for r, resource_spans in enumerate(document["resourceSpans"]):
        scope_spans = None
        if isinstance(resource_spans, dict):
            scope_spans = resource_spans.get(
                "scopeSpans", resource_spans.get("instrumentationLibrarySpans", [])
            )
        if not isinstance(scope_spans, list):
            yield line, stream.error(line, f"resourceSpans[{r}].scopeSpans", "expected a list")
            continue
        for s, scope in enumerate(scope_spans):
            spans = scope.get("spans") if isinstance(scope, dict) else None
            where = f"resourceSpans[{r}].scopeSpans[{s}].spans"
            if not isinstance(spans, list):
                yield line, stream.error(line, where, "expected a list")
                continue
            for k, span in enumerate(spans):
                position += 1
                at = position if stream.whole_document else line
                path = f"{where}[{k}]"
                ordered.add(at, lambda: _span(stream, at, span, path), path)  # noqa: B023
    yield from ordered


def attributes(values: Any, path: str) -> dict[str, Any]:
    """OTLP/JSON ``[{"key", "value": {"stringValue"|"intValue"|...}}]`` as a plain dict."""
    if values is None:
        return {}
    if not isinstance(values, list):
        raise RecordFieldError(path, "expected a list of {key, value}")
    out: dict[str, Any] = {}
    for index, entry in enumerate(values):
        if not isinstance(entry, dict) or not isinstance(entry.get("key"), str):
            raise RecordFieldError(f"{path}[{index}]", "expected {key, value}")
        out[entry["key"]] = any_value(entry.get("value"), f"{path}[{entry['key']}]")
    return out


def any_value(value: Any, path: str) -> Any:
    if not isinstance(value, dict) or not value:
        return None
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        raw = value["intValue"]
        if isinstance(raw, int) and not isinstance(raw, bool):
            return raw
        text = raw.removeprefix("-") if isinstance(raw, str) else ""
        if not text.isdigit() or not text.isascii():
            raise RecordFieldError(path, f"intValue {shown(raw)} is not an integer")
        # OTLP/JSON writes 64-bit integers as decimal strings: more digits are refused here.
        number = int_text(text, path)
        return -number if raw.startswith("-") else number
    if "doubleValue" in value:
        return value["doubleValue"]
    if "boolValue" in value:
        return value["boolValue"]
    if "arrayValue" in value:
        items = (value["arrayValue"] or {}).get("values", [])
        return [any_value(item, path) for item in items]
    if "kvlistValue" in value:
        return attributes((value["kvlistValue"] or {}).get("values", []), path)
    if "bytesValue" in value:
        return value["bytesValue"]
    return None


def is_model_call(attrs: dict[str, Any]) -> bool:
    operation = attrs.get("gen_ai.operation.name")
    if isinstance(operation, str):
        return operation in MODEL_OPERATIONS
    if attrs.get("openinference.span.kind") is not None:
        return attrs.get("openinference.span.kind") == "LLM"
    if attrs.get("llm.request.type") in ("chat", "completion"):
        return True
    if attrs.get("framework") == PROMPTFLOW:
        return attrs.get("span_type") == "LLM"
    has_model = any(
        k in attrs for k in ("gen_ai.request.model", "llm.model_name", "llm.request.model")
    )
    has_usage = any(k.startswith(("gen_ai.usage.", "llm.token_count.", LLM_USAGE)) for k in attrs)
    return has_model and has_usage


def _span(stream: LogStream, line: int, span: Any, where: str) -> dict[str, Any] | None:
    if not isinstance(span, dict):
        raise RecordFieldError(where, "expected a span object")
    attrs = attributes(span.get("attributes"), f"{where}.attributes")
    if not is_model_call(attrs):
        return None
    attrs = with_event_details(attrs, span.get("events"), where, attributes)
    start = span.get("startTimeUnixNano")
    timestamp = None if start is None else epoch_nanos(start, f"{where}.startTimeUnixNano")
    return _record(stream, line, attrs, where, timestamp, span.get("spanId"), span.get("traceId"))


def _record(
    stream: LogStream,
    line: int,
    attrs: dict[str, Any],
    where: str,
    timestamp: float | None,
    span_id: Any,
    trace_id: Any,
) -> dict[str, Any]:
    """The canonical record of a model-call span from its attributes (as a plain dict)."""
    if attrs.get("framework") == PROMPTFLOW:
        return _promptflow_record(stream, line, attrs, where, timestamp, span_id, trace_id)
    provider = _first(attrs, "gen_ai.provider.name", "gen_ai.system", "llm.provider", "llm.system")
    model = _first(
        attrs,
        "gen_ai.request.model",
        "gen_ai.response.model",
        "llm.model_name",
        "llm.request.model",
    )
    provider, model = resolve_provider(provider, model)
    body, complete = _body(attrs, provider, model, f"{where}.attributes")
    if body is None:
        body, complete = unrecorded_prompt(stream.source, line), False
    observed = None
    usage = {k: v for k, v in attrs.items() if k.startswith("gen_ai.usage.")}
    convention = "otel"
    if not usage:
        usage = {k: v for k, v in attrs.items() if k.startswith("llm.token_count.")}
        convention = "openinference"
    if not usage:
        usage = _llm_usage(attrs)
        convention = "openai-chat"
    if usage:
        observed = normalize_usage(usage, convention=convention, path=f"{where}.attributes")
    request_id = _first(attrs, "gen_ai.response.id") or span_id
    session = _first(attrs, "gen_ai.conversation.id", "session.id") or trace_id
    return _span_record(body, model, provider, timestamp, request_id, session, observed, complete)


def _llm_usage(attrs: dict[str, Any]) -> dict[str, Any]:
    """The first OpenLLMetry names of a call's usage (``llm.usage.prompt_tokens`` ...), as
    the OpenAI usage object they copy."""
    return {k.removeprefix(LLM_USAGE): v for k, v in attrs.items() if k.startswith(LLM_USAGE)}


def _span_record(
    body: dict[str, Any],
    model: str | None,
    provider: str | None,
    timestamp: float | None,
    request_id: Any,
    session: Any,
    observed: ObservedUsage | None,
    complete: bool,
) -> dict[str, Any]:
    """A span's canonical record; an id or a session that is no text is left out."""
    return make_record(
        request=body,
        model=model,
        provider=provider,
        timestamp=timestamp,
        request_id=request_id if isinstance(request_id, str) else None,
        session=session if isinstance(session, str) else None,
        observed=observed,
        prompt_complete=complete,
    )


# --- Prompt Flow's spans ---------------------------------------------------------------
#
# Prompt Flow's tracing (microsoft/promptflow, promptflow-tracing; docs/log-formats.md,
# "OpenTelemetry") marks a span ``framework: promptflow`` and its kind ``span_type``; an
# ``LLM`` span is one call of the OpenAI SDK: ``inputs`` is the JSON of the call's keyword
# arguments (the request body: ``messages``, ``model``, ``tools``...), ``output`` the JSON of
# the response it returned (with the provider's own ``usage``), and ``llm.usage.*`` copies
# that usage's counts. No conventional model or provider attribute is written.

PROMPTFLOW = "promptflow"


def _promptflow_record(
    stream: LogStream,
    line: int,
    attrs: dict[str, Any],
    where: str,
    timestamp: float | None,
    span_id: Any,
    trace_id: Any,
) -> dict[str, Any]:
    path = f"{where}.attributes" if where else "attributes"
    sent = maybe_json(attrs.get("inputs"))
    received = maybe_json(attrs.get("output"))
    received = received if isinstance(received, dict) else {}
    body: dict[str, Any] | None = None
    if isinstance(sent, dict) and any(k in sent for k in ("messages", "prompt", "input")):
        body = dict(sent)
    # Azure OpenAI's responses carry content filter results; there the request's ``model``
    # is a deployment's name and the response's the model served (as for recorded calls).
    provider = openai_body_provider(received)
    requested = body.get("model") if body is not None else None
    answered = received.get("model", attrs.get("llm.response.model"))
    model = requested if isinstance(requested, str) else None
    if isinstance(answered, str) and answered and (provider == "azure" or model is None):
        model = answered
    usage = received.get("usage")
    observed = None
    if isinstance(usage, dict) and usage:
        observed = normalize_usage(usage, path=f"{path}[output].usage")
    else:
        counts = _llm_usage(attrs)
        if counts:
            observed = normalize_usage(counts, convention="openai-chat", path=f"{path}[llm.usage]")
    complete = body is not None
    if body is None:
        body = unrecorded_prompt(stream.source, line)
    answer_id = received.get("id")
    request_id = answer_id if isinstance(answer_id, str) else span_id
    return _span_record(body, model, provider, timestamp, request_id, trace_id, observed, complete)


# --- The SDK's own JSON of a span (flat attributes) ------------------------------------
#
# OpenTelemetry Python's ``ReadableSpan.to_json()``, which ``ConsoleSpanExporter`` prints
# and file exporters built on it write one per line: ``{name, context: {trace_id,
# span_id}, kind, parent_id, start_time, end_time, status, attributes: {...}, events,
# links, resource}``, the attributes a plain object, the times ISO 8601. Span dumps of
# Phoenix and of tools built on the SDK keep the same flat attributes (``trace_id`` /
# ``span_id`` beside them, a JSON list, or ``{"spans": [...]}`` / ``{"data": [...]}``).

SPAN_LISTS = ("spans", "data")


def is_sdk_span(value: Any) -> bool:
    if not isinstance(value, dict) or not isinstance(value.get("attributes"), dict):
        return False
    context = value.get("context")
    ids = context if isinstance(context, dict) else value
    return "span_id" in ids and "trace_id" in ids


def _sdk_list(items: list[Any]) -> bool:
    head = items[:8]
    return bool(head) and all(is_sdk_span(v) for v in head)


def sdk_fits(value: Any) -> bool:
    if isinstance(value, dict):
        for key in SPAN_LISTS:
            if isinstance(value.get(key), list):
                return _sdk_list(value[key])
        return is_sdk_span(value) or _enveloped(value)
    return isinstance(value, list) and _sdk_list(value)


def _enveloped(value: dict[str, Any]) -> bool:
    """A span inside an exporter's event envelope: RAAF's file processor (raaf-ai/raaf)
    writes ``{"event": "start" | "end", "timestamp", "span": {span_id, trace_id, attributes,
    start_time, end_time, ...}}``, one a line."""
    return not is_sdk_span(value) and is_sdk_span(value.get("span"))


def read_sdk(stream: LogStream) -> Iterator[Item]:
    missing = ("attributes", "missing: not an OpenTelemetry span with flat attributes")
    for line, document in documents(stream, sdk_fits, missing):
        if isinstance(document, LogRecordError):
            yield line, document
            continue
        prefix, spans = "", document
        if isinstance(document, dict) and _enveloped(document):
            prefix, spans = "span", [document["span"]]
        elif isinstance(document, dict):
            key = next((k for k in SPAN_LISTS if isinstance(document.get(k), list)), None)
            prefix, spans = (key, document[key]) if key else ("", [document])
        ordered = TimeOrdered(
            stream, "OTel span that is not a model call (workflow, agent, tool, ...)"
        )
        for k, span in enumerate(spans):
            if is_unended(span):
                stream.skip(UNENDED)
                continue
            at = k + 1 if stream.whole_document else line
            path = f"{prefix}[{k}]" if prefix or len(spans) > 1 else ""
            if prefix == "span":
                path = prefix
            ordered.add(at, lambda: _sdk_span(stream, at, span, path), path)  # noqa: B023
        yield from ordered


# --- Jaeger's JSON of traces -----------------------------------------------------------
#
# Jaeger's query service answers ``GET /api/traces`` (and its UI downloads search results) as
# ``{"data": [trace, ...], "total", "limit", "offset", "errors"}``; a trace is ``{traceID,
# spans, processes, warnings}``, a span ``{traceID, spanID, operationName, references,
# startTime, duration, tags: [{key, type, value}], logs, processID}`` with times in
# microseconds since the epoch (docs/log-formats.md, "Jaeger"). Spans exported to Jaeger
# over OTLP keep their attributes as tags, so the GenAI conventions read as above.

JAEGER_REPEATED = "Jaeger span repeated in its trace (same spanID)"


def _is_jaeger_trace(value: Any) -> bool:
    return isinstance(value, dict) and "traceID" in value and isinstance(value.get("spans"), list)


def _jaeger_traces(value: Any) -> tuple[str, list[Any]] | None:
    """(field path prefix, traces) of a Jaeger document, None where it is none."""
    if _is_jaeger_trace(value):
        return "", [value]
    if isinstance(value, dict) and isinstance(value.get("data"), list):
        return "data", value["data"]
    if isinstance(value, list):
        return "", value
    return None


def jaeger_fits(value: Any) -> bool:
    found = _jaeger_traces(value)
    if found is None:
        return False
    head = found[1][:8]
    return bool(head) and all(_is_jaeger_trace(trace) for trace in head)


def read_jaeger(stream: LogStream) -> Iterator[Item]:
    missing = ("data", "missing: not Jaeger's JSON of traces ({data: [{traceID, spans}]})")
    for line, document in documents(stream, jaeger_fits, missing):
        if isinstance(document, LogRecordError):
            yield line, document
            continue
        found = _jaeger_traces(document)
        prefix, traces = found if found is not None else ("", [])
        ordered = TimeOrdered(stream, "Jaeger span that is not a model call (workflow, tool, ...)")
        position = 0
        for t, trace in enumerate(traces):
            where = f"{prefix}[{t}]"
            spans = trace.get("spans") if isinstance(trace, dict) else None
            if not isinstance(spans, list):
                position += 1
                at = position if stream.whole_document else line
                yield at, stream.error(at, f"{where}.spans", "expected a list of spans")
                continue
            seen: set[Any] = set()
            for k, span in enumerate(spans):
                position += 1
                at = position if stream.whole_document else line
                key = span.get("spanID") if isinstance(span, dict) else None
                if key is not None and key in seen:
                    # Jaeger returns a span twice where it was reported twice ("duplicate span
                    # IDs" in the trace's warnings): one call, counted once.
                    stream.skip(JAEGER_REPEATED)
                    continue
                seen.add(key)
                path = f"{where}.spans[{k}]"
                ordered.add(at, lambda: _jaeger_span(stream, at, span, path), path)  # noqa: B023
        yield from ordered


def jaeger_tags(values: Any, path: str) -> dict[str, Any]:
    """Jaeger's ``[{key, type, value}]`` tags as a plain object (an ``int64`` written as a
    string of digits is its number)."""
    if values is None:
        return {}
    if not isinstance(values, list):
        raise RecordFieldError(path, "expected a list of {key, type, value} tags")
    out: dict[str, Any] = {}
    for index, tag in enumerate(values):
        if not isinstance(tag, dict) or not isinstance(tag.get("key"), str):
            raise RecordFieldError(f"{path}[{index}]", "expected a {key, type, value} tag")
        value = tag.get("value")
        if tag.get("type") == "int64" and isinstance(value, str):
            value = int_text(value, f"{path}[{index}].value")
        out[tag["key"]] = value
    return out


def _jaeger_span(stream: LogStream, line: int, span: Any, where: str) -> dict[str, Any] | None:
    if not isinstance(span, dict):
        raise RecordFieldError(where, "expected a span object")
    attrs = jaeger_tags(span.get("tags"), f"{where}.tags")
    if not is_model_call(attrs):
        return None
    start = span.get("startTime")
    timestamp: float | None = None
    if isinstance(start, int) and not isinstance(start, bool):
        timestamp = start / 1_000_000  # Jaeger: microseconds since the epoch
    elif start is not None:
        raise RecordFieldError(f"{where}.startTime", "expected microseconds since the epoch")
    return _record(stream, line, attrs, where, timestamp, span.get("spanID"), span.get("traceID"))


UNENDED = "OTel span written before it ended (end_time null): its ended copy carries the usage"


def is_unended(span: Any) -> bool:
    """A span the SDK wrote while it was still open: ``to_json()`` of a live span says
    ``"end_time": null``. A processor that prints spans at their start as well as at their
    end (Microsoft Agent Framework's samples do) writes each span twice; the open copy has
    no usage yet (docs/log-formats.md, "OpenTelemetry")."""
    return isinstance(span, dict) and "end_time" in span and span["end_time"] is None


def flat_attributes(values: Any, path: str) -> dict[str, Any]:
    """Attributes written as a plain object; a nested object's keys are joined to its own
    with dots (``{"llm": {"model_name": ...}}`` is ``llm.model_name``)."""
    if values is None:
        return {}
    if not isinstance(values, dict):
        raise RecordFieldError(path, "expected an object of attributes")
    out: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, dict) and value:
            for inner, found in flat_attributes(value, f"{path}.{key}").items():
                out[f"{key}.{inner}"] = found
        else:
            out[str(key)] = value
    return out


def _sdk_span(stream: LogStream, line: int, span: Any, where: str) -> dict[str, Any] | None:
    if not isinstance(span, dict):
        raise RecordFieldError(where or "<record>", "expected a span object")
    field = (lambda key: f"{where}.{key}") if where else (lambda key: key)
    attrs = flat_attributes(span.get("attributes"), field("attributes"))
    if not is_model_call(attrs):
        return None
    attrs = with_event_details(attrs, span.get("events"), where, flat_attributes)
    start = span.get("start_time")
    timestamp: float | None = None
    if isinstance(start, str):
        timestamp = iso_seconds(start, field("start_time"))
    elif start is not None:
        # The SDK keeps times as integer nanoseconds since the epoch.
        timestamp = epoch_nanos(start, field("start_time"))
    context = span.get("context")
    ids = context if isinstance(context, dict) else span
    return _record(stream, line, attrs, where, timestamp, ids.get("span_id"), ids.get("trace_id"))


DETAILS_EVENT = "gen_ai.client.inference.operation.details"
EVENT_CONTENT = ("gen_ai.input.messages", "gen_ai.system_instructions", "gen_ai.tool.definitions")


def with_event_details(
    attrs: dict[str, Any],
    events: Any,
    where: str,
    read_attributes: Callable[[Any, str], dict[str, Any]],
) -> dict[str, Any]:
    """The span's attributes with the prompt its ``gen_ai.client.inference.operation.details``
    event records: the conventions let an instrumentation put the messages, system
    instructions and tool definitions on that event instead of the span
    (docs/log-formats.md, "OpenTelemetry"). The span's own attributes win."""
    if not isinstance(events, list) or all(key in attrs for key in EVENT_CONTENT):
        return attrs
    merged = dict(attrs)
    for index, event in enumerate(events):
        if not isinstance(event, dict) or event.get("name") != DETAILS_EVENT:
            continue
        at = f"{where}.events[{index}].attributes" if where else f"events[{index}].attributes"
        found = read_attributes(event.get("attributes"), at)
        for key in EVENT_CONTENT:
            if key not in merged and found.get(key) is not None:
                merged[key] = found[key]
    return merged


def _first(attrs: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        value = attrs.get(key)
        if value is not None and value != "":
            return value
    return None


def _body(
    attrs: dict[str, Any], provider: str | None, model: str | None, path: str
) -> tuple[dict[str, Any] | None, bool]:
    """The request body a span records, and whether it is the whole prompt."""
    # OpenInference: input.value is often the request body as the client sent it.
    if attrs.get("input.mime_type") == "application/json":
        sent = maybe_json(attrs.get("input.value"))
        if isinstance(sent, dict) and any(k in sent for k in ("messages", "input", "contents")):
            body = dict(sent)
            if model is not None and "model" not in body:
                body["model"] = model
            return body, True
    messages: list[dict[str, Any]] | None = None
    tools: list[dict[str, Any]] | None = None
    if "gen_ai.input.messages" in attrs:
        recorded = maybe_json(attrs["gen_ai.input.messages"])
        if isinstance(recorded, list):
            # As an event attribute it may be an array of messages, each its own JSON text.
            recorded = [maybe_json(item) for item in recorded]
        if not isinstance(recorded, list):
            raise RecordFieldError(
                f"{path}[gen_ai.input.messages]", "expected a JSON list of messages"
            )
        messages = chat_messages(recorded, f"{path}[gen_ai.input.messages]")
        system = maybe_json(attrs.get("gen_ai.system_instructions"))
        if system is not None:
            parts = system if isinstance(system, list) else [{"type": "text", "content": system}]
            messages.insert(0, chat_messages([{"role": "system", "parts": parts}], path)[0])
        tools = chat_tools(attrs.get("gen_ai.tool.definitions"))
    elif any(k.startswith("gen_ai.prompt.") for k in attrs):
        messages = _indexed_messages(attrs, "gen_ai.prompt.", "", path)
        tools = _indexed_functions(attrs, "llm.request.functions.")
    elif isinstance(maybe_json(attrs.get("llm.request.messages")), list):
        # RAAF (raaf-ai/raaf) keeps the chat messages as one list; its tools by name only
        # (``llm.request.tools``, ``llm.request.tools_count``): definitions not recorded.
        where = f"{path}[llm.request.messages]"
        messages = chat_messages(maybe_json(attrs["llm.request.messages"]), where)
        named = attrs.get("llm.request.tools") or attrs.get("llm.request.tools_count")
        if named:
            return body_for(provider, model, messages, None), False
    elif any(k.startswith("llm.input_messages.") for k in attrs):
        messages = _indexed_messages(attrs, "llm.input_messages.", "message.", path)
        tools = chat_tools(
            [
                maybe_json(v)
                for k, v in sorted(attrs.items())
                if k.startswith("llm.tools.") and k.endswith(".tool.json_schema")
            ]
        )
    if messages is None:
        return None, False
    complete = tools is not None or not has_tool_calls(messages)
    return body_for(provider, model, messages, tools), complete


def _indexed_messages(
    attrs: dict[str, Any], prefix: str, inner: str, path: str
) -> list[dict[str, Any]]:
    """``prefix N . inner field`` attributes (``gen_ai.prompt.0.role``,
    ``llm.input_messages.0.message.content``) as chat messages, in index order."""
    by_index: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        if not key.startswith(prefix):
            continue
        rest = key[len(prefix) :]
        number, _, field = rest.partition(".")
        index = _index(number, key)
        if index is None:
            continue
        if inner and field.startswith(inner):
            field = field[len(inner) :]
        by_index.setdefault(index, {})[field] = value
    messages = []
    for index in sorted(by_index):
        fields = by_index[index]
        message: dict[str, Any] = {"role": fields.get("role", "user")}
        content = fields.get("content")
        if content is None and any(k.startswith("contents.") for k in fields):
            content = "".join(
                str(v)
                for k, v in sorted(fields.items())
                if k.startswith("contents.") and k.endswith("text")
            )
        message["content"] = (
            maybe_json(content) if isinstance(content, str) and content[:1] == "[" else content
        )
        calls = _indexed_calls(fields)
        if calls:
            message["tool_calls"] = calls
        if isinstance(fields.get("tool_call_id"), str):
            message["tool_call_id"] = fields["tool_call_id"]
        messages.append(message)
    return chat_messages(messages, f"{path}[{prefix}*]")


def _indexed_calls(fields: dict[str, Any]) -> list[dict[str, Any]]:
    calls: dict[int, dict[str, Any]] = {}
    for key, value in fields.items():
        if not key.startswith("tool_calls."):
            continue
        number, _, rest = key[len("tool_calls.") :].partition(".")
        index = _index(number, key)
        if index is None:
            continue
        rest = rest.removeprefix("tool_call.")
        entry = calls.setdefault(index, {})
        if rest in ("name", "function.name"):
            entry["name"] = value
        elif rest in ("arguments", "function.arguments"):
            entry["arguments"] = value
        elif rest == "id":
            entry["id"] = value
    return [calls[i] for i in sorted(calls)]


def _indexed_functions(attrs: dict[str, Any], prefix: str) -> list[dict[str, Any]] | None:
    functions: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        if not key.startswith(prefix):
            continue
        number, _, field = key[len(prefix) :].partition(".")
        index = _index(number, key)
        if index is not None:
            functions.setdefault(index, {})[field] = maybe_json(value)
    return chat_tools([functions[i] for i in sorted(functions)]) if functions else None


def _index(number: str, key: str) -> int | None:
    """The ``<N>`` of an indexed attribute (``gen_ai.prompt.<N>.content``); None where the
    part is not a number, a RecordFieldError where it has too many digits to be an index."""
    if not number.isdigit():
        return None
    return int_text(number, f"attributes.{key[:60]}")
