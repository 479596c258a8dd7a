"""The OpenAPI document's schema of an inline log record is true to the reader: every record
the reader takes is schema-valid, and records the reader refuses for their shape or types
are schema-invalid (so schemathesis' generated records exercise the reader for real)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from cachecast.core.errors import LogRecordError
from cachecast.service.app import create_app
from cachecast.service.record_schema import RECORD_SCHEMA
from cachecast.tokenizers import read_records

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
VALIDATOR = jsonschema.Draft202012Validator(RECORD_SCHEMA)

# One record per shape the reader tells apart (render.detect_api), written from each API's
# documented request body.
ACCEPTED: dict[str, dict[str, Any]] = {
    "chat": {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]},
    "anthropic": {
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "system": "be brief",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
    },
    "gemini": {
        "provider": "google",
        "model": "gemini-2.5-flash",
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
    },
    "responses text": {"model": "gpt-4o", "input": "hi"},
    "responses with instructions": {"model": "gpt-4o", "instructions": "be brief", "input": []},
    "prompt": {"model": "gpt-4o", "prompt": "hi there"},
    "tokens": {"model": "gpt-4o", "tokens": [1, 2, 3, 2**32 - 1]},
    "wrapper": {
        "timestamp": "2026-11-02T09:01:33Z",
        "scope": "org-a",
        "request": {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]},
        "response": {"usage": {"prompt_tokens": 8, "completion_tokens": 1}},
    },
    "mooncake": {"timestamp": 12, "input_length": 600, "output_length": 3, "hash_ids": [0, 1]},
}

REFUSED: dict[str, dict[str, Any]] = {
    "no prompt at all": {"model": "gpt-4o"},
    "responses without input": {"model": "gpt-4o", "instructions": "be brief"},
    "a token id past 32 bits": {"model": "gpt-4o", "tokens": [2**32]},
    "a negative token id": {"model": "gpt-4o", "tokens": [-1]},
    "messages not a list": {"model": "gpt-4o", "messages": "hi"},
    "a message without a role": {"model": "gpt-4o", "messages": [{"content": "hi"}]},
    "prompt not text": {"model": "gpt-4o", "prompt": 7},
    "a negative output count": {"model": "gpt-4o", "prompt": "hi", "output_tokens": -1},
    "a wrapper without a prompt": {"request": {"model": "gpt-4o"}},
}


def _read(record: dict[str, Any]) -> tuple[int, list[LogRecordError]]:
    errors: list[LogRecordError] = []
    requests = list(read_records([record], "schema-test", errors=errors))
    return len(requests), errors


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_a_record_the_reader_takes_is_schema_valid(name: str) -> None:
    record = ACCEPTED[name]
    read, errors = _read(record)
    assert (read, errors) == (1, []), errors
    assert list(VALIDATOR.iter_errors(record)) == []


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_record_the_reader_refuses_is_schema_invalid(name: str) -> None:
    record = REFUSED[name]
    read, errors = _read(record)
    assert read == 0 and len(errors) == 1, (read, errors)
    assert not VALIDATOR.is_valid(record)


@pytest.mark.parametrize("log", ["agent-log.jsonl", "faulty-agent-log.jsonl", "block-trace.jsonl"])
def test_every_bundled_example_line_is_schema_valid(log: str) -> None:
    lines = (EXAMPLES / log).read_text(encoding="utf-8").splitlines()
    invalid = [
        number
        for number, line in enumerate(lines, start=1)
        if not VALIDATOR.is_valid(json.loads(line))
    ]
    assert lines and invalid == []


def test_the_document_gives_the_record_schema_to_every_inline_log() -> None:
    document = create_app().openapi()
    bodies = {
        path: operation["requestBody"]["content"]["application/json"]["schema"]
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
        if method == "post"
        and "application/json" in operation.get("requestBody", {}).get("content", {})
    }
    with_records = {path for path, schema in bodies.items() if "records" in json.dumps(schema)}
    assert {"/v1/estimates", "/v1/simulations", "/v1/reconciliations"} <= with_records
    for path in with_records:
        assert '"title": "LogRecord"' in json.dumps(bodies[path]), path
