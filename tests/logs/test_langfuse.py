"""Langfuse trace exports: the real exports in ../shared/data/recordings/langfuse.

Langfuse documents usage types as free-form keys it sums to the total ("Langfuse summarizes
all usage types that include the string input as input usage types, similarly output"), so
the test sums the keys containing "input" (cached reads among them: ``input`` itself counts
uncached input only) and those containing "output", and checks the recorded total."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cachecast.logs import open_log
from tests.conftest import shared_data
from tests.logs.helpers import read, totals

EXPORTS = [
    "claude-agent-2025-12-22.trace.json",
    "langgraph-js-2025-10-30.trace.json",
    "langgraph-python-2025-08-22.trace.json",
    "openai-agents-2025-09-30.trace.json",
    "pydantic-ai-tools-2025-12-04.trace.json",
]
# PROVENANCE.md: generations per export.
GENERATIONS = {EXPORTS[0]: 4, EXPORTS[1]: 2, EXPORTS[2]: 2, EXPORTS[3]: 2, EXPORTS[4]: 4}


def export(name: str) -> Path:
    return shared_data(f"recordings/langfuse/{name}")


def expected(path: Path) -> tuple[list[dict[str, Any]], dict[str, int]]:
    document = json.loads(path.read_text(encoding="utf-8"))
    generations = [o for o in document["observations"] if o["type"] == "GENERATION"]
    sums = {"input": 0, "read": 0, "write": 0, "output": 0}
    for generation in generations:
        usage = generation["usageDetails"]
        inputs = sum(v for k, v in usage.items() if "input" in k or k.startswith("prompt"))
        outputs = sum(v for k, v in usage.items() if k != "total" and k not in _inputs(usage))
        assert usage["total"] == inputs + outputs  # the types are disjoint
        sums["input"] += inputs
        sums["output"] += outputs
        sums["read"] += sum(v for k, v in usage.items() if "cache_read" in k)
    generations.sort(key=lambda o: o["startTime"])
    return generations, sums


def _inputs(usage: dict[str, int]) -> set[str]:
    return {k for k in usage if "input" in k or k.startswith("prompt")}


@pytest.mark.parametrize("name", EXPORTS)
def test_generations_with_their_usage(name: str) -> None:
    path = export(name)
    generations, sums = expected(path)
    result = read(path)
    assert result.format == "langfuse"
    assert result.errors == []
    assert len(result.requests) == len(generations) == GENERATIONS[name]
    assert [r.request_id for r in result.requests] == [g["id"] for g in generations]
    assert [r.model for r in result.requests] == [g["model"] for g in generations]
    assert totals(result.requests) == sums
    observations = json.loads(path.read_text(encoding="utf-8"))["observations"]
    assert result.skipped == {
        "Langfuse observation that is not a generation (span, tool, ...)": len(observations)
        - len(generations)
    }


def test_reasoning_tokens_are_output() -> None:
    path = export("langgraph-js-2025-10-30.trace.json")
    generations, _ = expected(path)
    result = read(path)
    for request, generation in zip(result.requests, generations, strict=True):
        usage = generation["usageDetails"]
        assert request.observed is not None
        assert request.observed.output_tokens == usage["output"] + usage["output_reasoning"]
    assert any(g["usageDetails"]["output_reasoning"] for g in generations)  # 64


def test_prompts_in_each_integration_shape() -> None:
    # OpenAI Agents (OpenInference): Responses items, instructions in modelParameters.
    path = export("openai-agents-2025-09-30.trace.json")
    records = [r for _, r in open_log(path) if isinstance(r, dict)]
    last = records[-1]["request"]
    assert last["instructions"] == "You are a helpful agent."
    assert [i.get("type", "message") for i in last["input"]] == [
        "message",
        "function_call",
        "function_call_output",
    ]
    # pydantic-ai (OTel GenAI parts messages): system + user + tool calls and results.
    path = export("pydantic-ai-tools-2025-12-04.trace.json")
    records = [r for _, r in open_log(path) if isinstance(r, dict)]
    roles = [m["role"] for m in records[1]["request"]["messages"]]
    assert roles[:3] == ["system", "user", "assistant"] and "tool" in roles
    # Claude Agent SDK: its input is not a message list: kept as an unrecorded prompt.
    path = export("claude-agent-2025-12-22.trace.json")
    result = read(path)
    assert not any(r.prompt_complete for r in result.requests)
    assert all(r.provider == "anthropic" for r in result.requests)


def test_malformed_observations_name_the_field(tmp_path: Path) -> None:
    observation = {
        "id": "g1",
        "traceId": "t1",
        "type": "GENERATION",
        "model": "gpt-4o",
        "startTime": "2026-01-05T10:00:00Z",
        "input": [{"role": "user", "content": "hi"}],
        "usageDetails": {"input": 10, "output": 2, "total": 12},
    }
    ambiguous = {**observation, "id": "g2", "usageDetails": {"input": 10, "output": 2, "total": 99}}
    late = {**observation, "id": "g3", "startTime": "yesterday"}
    path = tmp_path / "export.json"
    content = {"trace": {"id": "t1"}, "observations": [observation, ambiguous, late]}
    path.write_text(json.dumps(content, indent=2))  # one document: line = position in it
    result = read(path)
    assert [r.request_id for r in result.requests] == ["g1"]
    assert sorted(str(e) for e in result.errors) == [
        f"{path}:2: observations[1].usageDetails.total: 99 is neither the sum of the usage types "
        "(12) nor input + output (12): the keys' meaning is ambiguous",
        f"{path}:3: observations[2].startTime: not ISO 8601: 'yesterday'",
    ]
    path.write_text(json.dumps(content) + "\n")  # a JSON line: its line, the path says where
    assert [(e.line, e.field) for e in read(path).errors] == [
        (1, "observations[1].usageDetails.total"),
        (1, "observations[2].startTime"),
    ]
