"""Batch files joined by custom_id: the real OpenAI Batch input and output files in
../shared/data/recordings/openai_batch, and Anthropic Message Batches requests and results
built here from the shapes Anthropic's Message Batches documentation gives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cachecast.logs import LogFileError, pair_batch_files
from tests.conftest import shared_data
from tests.logs.helpers import json_lines, read, write_jsonl


def openai_files() -> tuple[Path, Path]:
    folder = shared_data("recordings/openai_batch")
    return (
        folder / "langbatch_chat_completion_batch.jsonl",
        folder / "langbatch_chat_completion_batch_results.jsonl",
    )


def test_openai_input_joined_with_its_output() -> None:
    requests, results = openai_files()
    outputs = {line["custom_id"]: line for line in json_lines(results)}
    succeeded = {k: v for k, v in outputs.items() if v["response"] is not None}
    inputs = json_lines(requests)
    for first, second in ((requests, results), (results, requests)):  # either order
        result = read(first, results=second)
        assert result.format == "openai-batch"
        assert result.errors == []
        assert [r.request_id for r in result.requests] == [
            i["custom_id"] for i in inputs if i["custom_id"] in succeeded
        ]
        for request in result.requests:
            usage = succeeded[request.request_id]["response"]["body"]["usage"]
            assert request.observed is not None
            assert request.observed.input_tokens == usage["prompt_tokens"]
            assert request.observed.output_tokens == usage["completion_tokens"]
            # Our exact o200k count of the prompt is OpenAI's own.
            assert request.exact and request.input_tokens == usage["prompt_tokens"]
        assert result.skipped == {
            "request failed in the batch (500: json_format with no json in system prompt) "
            "(not billed)": len(outputs) - len(succeeded),
            "request without a result in the results file (not billed)": len(inputs) - len(outputs),
        }


def test_openai_input_alone_and_output_alone() -> None:
    requests, results = openai_files()
    alone = read(requests)
    assert alone.format == "openai-batch"
    assert len(alone.requests) == len(json_lines(requests)) == 8  # PROVENANCE.md
    assert all(r.observed is None and r.provider == "openai" for r in alone.requests)
    usage_only = read(results)
    assert usage_only.format == "openai-batch-output"
    assert [r.request_id for r in usage_only.requests] == ["req-1", "req-2"]
    assert not any(r.prompt_complete for r in usage_only.requests)
    assert [r.observed.input_tokens for r in usage_only.requests if r.observed] == [22, 21]


def test_batch_files_are_paired_among_paths() -> None:
    requests, results = openai_files()
    claude = shared_data("recordings/claude_code/spotter/short.jsonl")
    assert pair_batch_files([results, claude, requests]) == [(claude, None), (requests, results)]


ANTHROPIC_REQUESTS = [
    {
        "custom_id": "first",
        "params": {
            "model": "claude-sonnet-4-5",
            "max_tokens": 1024,
            "system": [
                {
                    "type": "text",
                    "text": "You answer in French.",
                    "cache_control": {"type": "ephemeral"},
                }
            ],
            "messages": [{"role": "user", "content": "Hello, world"}],
        },
    },
    {
        "custom_id": "second",
        "params": {
            "model": "claude-sonnet-4-5",
            "max_tokens": 1024,
            "messages": [{"role": "user", "content": "Hi again, friend"}],
        },
    },
    {
        "custom_id": "third",
        "params": {"model": "claude-sonnet-4-5", "max_tokens": 8, "messages": []},
    },
]
ANTHROPIC_RESULTS = [
    {
        "custom_id": "second",
        "result": {
            "type": "succeeded",
            "message": {
                "id": "msg_2",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5-20250929",
                "content": [{"type": "text", "text": "Hello again!"}],
                "usage": {"input_tokens": 11, "output_tokens": 36},
            },
        },
    },
    {
        "custom_id": "first",
        "result": {
            "type": "succeeded",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5-20250929",
                "content": [{"type": "text", "text": "Bonjour"}],
                "usage": {
                    "input_tokens": 5,
                    "cache_creation_input_tokens": 1_200,
                    "cache_read_input_tokens": 0,
                    "cache_creation": {
                        "ephemeral_5m_input_tokens": 0,
                        "ephemeral_1h_input_tokens": 1_200,
                    },
                    "output_tokens": 3,
                },
            },
        },
    },
    {"custom_id": "third", "result": {"type": "expired"}},
]


@pytest.mark.parametrize("as_document", [False, True])
def test_anthropic_requests_joined_with_results(tmp_path: Path, as_document: bool) -> None:
    requests = tmp_path / "requests.json"
    if as_document:  # the body sent to POST /v1/messages/batches
        requests.write_text(json.dumps({"requests": ANTHROPIC_REQUESTS}, indent=2))
    else:
        write_jsonl(requests, ANTHROPIC_REQUESTS)
    results = write_jsonl(tmp_path / "results.jsonl", ANTHROPIC_RESULTS)
    result = read(requests, results=results)
    assert result.format == "anthropic-batch"
    assert result.errors == []
    first, second = result.requests
    assert (first.request_id, second.request_id) == ("first", "second")
    assert first.observed is not None and second.observed is not None
    # Anthropic: input_tokens excludes cache writes: 5 + 1,200.
    assert first.observed.input_tokens == 1_205
    assert first.observed.cache_write_by_ttl == {"1h": 1_200}
    assert (second.observed.input_tokens, second.observed.output_tokens) == (11, 36)
    assert first.breakpoints  # the request's own cache_control
    assert result.skipped == {"request expired in the batch (not billed)": 1}
    alone = read(results)
    assert alone.format == "anthropic-batch-results"
    assert [r.request_id for r in alone.requests] == ["second", "first"]


def test_malformed_batch_lines(tmp_path: Path) -> None:
    requests = write_jsonl(tmp_path / "requests.jsonl", ANTHROPIC_REQUESTS[:2])
    results = write_jsonl(
        tmp_path / "results.jsonl",
        [
            {"custom_id": "first", "result": {"type": "maybe"}},
            {"custom_id": 7, "result": {"type": "expired"}},
            ANTHROPIC_RESULTS[0],
            {**ANTHROPIC_RESULTS[0]},
        ],
    )
    result = read(requests, results=results)
    assert [str(e) for e in result.errors] == [
        f"{results}:1: result.type: expected succeeded/errored/canceled/expired, got 'maybe'",
        f"{results}:2: custom_id: expected a string, got 7",
        f"{results}:4: custom_id: 'second' already has a result on line 3",
    ]
    assert [r.request_id for r in result.requests] == ["second"]
    unrelated = write_jsonl(tmp_path / "other.jsonl", [{**ANTHROPIC_RESULTS[2], "custom_id": "x"}])
    with pytest.raises(LogFileError, match="shares no custom_id with the requests"):
        read(requests, results=unrelated)
    claude = shared_data("recordings/claude_code/spotter/short.jsonl")
    with pytest.raises(LogFileError, match="results pair with batch requests"):
        read(claude, results=results)
