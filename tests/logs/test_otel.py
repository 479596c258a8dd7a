"""OpenTelemetry GenAI / OpenInference spans as OTLP/JSON: the captured spans in
../shared/data/recordings/otel_genai_spans, and hand-built documents with the deprecated
attribute names (OTel GenAI semantic conventions; OpenLLMetry's gen_ai.prompt.N.*)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cachecast.logs import open_log
from tests.conftest import shared_data
from tests.logs.helpers import read, totals


def spans_with_usage(path: Path) -> list[dict[str, Any]]:
    """The spans of a document whose attributes carry token counts, as plain dicts."""
    document = json.loads(path.read_text(encoding="utf-8"))
    found = []
    for resource in document["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                attributes = {a["key"]: a["value"] for a in span["attributes"]}
                if any(k.startswith(("gen_ai.usage.", "llm.token_count.")) for k in attributes):
                    found.append({"span": span, "attributes": attributes})
    return found


def int_value(value: dict[str, Any]) -> int:
    return int(value["intValue"])  # OTLP/JSON writes 64-bit integers as strings


def test_current_conventions_openllmetry() -> None:
    path = shared_data("recordings/otel_genai_spans/genai-interlingua_openllmetry_in.json")
    (span,) = spans_with_usage(path)
    attributes = span["attributes"]
    result = read(path)
    assert result.format == "otel"
    assert result.errors == []
    (request,) = result.requests
    assert totals(result.requests) == {
        "input": int_value(attributes["gen_ai.usage.input_tokens"]),  # includes cached
        "read": int_value(attributes["gen_ai.usage.cache_read.input_tokens"]),
        "write": 0,
        "output": int_value(attributes["gen_ai.usage.output_tokens"]),
    }
    found = totals(result.requests)
    assert (found["input"], found["read"], found["output"]) == (412, 256, 27)  # PROVENANCE.md
    assert request.model == attributes["gen_ai.request.model"]["stringValue"] == "gpt-4o-mini"
    assert request.provider == "openai"
    assert request.timestamp == int(span["span"]["startTimeUnixNano"]) / 1e9
    assert request.prompt_complete  # messages and tool definitions are both recorded
    assert result.skipped == {"OTel span that is not a model call (workflow, agent, tool, ...)": 1}
    records = [r for _, r in open_log(path) if isinstance(r, dict)]
    messages = records[0]["request"]["messages"]
    assert [m["role"] for m in messages] == ["system", "user"]
    assert records[0]["request"]["tools"][0]["function"]["name"] == "lookup_order"


def test_openinference_reads_the_request_body_it_recorded() -> None:
    path = shared_data("recordings/otel_genai_spans/genai-interlingua_openinference_in.json")
    (span,) = spans_with_usage(path)
    attributes = span["attributes"]
    sent = json.loads(attributes["input.value"]["stringValue"])
    result = read(path)
    (request,) = result.requests
    assert totals(result.requests) == {
        "input": int_value(attributes["llm.token_count.prompt"]),
        "read": int_value(attributes["llm.token_count.prompt_details.cache_read"]),
        "write": 0,
        "output": int_value(attributes["llm.token_count.completion"]),
    }
    records = [r for _, r in open_log(path) if isinstance(r, dict)]
    assert records[0]["request"]["messages"] == sent["messages"]
    assert records[0]["request"]["tools"] == sent["tools"]
    assert request.model == "gpt-4o-mini-2024-07-18"


def attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": value}}


def document(*spans: dict[str, Any]) -> dict[str, Any]:
    return {
        "resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {}, "spans": list(spans)}]}]
    }


def span(name: str, start: int, attributes: dict[str, Any]) -> dict[str, Any]:
    return {
        "traceId": "t1",
        "spanId": name,
        "name": name,
        "startTimeUnixNano": str(start),
        "attributes": [attr(k, v) for k, v in attributes.items()],
    }


def test_deprecated_names_and_agent_spans(tmp_path: Path) -> None:
    # JSON lines of documents (one export per line), OpenLLMetry's older attribute names.
    chat = span(
        "anthropic.chat",
        2_000_000_000,
        {
            "gen_ai.system": "Anthropic",
            "llm.request.type": "chat",
            "gen_ai.request.model": "claude-sonnet-4-5",
            "gen_ai.prompt.0.role": "system",
            "gen_ai.prompt.0.content": "You are terse.",
            "gen_ai.prompt.1.role": "user",
            "gen_ai.prompt.1.content": "Hi",
            "gen_ai.usage.prompt_tokens": 1_300,
            "gen_ai.usage.completion_tokens": 12,
            "gen_ai.usage.cache_read_input_tokens": 1_024,
            "gen_ai.usage.cache_creation_input_tokens": 200,
        },
    )
    # An agent span sums its children's usage: not a model call of its own.
    agent = span(
        "invoke_agent",
        1_000_000_000,
        {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.request.model": "claude-sonnet-4-5",
            "gen_ai.usage.input_tokens": 1_300,
        },
    )
    # Content capture off: usage only.
    bare = span(
        "chat",
        3_000_000_000,
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "gcp.vertex_ai",
            "gen_ai.request.model": "gemini-2.5-flash",
            "gen_ai.usage.input_tokens": 5_000,
            "gen_ai.usage.output_tokens": 40,
        },
    )
    path = tmp_path / "spans.jsonl"
    path.write_text(json.dumps(document(agent, chat)) + "\n" + json.dumps(document(bare)) + "\n")
    result = read(path)
    assert result.format == "otel"
    assert result.errors == []
    first, second = result.requests
    assert (first.line, second.line) == (1, 2)  # JSON lines: the document's line
    assert first.provider == "anthropic" and first.model == "claude-sonnet-4-5"
    assert first.observed is not None
    assert (first.observed.input_tokens, first.observed.cache_read_tokens) == (1_300, 1_024)
    assert (first.observed.cache_write_tokens, first.observed.output_tokens) == (200, 12)
    assert second.provider == "google" and second.model == "gemini-2.5-flash"
    assert not second.prompt_complete and second.input_tokens == 5_000
    records = [r for _, r in open_log(path) if isinstance(r, dict)]
    assert records[0]["request"]["system"] == [{"type": "text", "text": "You are terse."}]
    assert records[0]["request"]["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Hi"}]}
    ]


def test_openinference_flattened_messages(tmp_path: Path) -> None:
    llm = span(
        "ChatCompletion",
        1_000,
        {
            "openinference.span.kind": "LLM",
            "llm.provider": "openai",
            "llm.model_name": "gpt-4o",
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.content": "Where is my order?",
            "llm.input_messages.1.message.role": "assistant",
            "llm.input_messages.1.message.tool_calls.0.tool_call.function.name": "lookup",
            "llm.input_messages.1.message.tool_calls.0.tool_call.function.arguments": "{}",
            "llm.token_count.prompt": 120,
            "llm.token_count.completion": 9,
        },
    )
    chain = span("chain", 500, {"openinference.span.kind": "CHAIN", "llm.token_count.prompt": 1})
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(document(chain, llm), indent=2))
    result = read(path)
    (request,) = result.requests
    assert request.line == 2  # one document: the span's position in it
    assert not request.prompt_complete  # a tool call, but no tool definitions recorded
    records = [r for _, r in open_log(path) if isinstance(r, dict)]
    messages = records[0]["request"]["messages"]
    assert messages[1]["tool_calls"][0]["function"] == {"name": "lookup", "arguments": "{}"}


def test_malformed_spans_name_the_attribute(tmp_path: Path) -> None:
    bad = span("chat", 1, {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"})
    bad["attributes"].append({"key": "gen_ai.usage.input_tokens", "value": {"intValue": "lots"}})
    worse = span("chat", 2, {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"})
    worse["attributes"].append(attr("gen_ai.usage.input_tokens", 10))
    worse["attributes"].append(attr("gen_ai.usage.cache_read.input_tokens", 20))
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document(bad, worse), indent=1))
    result = read(path)
    prefix = "resourceSpans[0].scopeSpans[0].spans"
    assert [str(e) for e in result.errors] == [
        f"{path}:1: {prefix}[0].attributes[gen_ai.usage.input_tokens]: intValue 'lots' is not an "
        "integer",
    ]
    # Reads above the prompt: read, kept as reported, and flagged (never billed from).
    (request,) = result.requests
    assert request.observed is not None
    assert request.observed.contradiction == (
        f"{prefix}[1].attributes: cache read 20 + write 0 exceed the input of 10 tokens"
    )
