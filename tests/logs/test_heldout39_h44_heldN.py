"""Observability exports seen in the 2026 pseudo-held-out set h44 (OpenTelemetry, OpenInference
and Langfuse dumps kept as test fixtures by projects that read them), each hand-built on the
documented shape (docs/log-formats.md, "OpenTelemetry", "OTel spans as the SDK writes them",
"Langfuse"). Every expected count is the usage written into the file, worked by hand in the
comments."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cachecast.logs import open_log
from tests.logs.helpers import read, totals


def attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": value}}  # as a number: some writers do
    if isinstance(value, list):
        return {
            "key": key,
            "value": {"arrayValue": {"values": [{"stringValue": v} for v in value]}},
        }
    return {"key": key, "value": {"stringValue": value}}


USER_HI = {"role": "user", "parts": [{"type": "text", "content": "Hi"}]}


def otlp(*spans: dict[str, Any]) -> dict[str, Any]:
    return {
        "resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": list(spans)}]}]
    }


def records(path: Path) -> list[dict[str, Any]]:
    return [r for _, r in open_log(path) if isinstance(r, dict)]


# --- OTLP/JSON: detection, and the prompt kept on the span's event --------------------------


def test_pretty_printed_otlp_whose_attribute_lines_parse_is_one_document(tmp_path: Path) -> None:
    span = {
        "traceId": "t1",
        "spanId": "s1",
        "name": "chat gpt-4o-mini",
        "startTimeUnixNano": "1760000000000000000",
        "attributes": [
            attr("gen_ai.operation.name", "chat"),
            attr("gen_ai.provider.name", "openai"),
            attr("gen_ai.request.model", "gpt-4o-mini"),
            attr("gen_ai.usage.input_tokens", 1_500),
            attr("gen_ai.usage.cache_read.input_tokens", 1_024),
            attr("gen_ai.usage.output_tokens", 30),
        ],
    }
    lines = [json.dumps(a) for a in span["attributes"]]
    text = (
        '{\n  "resourceSpans": [\n    {\n      "scopeSpans": [\n        {\n          "spans": [\n'
        '            {\n              "traceId": "t1",\n              "spanId": "s1",\n'
        '              "name": "chat gpt-4o-mini",\n'
        '              "startTimeUnixNano": "1760000000000000000",\n'
        '              "attributes": [\n' + ",\n".join(lines) + "\n              ]\n"
        "            }\n          ]\n        }\n      ]\n    }\n  ]\n}\n"
    )
    assert all(json.loads(line) for line in lines)  # each attribute line parses on its own
    path = tmp_path / "trace.json"
    path.write_text(text)
    result = read(path)
    assert result.format == "otel"  # not JSON lines of its attribute objects
    assert len(result.requests) == 1
    # input_tokens includes the cached tokens (the conventions): 1500 in, 1024 of them read.
    assert totals(result.requests) == {"input": 1_500, "read": 1_024, "write": 0, "output": 30}


def test_prompt_recorded_on_the_operation_details_event(tmp_path: Path) -> None:
    span = {
        "traceId": "t1",
        "spanId": "s1",
        "name": "chat gpt-4o",
        "startTimeUnixNano": 1760000000000000000,  # a number, not a decimal string
        "attributes": [
            attr("gen_ai.operation.name", "chat"),
            attr("gen_ai.provider.name", "openai"),
            attr("gen_ai.request.model", "gpt-4o"),
            attr("gen_ai.usage.input_tokens", 150),
            attr("gen_ai.usage.output_tokens", 20),
        ],
        "events": [
            {
                "name": "gen_ai.client.inference.operation.details",
                "timeUnixNano": 1760000000100000000,
                "attributes": [
                    # An array of messages, each its own JSON text.
                    attr(
                        "gen_ai.input.messages",
                        [
                            json.dumps(
                                {"role": "user", "parts": [{"type": "text", "content": "Hi"}]}
                            )
                        ],
                    ),
                    attr("gen_ai.system_instructions", "Be brief."),
                ],
            }
        ],
    }
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(otlp(span)))
    result = read(path)
    (request,) = result.requests
    assert request.prompt_complete  # the messages came from the event: no tool calls
    (record,) = records(path)
    assert [m["role"] for m in record["request"]["messages"]] == ["system", "user"]
    assert totals(result.requests) == {"input": 150, "read": 0, "write": 0, "output": 20}


# --- OpenTelemetry spans as the SDK writes them (flat attributes) ---------------------------


def sdk_span(name: str, span_id: str, start: str, attributes: dict[str, Any]) -> dict[str, Any]:
    """``ReadableSpan.to_json()`` of OpenTelemetry Python (what ConsoleSpanExporter prints)."""
    return {
        "name": name,
        "context": {"trace_id": "0xabc", "span_id": span_id, "trace_state": "[]"},
        "kind": "SpanKind.INTERNAL",
        "parent_id": None,
        "start_time": start,
        "end_time": start,
        "status": {"status_code": "OK"},
        "attributes": attributes,
        "events": [],
        "links": [],
        "resource": {"attributes": {"service.name": "app"}, "schema_url": ""},
    }


def test_sdk_span_json_lines_with_openinference_attributes(tmp_path: Path) -> None:
    body = {
        "model": "claude-haiku-4-5",
        "max_tokens": 100,
        "system": "Plan trips.",
        "messages": [{"role": "user", "content": "A hotel in Paris?"}],
    }
    llm = sdk_span(
        "messages.create",
        "0x1",
        "2026-07-19T15:26:44.500000Z",
        {
            "openinference.span.kind": "LLM",
            "llm.provider": "anthropic",
            "llm.model_name": "claude-haiku-4-5-20251001",
            "input.value": json.dumps(body),
            "input.mime_type": "application/json",
            "session.id": "conv-1",
            # OpenInference: prompt counts every input token, cache reads and writes inside.
            "llm.token_count.prompt": 2_100,
            "llm.token_count.prompt_details.cache_read": 1_500,
            "llm.token_count.prompt_details.cache_write": 500,
            "llm.token_count.completion": 60,
        },
    )
    tool = sdk_span("search_hotels", "0x2", "2026-07-19T15:26:46Z", {"tool.name": "search_hotels"})
    path = tmp_path / "spans.jsonl"
    path.write_text(json.dumps(llm) + "\n" + json.dumps(tool) + "\n")
    result = read(path)
    assert result.format == "otel-spans"
    assert result.errors == []
    (request,) = result.requests
    assert request.provider == "anthropic" and request.model == "claude-haiku-4-5-20251001"
    assert request.prompt_complete
    expected = datetime(2026, 7, 19, 15, 26, 44, 500_000, tzinfo=UTC).timestamp()
    assert request.timestamp == expected
    assert totals(result.requests) == {"input": 2_100, "read": 1_500, "write": 500, "output": 60}
    assert sum(result.skipped.values()) == 1  # the tool span
    (record,) = records(path)
    assert record["request"]["system"] == "Plan trips."
    assert record["session"] == "conv-1"


def test_span_dump_with_nested_attributes_in_a_data_list(tmp_path: Path) -> None:
    # A span list as a viewer's API pages it: ids beside the attributes, which nest by dot.
    spans = {
        "data": [
            {
                "trace_id": "t9",
                "span_id": "b",
                "name": "chat",
                "start_time": "2026-01-02T00:00:05Z",
                "attributes": {
                    "gen_ai": {
                        "operation": {"name": "chat"},
                        "provider": {"name": "openai"},
                        "request": {"model": "gpt-4.1-mini"},
                        "usage": {"input_tokens": 4_000, "output_tokens": 90},
                    }
                },
            },
            {
                "trace_id": "t9",
                "span_id": "a",
                "name": "chat",
                "start_time": "2026-01-02T00:00:01Z",
                "attributes": {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "openai",
                    "gen_ai.request.model": "gpt-4.1-mini",
                    "gen_ai.usage.input_tokens": 3_000,
                    "gen_ai.usage.cache_read.input_tokens": 2_048,
                    "gen_ai.usage.output_tokens": 10,
                },
            },
        ]
    }
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(spans, indent=2))  # one document: positions in it
    result = read(path)
    assert result.format == "otel-spans"
    first, second = result.requests
    assert (first.line, second.line) == (2, 1)  # handed on in start-time order
    assert totals(result.requests) == {"input": 7_000, "read": 2_048, "write": 0, "output": 100}


# --- Langfuse API responses --------------------------------------------------------------


def generation(obs_id: str, start: str, **fields: Any) -> dict[str, Any]:
    found: dict[str, Any] = {"id": obs_id, "type": "GENERATION", "startTime": start}
    found.update(fields)
    return found


def test_langfuse_observations_page(tmp_path: Path) -> None:
    # GET /api/public/v2/observations: {data, meta}; the model as providedModelName.
    page = {
        "data": [
            generation(
                "o1",
                "2026-03-01T10:00:00Z",
                traceId="tr1",
                sessionId="sess-1",
                providedModelName="gpt-4o-mini",
                input=[{"role": "user", "content": "Summarize the memo."}],
                # Langfuse's input is the uncached part: 200 + 1024 read = 1224 in all.
                usageDetails={"input": 200, "input_cached_tokens": 1_024, "output": 40},
            ),
            {"id": "o2", "type": "SPAN", "traceId": "tr1", "startTime": "2026-03-01T10:00:01Z"},
        ],
        "meta": {"cursor": None},
    }
    path = tmp_path / "observations.json"
    path.write_text(json.dumps(page))
    result = read(path)
    assert result.format == "langfuse"
    (request,) = result.requests
    assert request.model == "gpt-4o-mini"
    assert totals(result.requests) == {"input": 1_224, "read": 1_024, "write": 0, "output": 40}
    (record,) = records(path)
    assert record["session"] == "sess-1"


def test_langfuse_trace_with_its_observations_and_legacy_usage(tmp_path: Path) -> None:
    # GET /api/public/traces/{id}: the trace's fields beside its observations.
    trace = {
        "id": "trace-7",
        "sessionId": "chat-7",
        "observations": [
            generation(
                "g1",
                "2025-01-15T10:00:00Z",
                model="gpt-4o",
                input={"messages": [{"role": "user", "content": "Hello"}]},
                usage={"promptTokens": 10, "completionTokens": 5},  # the first SDKs' usage
            ),
            generation(
                "g2",
                "2025-01-15T10:00:04Z",
                model="gpt-4o",
                input=[{"role": "user", "content": "Again"}],
                promptTokens=12,  # the deprecated fields of the observation itself
                completionTokens=3,
            ),
            {"id": "s1", "type": "SPAN", "startTime": "2025-01-15T10:00:02Z"},
        ],
    }
    for name, document in (("trace.json", trace), ("traces.json", [trace, trace])):
        path = tmp_path / name
        path.write_text(json.dumps(document, indent=2))  # one document: positions in it
        result = read(path)
        assert result.format == "langfuse"
        copies = 1 if name == "trace.json" else 2
        assert totals(result.requests) == {
            "input": 22 * copies,
            "read": 0,
            "write": 0,
            "output": 8 * copies,
        }
        assert {r["session"] for r in records(path)} == {"chat-7"}
        lines = [r.line for r in result.requests]
        assert len(set(lines)) == len(lines)  # each observation its own position
