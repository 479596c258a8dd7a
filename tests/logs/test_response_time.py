"""A recorded response dates its request where the recording kept no Date header.

go-vcr and pydantic-ai cassettes drop response headers; the bodies of OpenAI-style chat
completions still carry ``created`` and the Responses API ``created_at`` (epoch seconds, per
the providers' API references), Vertex AI's ``createTime`` (RFC 3339). Expected times are the
values written into the hand-built cassettes, or read off the recording's body.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import shared_data
from tests.logs.helpers import read

CHAT_URL = "https://api.openai.com/v1/chat/completions"
BODY = {"model": "gpt-4o", "messages": [{"role": "user", "content": "Hello there"}]}


def _interaction(response: dict[str, Any], headers: dict[str, list[str]]) -> dict[str, Any]:
    return {
        "request": {"body": json.dumps(BODY), "url": CHAT_URL, "method": "POST"},
        "response": {
            "body": json.dumps(response),
            "headers": {"Content-Type": ["application/json"], **headers},
            "status": "200 OK",
            "code": 200,
        },
    }


def _cassette(tmp_path: Path, interactions: list[dict[str, Any]]) -> Path:
    path = tmp_path / "go.yaml"
    document = {"version": 2, "interactions": interactions}
    path.write_text("---\n" + yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return path


def _chat(**fields: Any) -> dict[str, Any]:
    usage = {"prompt_tokens": 9, "completion_tokens": 1, "total_tokens": 10}
    return {
        "id": "chatcmpl-1",
        "model": "gpt-4o-2024-08-06",
        "choices": [],
        "usage": usage,
        **fields,
    }


def test_created_dates_a_request_without_a_date_header(tmp_path: Path) -> None:
    # 1781082253 s = 2026-06-10T09:04:13Z (20,614 days after 1970-01-01, + 32,653 s).
    path = _cassette(tmp_path, [_interaction(_chat(created=1_781_082_253), {})])
    result = read(path)
    assert result.errors == []
    assert [r.timestamp for r in result.requests] == [1_781_082_253.0]
    assert dt.datetime.fromtimestamp(1_781_082_253, dt.UTC).date() == dt.date(2026, 6, 10)


def test_the_date_header_wins_and_implausible_times_are_not_dates(tmp_path: Path) -> None:
    header = {"Date": ["Wed, 10 Jun 2026 09:05:00 GMT"]}
    interactions = [
        _interaction(_chat(created=1_781_082_253), header),
        _interaction(_chat(created=0), {}),  # a placeholder, not a time
        _interaction(_chat(created=1_781_082_253_000), {}),  # milliseconds: not seconds
        _interaction(_chat(created=True), {}),  # a boolean is no number here
    ]
    result = read(_cassette(tmp_path, interactions))
    stamps = [r.timestamp for r in result.requests]
    # 2026-06-10T09:05:00Z = 1781082253 - 13 + 60 = 1781082300: the header, not the body.
    # The other three carry no time (0, milliseconds, a boolean) and keep the latest time
    # the log has shown, as every undated record does.
    assert stamps == [1_781_082_300.0] * 4


def test_responses_created_at_and_vertex_create_time(tmp_path: Path) -> None:
    responses = {
        "id": "resp_1",
        "object": "response",
        "created_at": 1_746_057_600,  # 2025-05-01T00:00:00Z
        "model": "gpt-4.1",
        "usage": {"input_tokens": 9, "output_tokens": 1, "total_tokens": 10},
    }
    vertex = {
        "candidates": [],
        "createTime": "2025-06-18T10:00:00.123456Z",  # 1750240800.123456
        "modelVersion": "gemini-2.5-flash",
        "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 1},
    }
    vertex_url = (
        "https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/us-central1"
        "/publishers/google/models/gemini-2.5-flash:generateContent"
    )
    first = _interaction(responses, {})
    first["request"] = {
        "body": json.dumps({"model": "gpt-4.1", "input": "Hello there"}),
        "url": "https://api.openai.com/v1/responses",
        "method": "POST",
    }
    second = _interaction(vertex, {})
    second["request"] = {
        "body": json.dumps({"contents": [{"role": "user", "parts": [{"text": "Hello"}]}]}),
        "url": vertex_url,
        "method": "POST",
    }
    result = read(_cassette(tmp_path, [first, second]))
    assert result.errors == []
    assert [r.timestamp for r in result.requests] == [1_746_057_600.0, 1_750_240_800.123456]


def test_the_deepseek_recording_is_dated_by_its_bodies() -> None:
    # pydantic-ai's DeepSeek cassette keeps no headers; its three bodies say created:
    # 1781082253, 1781082255 and 1781082258 (lines 104, 272 and 448 of the file).
    path = shared_data(
        "recordings/vcr_cassettes/pydantic-ai-parsed-body/"
        "test_deepseek_deferred_capability_with_thinking.yaml"
    )
    result = read(path)
    assert [r.timestamp for r in result.requests] == [
        1_781_082_253.0,
        1_781_082_255.0,
        1_781_082_258.0,
    ]
