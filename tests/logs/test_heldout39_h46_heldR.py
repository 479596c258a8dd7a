"""Trace dumps seen in the 2026 pseudo-held-out set h46r (spans that real tools printed while
real calls ran), each hand-built on the documented shape (docs/log-formats.md, "Detection",
"OpenTelemetry"): OpenTelemetry Python's ConsoleSpanExporter output (pretty-printed spans one
after another, not JSON lines), spans printed at their start as well as at their end, and
Prompt Flow's LLM spans. Every expected count is the usage written into the file, worked by
hand in the comments."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from cachecast.logs import open_log
from cachecast.logs.errors import LogFileError
from cachecast.logs.otel import UNENDED
from tests.logs.helpers import read, totals
from tests.logs.test_heldout39_h44_heldN import sdk_span as printed_span


def sdk_span(
    name: str,
    span_id: str,
    start: str,
    attributes: dict[str, Any],
    end: str | None = "2026-03-01T20:47:19.500000Z",
) -> dict[str, Any]:
    """``ReadableSpan.to_json()`` of OpenTelemetry Python (the layout of
    ``test_heldout39_h44_heldN.sdk_span``) with its own end: ``end_time`` is null while the
    span is open, and its status stays UNSET."""
    span = printed_span(name, span_id, start, attributes)
    return {**span, "end_time": end, "status": {"status_code": "UNSET"}}


def console_dump(spans: list[dict[str, Any]], between: str = "") -> str:
    """What ConsoleSpanExporter writes: each span's ``to_json()`` (``json.dumps(indent=4)``)
    followed by a newline; ``between`` is what else a program printed between them."""
    return "".join(json.dumps(span, indent=4) + "\n" + between for span in spans)


CHAT = {
    "gen_ai.operation.name": "chat",
    "gen_ai.provider.name": "openai",
    "gen_ai.request.model": "gpt-4o-mini",
    "gen_ai.input.messages": json.dumps(
        [{"role": "user", "parts": [{"type": "text", "content": "Weather in Oslo?"}]}]
    ),
}


# --- ConsoleSpanExporter: spans printed one after another -----------------------------------


def test_console_exporter_output_is_read_span_by_span(tmp_path: Path) -> None:
    chat = sdk_span(
        "chat gpt-4o-mini",
        "0x1",
        "2026-03-01T20:47:18.500000Z",
        {
            **CHAT,
            # The conventions: input_tokens counts every input token, cache reads inside.
            "gen_ai.usage.input_tokens": 2_000,
            "gen_ai.usage.cache_read.input_tokens": 1_280,
            "gen_ai.usage.output_tokens": 40,
        },
    )
    tool = sdk_span(
        "execute_tool get_weather",
        "0x2",
        "2026-03-01T20:47:19.600000Z",
        {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather"},
    )
    path = tmp_path / "traces.jsonl"  # named .jsonl, written by the console exporter
    path.write_text(console_dump([chat, tool]))
    result = read(path)
    assert result.format == "otel-spans"
    assert result.errors == []
    (request,) = result.requests
    assert request.provider == "openai" and request.model == "gpt-4o-mini"
    assert request.line == 1  # the first span of the dump
    expected = datetime(2026, 3, 1, 20, 47, 18, 500_000, tzinfo=UTC).timestamp()
    assert request.timestamp == expected
    assert totals(result.requests) == {"input": 2_000, "read": 1_280, "write": 0, "output": 40}
    assert sum(result.skipped.values()) == 1  # the tool span


def test_console_exporter_output_with_blank_lines_between_spans(tmp_path: Path) -> None:
    first = sdk_span(
        "chat gpt-4o-mini",
        "0x1",
        "2026-03-01T20:47:18.500000Z",
        {**CHAT, "gen_ai.usage.input_tokens": 145, "gen_ai.usage.output_tokens": 51},
    )
    second = sdk_span(
        "chat gpt-4o-mini",
        "0x3",
        "2026-03-01T20:47:19.600000Z",
        {**CHAT, "gen_ai.usage.input_tokens": 201, "gen_ai.usage.output_tokens": 31},
    )
    path = tmp_path / "spans.txt"
    path.write_text(console_dump([first, second], between="\n"))
    result = read(path)
    assert result.format == "otel-spans"
    # 145 + 201 in, 51 + 31 out; nothing cached.
    assert totals(result.requests) == {"input": 346, "read": 0, "write": 0, "output": 82}
    assert [r.line for r in result.requests] == [1, 2]


def test_a_truncated_dump_is_still_refused_naming_the_json_error(tmp_path: Path) -> None:
    chat = sdk_span("chat", "0x1", "2026-03-01T20:47:18Z", {**CHAT})
    text = console_dump([chat, chat])
    path = tmp_path / "cut.json"
    path.write_text(text[: len(text) - 40])  # the second span cut short
    with pytest.raises(LogFileError) as caught:
        list(open_log(path))
    assert "JSON" in str(caught.value)


def test_one_pretty_printed_document_is_not_split(tmp_path: Path) -> None:
    # Printed with indent 0, a document's inner objects open at column 0 too: a file that
    # parses as one document is that document, never split (an OTel span list under "data").
    chat = sdk_span(
        "chat gpt-4o-mini",
        "0x1",
        "2026-03-01T20:47:18.500000Z",
        {**CHAT, "gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 2},
    )
    path = tmp_path / "dump.json"
    path.write_text(json.dumps({"data": [chat]}, indent=0))
    result = read(path)
    assert result.format == "otel-spans"
    assert totals(result.requests) == {"input": 10, "read": 0, "write": 0, "output": 2}


# --- A span printed while open, then again when it ended ------------------------------------


def test_a_span_printed_at_its_start_and_at_its_end_is_one_call(tmp_path: Path) -> None:
    opened = sdk_span("chat gpt-4o-mini", "0x1", "2026-03-01T20:47:18.500000Z", CHAT, end=None)
    ended = sdk_span(
        "chat gpt-4o-mini",
        "0x1",
        "2026-03-01T20:47:18.500000Z",
        {**CHAT, "gen_ai.usage.input_tokens": 145, "gen_ai.usage.output_tokens": 51},
    )
    path = tmp_path / "traces.jsonl"
    path.write_text(console_dump([opened, ended], between="\n"))
    result = read(path)
    (request,) = result.requests  # the open copy (no usage yet) is no second call
    assert request.line == 2
    assert totals(result.requests) == {"input": 145, "read": 0, "write": 0, "output": 51}
    assert result.skipped == {UNENDED: 1}


# --- Prompt Flow: the LLM span's inputs are the request, its output the response ------------


def promptflow_llm(inputs: dict[str, Any], output: Any, usage: dict[str, int]) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "framework": "promptflow",
        "span_type": "LLM",
        "function": "openai.resources.chat.completions.Completions.create",
        "inputs": json.dumps(inputs, indent=2),
        "output": output if isinstance(output, str) else json.dumps(output, indent=2),
    }
    attributes.update({f"llm.usage.{k}": v for k, v in usage.items()})
    return sdk_span("openai_chat", "0x7", "2024-04-30T20:40:30.790768Z", attributes)


SYSTEM = {"role": "system", "content": "You answer questions about sales data."}
ASK = {"role": "user", "content": "Best month?"}
TOOLS = [{"type": "function", "function": {"name": "sales", "parameters": {"type": "object"}}}]


def test_promptflow_llm_span_uses_the_recorded_response_usage(tmp_path: Path) -> None:
    inputs = {"messages": [SYSTEM, ASK], "model": "gpt-4o-mini", "tools": TOOLS}
    output = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "March."}}],
        # OpenAI: prompt_tokens counts every input token, the cached ones inside.
        "usage": {
            "prompt_tokens": 2_048,
            "completion_tokens": 20,
            "total_tokens": 2_068,
            "prompt_tokens_details": {"cached_tokens": 1_024},
        },
    }
    llm = promptflow_llm(inputs, output, {"prompt_tokens": 2_048, "completion_tokens": 20})
    wrapper = sdk_span(
        "call_llm",
        "0x8",
        "2024-04-30T20:40:30.790000Z",
        {
            "framework": "promptflow",
            "span_type": "Function",
            "function": "call_llm",
            "__computed__.cumulative_token_count.prompt": 2_048,
        },
    )
    path = tmp_path / "spans.json"
    path.write_text(console_dump([llm, wrapper]))
    result = read(path)
    assert result.format == "otel-spans"
    assert result.errors == []
    (request,) = result.requests  # the function span summing its children is no call
    assert request.provider == "openai" and request.model == "gpt-4o-mini"
    assert request.prompt_complete
    assert totals(result.requests) == {"input": 2_048, "read": 1_024, "write": 0, "output": 20}
    (record,) = [r for _, r in open_log(path) if isinstance(r, dict)]
    assert record["request"]["messages"] == [SYSTEM, ASK]
    assert record["request"]["tools"] == TOOLS
    assert record["request_id"] == "chatcmpl-1"


def test_promptflow_azure_call_is_priced_as_the_model_served(tmp_path: Path) -> None:
    inputs = {"messages": [SYSTEM, ASK], "model": "my-gpt4o-deployment"}
    output = {
        "id": "chatcmpl-2",
        "model": "gpt-4o-2024-08-06",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "March."},
                "content_filter_results": {"hate": {"filtered": False, "severity": "safe"}},
            }
        ],
        "usage": {"prompt_tokens": 450, "completion_tokens": 17, "total_tokens": 467},
        "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": {}}],
    }
    path = tmp_path / "spans.json"
    path.write_text(console_dump([promptflow_llm(inputs, output, {})] * 2))
    result = read(path)
    first = result.requests[0]
    # Azure's content filter results name the provider; the deployment name is no model.
    assert first.provider == "azure" and first.model == "gpt-4o-2024-08-06"
    assert totals(result.requests) == {"input": 900, "read": 0, "write": 0, "output": 34}


def test_promptflow_stream_keeps_the_span_usage_counts(tmp_path: Path) -> None:
    # A streamed call's output is the generator's repr, not a response: the span's own
    # llm.usage counts (OpenAI's names) are the usage.
    inputs = {"messages": [ASK], "model": "gpt-4o-mini", "stream": True}
    output = "<generator object Stream.__iter__ at 0x10>"
    llm = promptflow_llm(inputs, output, {"prompt_tokens": 12, "completion_tokens": 3})
    path = tmp_path / "spans.json"
    path.write_text(console_dump([llm, llm]))
    result = read(path)
    assert totals(result.requests) == {"input": 24, "read": 0, "write": 0, "output": 6}


# --- Jaeger: the query API's JSON of traces --------------------------------------------------


def tag(key: str, value: Any, kind: str | None = None) -> dict[str, Any]:
    kind = kind or ("int64" if isinstance(value, int) else "string")
    return {"key": key, "type": kind, "value": value}


def jaeger_span(span_id: str, start_us: int, tags: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "traceID": "4bf92f3577b34da6a3ce929d0e0e4736",
        "spanID": span_id,
        "operationName": "chat claude-sonnet-4-5",
        "references": [],
        "startTime": start_us,
        "duration": 812_000,
        "tags": tags,
        "logs": [],
        "processID": "p1",
        "warnings": None,
    }


def test_jaeger_traces_with_genai_tags(tmp_path: Path) -> None:
    chat_tags = [
        tag("gen_ai.operation.name", "chat"),
        tag("gen_ai.provider.name", "anthropic"),
        tag("gen_ai.request.model", "claude-sonnet-4-5"),
        # The conventions: input_tokens counts every input token, cache reads and writes in it.
        tag("gen_ai.usage.input_tokens", 5_200),
        tag("gen_ai.usage.cache_read.input_tokens", 4_096),
        tag("gen_ai.usage.cache_creation.input_tokens", 1_000),
        tag("gen_ai.usage.output_tokens", 75),
        tag("span.kind", "client"),
    ]
    second = [t for t in chat_tags if not t["key"].startswith("gen_ai.usage.")] + [
        tag("gen_ai.usage.input_tokens", "5300", "int64"),  # an int64 written as a string of digits
        tag("gen_ai.usage.cache_read.input_tokens", 5_096),
        tag("gen_ai.usage.output_tokens", 20),
    ]
    chat = jaeger_span("a1", 1_782_706_642_676_687, chat_tags)
    embed = jaeger_span("a2", 1_782_706_642_000_000, [tag("text.length", 91)])
    later = jaeger_span("a3", 1_782_706_650_000_000, second)
    trace = {
        "traceID": "4bf92f3577b34da6a3ce929d0e0e4736",
        "spans": [chat, embed, dict(chat), later],  # the first call reported twice
        "processes": {"p1": {"serviceName": "api", "tags": []}},
        "warnings": ["duplicate span IDs; skipping clock skew adjustment"],
    }
    path = tmp_path / "traces.json"
    document = {"data": [trace], "total": 0, "limit": 0, "offset": 0, "errors": None}
    path.write_text(json.dumps(document, indent=2))  # one document: spans by position
    result = read(path)
    assert result.format == "jaeger"
    assert result.errors == []
    first, after = result.requests
    assert first.provider == "anthropic" and first.model == "claude-sonnet-4-5"
    assert first.timestamp == 1_782_706_642.676687  # microseconds since the epoch
    # 5200 + 5300 in (reads and writes inside), 4096 + 5096 read, 1000 written, 75 + 20 out.
    assert totals(result.requests) == {"input": 10_500, "read": 9_192, "write": 1_000, "output": 95}
    assert after.line == 4  # the fourth span of the document
    assert result.skipped == {
        "Jaeger span repeated in its trace (same spanID)": 1,
        "Jaeger span that is not a model call (workflow, tool, ...)": 1,
    }


def test_jaeger_tags_that_are_not_a_list_name_the_field(tmp_path: Path) -> None:
    chat = jaeger_span("a1", 1, [tag("gen_ai.operation.name", "chat")])
    chat["tags"] = {"gen_ai.operation.name": "chat"}
    path = tmp_path / "traces.json"
    path.write_text(json.dumps({"data": [{"traceID": "t", "spans": [chat], "processes": {}}]}))
    result = read(path)
    (error,) = result.errors
    assert error.field == "data[0].spans[0].tags"


# --- RAAF: spans in an event envelope, the first OpenLLMetry names ---------------------------


def raaf_line(event: str, span: dict[str, Any]) -> str:
    """A line of RAAF's trace file: ``{event, timestamp, span}``."""
    return json.dumps({"event": event, "timestamp": span["start_time"], "span": span}) + "\n"


def raaf_span(attributes: dict[str, Any], end: str | None) -> dict[str, Any]:
    return {
        "span_id": "span_88",
        "trace_id": "trace_56",
        "parent_id": "span_c0",
        "name": "llm.completion",
        "kind": "llm",
        "start_time": "2025-06-23T19:05:33Z",
        "end_time": end,
        "duration_ms": None if end is None else 1645.7,
        "attributes": attributes,
        "events": [],
        "status": "ok",
    }


def test_raaf_span_events_with_the_first_openllmetry_names(tmp_path: Path) -> None:
    messages = [
        {"role": "system", "content": "You are a math assistant."},
        {"role": "user", "content": "What is 25 * 37 + 142?"},
    ]
    started = {"llm.model": "gpt-4", "llm.request.messages": messages}
    ended = {
        **started,
        "llm.request.model": "gpt-4",
        "llm.request.tools_count": 1,
        # OpenAI's names: prompt_tokens counts the whole prompt.
        "llm.usage.prompt_tokens": 90,
        "llm.usage.completion_tokens": 21,
        "llm.usage.total_tokens": 111,
    }
    path = tmp_path / "traces.jsonl"
    path.write_text(
        raaf_line("start", raaf_span(started, None))
        + raaf_line("end", raaf_span(ended, "2025-06-23T19:05:34Z"))
    )
    result = read(path)
    assert result.format == "otel-spans"
    assert result.errors == []
    (request,) = result.requests
    assert request.line == 2
    assert request.provider == "openai" and request.model == "gpt-4"
    # A calculator tool was sent (tools_count 1) but only its name is kept: not the whole prompt.
    assert not request.prompt_complete
    assert totals(result.requests) == {"input": 90, "read": 0, "write": 0, "output": 21}
    assert result.skipped == {UNENDED: 1}


def test_a_span_with_only_the_first_openllmetry_names_is_a_call(tmp_path: Path) -> None:
    span = sdk_span(
        "openai.chat",
        "0x9",
        "2024-02-01T10:00:00Z",
        {
            "llm.request.model": "gpt-3.5-turbo",
            "llm.usage.prompt_tokens": 1_200,
            "llm.usage.completion_tokens": 30,
        },
    )
    path = tmp_path / "spans.jsonl"
    path.write_text(json.dumps(span) + "\n")
    result = read(path)
    assert totals(result.requests) == {"input": 1_200, "read": 0, "write": 0, "output": 30}
