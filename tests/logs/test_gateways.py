"""LangSmith runs, Helicone exports and LiteLLM StandardLoggingPayloads: no real sample is
at hand, so each file is built here from the format's published documentation (LangSmith's
Run schema and LangChain's usage_metadata; Helicone's HeliconeRequest of its query API;
LiteLLM's StandardLoggingPayload specification)."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

from cachecast.logs import open_log
from tests.logs.helpers import read, totals, write_jsonl

SYSTEM = "You are a careful assistant. " * 40


def lc(kind: str, content: Any, **kwargs: Any) -> dict[str, Any]:
    """A LangChain message in its serialized (lc=1 constructor) form."""
    return {
        "lc": 1,
        "type": "constructor",
        "id": ["langchain", "schema", "messages", kind],
        "kwargs": {"content": content, **kwargs},
    }


def run(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": "run-1",
        "name": "ChatAnthropic",
        "run_type": "llm",
        "start_time": "2026-01-05T10:00:00.000000",
        "trace_id": "trace-1",
        "inputs": {"messages": [[lc("SystemMessage", SYSTEM), lc("HumanMessage", "Hi")]]},
        "outputs": {},
        "extra": {
            "metadata": {
                "ls_provider": "anthropic",
                "ls_model_name": "claude-sonnet-4-5",
                "thread_id": "th-1",
            },
            "invocation_params": {"model": "claude-sonnet-4-5", "_type": "anthropic-chat"},
        },
    }
    base.update(fields)
    return base


def test_langsmith_runs(tmp_path: Path) -> None:
    usage = {
        "input_tokens": 1_210,  # the sum of every input type
        "output_tokens": 5,
        "total_tokens": 1_215,
        "input_token_details": {
            "cache_read": 1_024,
            "cache_creation": 100,
            "ephemeral_1h_input_tokens": 100,
        },
    }
    message = lc("AIMessage", "Hello", usage_metadata=usage)
    anthropic = run(outputs={"generations": [[{"text": "Hello", "message": message}]]})
    openai = run(
        id="run-2",
        inputs={"messages": [{"role": "user", "content": "Hello"}]},
        outputs={"usage_metadata": {"input_tokens": 9, "output_tokens": 3}},
        extra={"metadata": {"ls_provider": "openai", "ls_model_name": "gpt-4o"}},
    )
    chain = run(id="run-3", run_type="chain")
    totals_only = run(
        id="run-4",
        outputs={},
        prompt_tokens=1_300,
        completion_tokens=7,
        prompt_token_details={"cache_read": 1_200},
    )
    path = write_jsonl(tmp_path / "runs.jsonl", [anthropic, openai, chain, totals_only])
    result = read(path)
    assert result.format == "langsmith"
    assert result.errors == []
    first, second, fourth = result.requests
    assert [r.request_id for r in result.requests] == ["run-1", "run-2", "run-4"]
    assert (first.provider, first.model, first.session) == (
        "anthropic",
        "claude-sonnet-4-5",
        "th-1",
    )
    assert totals([first]) == {"input": 1_210, "read": 1_024, "write": 100, "output": 5}
    assert first.observed is not None and first.observed.cache_write_by_ttl == {"1h": 100}
    assert (second.provider, totals([second])["input"]) == ("openai", 9)
    assert totals([fourth]) == {"input": 1_300, "read": 1_200, "write": 0, "output": 7}
    assert result.skipped == {"LangSmith run that is not an LLM call (chain, tool, ...)": 1}
    records = [r for _, r in open_log(path) if isinstance(r, dict)]
    assert records[0]["request"]["system"] == [{"type": "text", "text": SYSTEM}]
    # A JSON list of runs (the API's answer) reads the same, numbered by position.
    listing = tmp_path / "runs.json"
    listing.write_text(json.dumps([anthropic, openai], indent=2))
    assert [(r.line, r.request_id) for r in read(listing).requests] == [(1, "run-1"), (2, "run-2")]


def test_langsmith_malformed(tmp_path: Path) -> None:
    bad = run(outputs={"usage_metadata": {"input_tokens": -1, "output_tokens": 2}})
    path = write_jsonl(tmp_path / "runs.jsonl", [bad])
    (error,) = read(path).errors
    assert str(error) == (
        f"{path}:1: outputs.usage_metadata.input_tokens: expected a non-negative integer, got -1"
    )


def helicone(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "request_id": "h-1",
        "request_created_at": "2026-01-05T10:00:00.000Z",
        "request_body": {
            "model": "claude-sonnet-4-5",
            "max_tokens": 100,
            "system": SYSTEM,
            "messages": [{"role": "user", "content": "Hi"}],
        },
        "response_body": {
            "id": "msg_1",
            "usage": {
                "input_tokens": 5,
                "cache_read_input_tokens": 1_000,
                "cache_creation_input_tokens": 0,
                "output_tokens": 20,
            },
        },
        "response_status": 200,
        "provider": "ANTHROPIC",
        "model": "claude-sonnet-4-5",
        "target_url": "https://api.anthropic.com/v1/messages",
        "prompt_tokens": 5,
        "completion_tokens": 20,
        "prompt_cache_read_tokens": 1_000,
        "prompt_cache_write_tokens": 0,
        "cost": 0.0003,
        "cache_reference_id": None,
        "request_properties": {"Helicone-Session-Id": "sess-1"},
    }
    base.update(fields)
    return base


def test_helicone_export(tmp_path: Path) -> None:
    openai_body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "Hello"}]}
    columns_only = helicone(
        request_id="h-2",
        request_body=openai_body,
        response_body={"id": "chatcmpl-1"},
        provider="OPENAI",
        model="gpt-4o",
        target_url="https://api.openai.com/v1/chat/completions",
        prompt_tokens=9,
        completion_tokens=4,
        prompt_cache_read_tokens=0,
    )
    undocumented = helicone(
        request_id="h-3", response_body={"id": "msg"}, prompt_cache_read_tokens=900
    )
    from_cache = helicone(
        request_id="h-4", cache_reference_id="2f0e0a52-1a6b-4bd4-8f1c-7a3c8a0b1c2d"
    )
    failed = helicone(request_id="h-5", response_status=500)
    path = write_jsonl(
        tmp_path / "helicone.jsonl", [helicone(), columns_only, undocumented, from_cache, failed]
    )
    result = read(path)
    assert result.format == "helicone"
    assert result.errors == []
    first, second, third = result.requests
    assert (first.provider, first.session) == ("anthropic", "sess-1")
    # The provider's own usage: Anthropic's input_tokens excludes the cache read.
    assert totals([first]) == {"input": 1_005, "read": 1_000, "write": 0, "output": 20}
    assert first.observed is not None and first.observed.cost is None  # Helicone's estimate
    assert (second.provider, totals([second])["input"]) == ("openai", 9)
    # The column written as 0 is an observed read of 0, not a read left unreported.
    assert second.observed is not None and second.observed.cache_read_tokens == 0
    assert third.observed is None
    assert result.skipped == {
        "usage not taken: the response body has none and whether Helicone's prompt_tokens "
        "includes its cache columns is undocumented": 1,
        "served from Helicone's response cache (no provider call)": 1,
        "HTTP 500 response (not billed)": 1,
    }
    broken = write_jsonl(tmp_path / "broken.jsonl", [helicone(request_body="not a body")])
    (error,) = read(broken).errors
    assert (error.line, error.field) == (1, "request_body")


def payload(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": "call-1",
        "trace_id": "trace-1",
        "call_type": "acompletion",
        "status": "success",
        "model": "claude-sonnet-4-5",
        "custom_llm_provider": "anthropic",
        "startTime": 1_767_607_200.5,
        "endTime": 1_767_607_201.5,
        "messages": [
            {
                "role": "system",
                "content": [
                    {"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}
                ],
            },
            {"role": "user", "content": "Hi"},
        ],
        "model_parameters": {},
        "metadata": {
            "usage_object": {
                "prompt_tokens": 1_510,  # LiteLLM counts the cache reads and writes in it
                "completion_tokens": 20,
                "total_tokens": 1_530,
                "cache_read_input_tokens": 1_500,
                "cache_creation_input_tokens": 0,
                "prompt_tokens_details": {"cached_tokens": 1_500},
            }
        },
        "response_cost": 0.001,
        "cache_hit": False,
    }
    base.update(fields)
    return base


def test_litellm_payloads(tmp_path: Path) -> None:
    openrouter = payload(
        id="call-2",
        model="openrouter/anthropic/claude-3.5-sonnet",
        custom_llm_provider="openrouter",
        metadata={"usage_object": {"prompt_tokens": 12, "completion_tokens": 3, "cost": 0.00123}},
    )
    cached = payload(id="call-3", cache_hit=True)
    failed = payload(id="call-4", status="failure")
    path = write_jsonl(tmp_path / "litellm.jsonl", [payload(), openrouter, cached, failed])
    result = read(path)
    assert result.format == "litellm"
    assert result.errors == []
    first, second = result.requests
    assert (first.provider, first.model, first.timestamp) == (
        "anthropic",
        "claude-sonnet-4-5",
        1_767_607_200.5,
    )
    assert totals([first]) == {"input": 1_510, "read": 1_500, "write": 0, "output": 20}
    assert first.breakpoints  # the cache_control LiteLLM passes through
    assert first.observed is not None and first.observed.cost is None  # response_cost: an estimate
    # OpenRouter: the upstream provider from the slug; its reported cost kept exactly.
    assert (second.provider, second.model) == (
        "anthropic",
        "claude-3-5-sonnet",
    )  # Anthropic's own id
    assert second.observed is not None and second.observed.cost == Decimal("0.00123")
    assert result.skipped == {
        "LiteLLM response-cache hit (no provider call)": 1,
        "LiteLLM call that failed (not billed)": 1,
    }
    broken = write_jsonl(tmp_path / "broken.jsonl", [payload(model=7)])
    (error,) = read(broken).errors
    assert str(error) == f"{broken}:1: model: expected a string, got 7"
