"""The dialect the seventh held-out set (TypeScript / JavaScript projects) showed read wrong:
moscaFetch records (KaibanJS's fetch recorder: a JSON list of ``{url, method, body,
response}``, docs/log-formats.md, "moscaFetch"). Before, such a list was taken for
cachecast's own records: the URL was lost, so a Gemini call (whose model is in its URL) had no
model, a call to a search service was a bad record, and a reply sent back was not seen.
Hand-built here from the recorder's source (``records.push({url, method, body, response})``,
``JSON.stringify(records, null, 2)``); totals are the usage fields written here, added by hand
(the rule in test_stub_dialects.py's docstring).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cachecast.logs.formats import detect_format
from tests.logs.helpers import read, totals
from tests.logs.test_more_dialects import ANTHROPIC_REQUEST, anthropic_response, chat_body

GEMINI_URL = "https://proxy.example.com/llm/google/v1beta/models/gemini-1.5-pro:generateContent"


def chat_reply(prompt: int, cached: int, completion: int, created: int) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{created}",
        "object": "chat.completion",
        "created": created,
        "model": "gpt-4o-2024-08-06",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
        },
    }


def gemini_exchange(prompt: int, output: int) -> dict[str, Any]:
    body = {
        "systemInstruction": {"role": "system", "parts": [{"text": "You are terse."}]},
        "contents": [{"role": "user", "parts": [{"text": "Hi"}]}],
    }
    reply = {
        "candidates": [{"content": {"parts": [{"text": "Hi"}], "role": "model"}}],
        "usageMetadata": {
            "promptTokenCount": prompt,
            "candidatesTokenCount": output,
            "totalTokenCount": prompt + output,
        },
        "modelVersion": "gemini-1.5-pro-002",
    }
    return {"url": GEMINI_URL, "method": "POST", "body": body, "response": reply}


def write_records(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps(records, indent=2) + "\n", encoding="utf-8")  # as the recorder
    return path


def test_moscafetch_records_are_read_with_their_urls(tmp_path: Path) -> None:
    search = {
        "url": "https://api.tavily.com/search",
        "method": "POST",
        "body": {"query": "q"},
        "response": {"query": "q", "results": []},
    }
    path = write_records(
        tmp_path / "team.requests.json",
        [
            {
                "url": "https://api.openai.com/v1/chat/completions",
                "method": "POST",
                "body": chat_body("Hi"),
                "response": chat_reply(1_300, 1_280, 9, 1_747_845_091),
            },
            search,
            gemini_exchange(772, 255),
            {
                "url": "https://api.anthropic.com/v1/messages",
                "method": "POST",
                "body": ANTHROPIC_REQUEST,
                "response": anthropic_response(10, 2_000, 0, 7),
            },
        ],
    )
    result = read(path)
    assert result.format == "moscafetch"
    assert not result.errors
    assert [r.line for r in result.requests] == [1, 3, 4]
    assert [r.provider for r in result.requests] == ["openai", "google", "anthropic"]
    # the Gemini call names its model in its URL only
    assert result.requests[1].logged_model == "gemini-1.5-pro"
    assert sum(result.skipped.values()) == 1  # the search call
    # input: 1,300 + 772 + (10 + 2,000 + 0); read: 1,280; write: 2,000; output 9 + 255 + 7
    assert totals(result.requests) == {
        "input": 4_082,
        "read": 1_280,
        "write": 2_000,
        "output": 271,
    }


def test_a_call_without_a_body_is_read_as_none(tmp_path: Path) -> None:
    # moscaFetch leaves ``body`` out where fetch sent none (JSON.stringify drops undefined)
    path = write_records(
        tmp_path / "get.requests.json",
        [
            {"url": "https://api.openai.com/v1/models", "method": "GET", "response": {"data": []}},
            {
                "url": "https://api.openai.com/v1/chat/completions",
                "method": "POST",
                "body": chat_body("Hi"),
                "response": chat_reply(20, 0, 3, 1_747_845_091),
            },
        ],
    )
    result = read(path)
    assert result.format == "moscafetch"
    assert not result.errors
    assert totals(result.requests) == {"input": 20, "read": 0, "write": 0, "output": 3}


def test_a_bad_url_is_named_with_its_record(tmp_path: Path) -> None:
    good = {
        "url": "https://api.openai.com/v1/chat/completions",
        "method": "POST",
        "body": chat_body("Hi"),
        "response": chat_reply(20, 0, 3, 1_747_845_091),
    }
    path = write_records(tmp_path / "bad.requests.json", [good, {**good, "url": 7}])
    result = read(path)
    assert result.format == "moscafetch"
    assert len(result.requests) == 1
    (error,) = result.errors
    assert error.line == 2
    assert "[1].url" in error.field
    assert "expected a string" in error.reason


@pytest.mark.parametrize(
    "extra",
    [{"status": 200}, {"request": {"method": "POST"}}, {"timestamp": 1}],
)
def test_records_with_other_keys_are_not_moscafetch(tmp_path: Path, extra: dict[str, Any]) -> None:
    record = {
        "url": "https://api.openai.com/v1/chat/completions",
        "method": "POST",
        "body": chat_body("Hi"),
        "response": chat_reply(20, 0, 3, 1_747_845_091),
        **extra,
    }
    path = write_records(tmp_path / "other.json", [record])
    fmt, _ = detect_format(path)
    assert fmt.name != "moscafetch"
