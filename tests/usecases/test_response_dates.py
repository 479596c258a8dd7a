"""A recorded ``{request, response}`` pair without a timestamp is priced on the day its
response says it was created (docs/log-formats.md, "Canonical records": ``timestamp``), as a
vcrpy cassette without a ``Date`` header is; a record's own timestamp always wins.

openai:gpt-4o changed price on 2024-10-01 (`cachecast contracts history openai:gpt-4o`:
$5 / $15 per million input / output tokens from 2024-05-13, $2.50 / $10 from 2024-10-01), so
the day chosen shows in the bill. Every request here reports 1,000 input tokens (none
cached) and 100 output tokens:
  before the change: 1000 * 5 / 1e6 + 100 * 15 / 1e6 = 0.005 + 0.0015 = 0.0065
  after it:          1000 * 2.5 / 1e6 + 100 * 10 / 1e6 = 0.0025 + 0.001 = 0.0035
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cachecast.cli import app
from tests.logs.helpers import vcr_cassette, vcr_interaction

BEFORE = Decimal("0.0065")
AFTER = Decimal("0.0035")
NOVEMBER_1_2024 = 1_730_419_200  # 2024-11-01T00:00:00Z: 2024-01-01 (1704067200) + 305 days
SEPTEMBER_10_2024 = 1_726_000_000  # 2024-09-10T20:26:40Z

CHAT_BODY = {"model": "gpt-4o", "messages": [{"role": "user", "content": "Say hello."}]}
CHAT_USAGE = {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100}


def _chat_response(created: int) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": created,
        "model": "gpt-4o-2024-08-06",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Hello."},
                "finish_reason": "stop",
            }
        ],
        "usage": CHAT_USAGE,
    }


def _reconciled(path: Path, db: str) -> dict[str, Any]:
    result = CliRunner().invoke(app, ["reconcile", str(path), "--json", "--database-url", db])
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(result.stdout)
    assert len(report["requests"]) == 1
    row: dict[str, Any] = report["requests"][0]
    return row


def _record_file(tmp_path: Path, record: dict[str, Any]) -> Path:
    path = tmp_path / "pair.jsonl"
    path.write_text(json.dumps(record) + "\n", "utf-8")
    return path


@pytest.mark.parametrize(
    ("record", "timestamp", "bill"),
    [
        # Chat Completions' ``created`` after the price change: the new price.
        (
            {"request": CHAT_BODY, "response": _chat_response(NOVEMBER_1_2024)},
            NOVEMBER_1_2024,
            AFTER,
        ),
        # A batch output line's shape: the response under ``body``.
        (
            {
                "request": CHAT_BODY,
                "response": {"status_code": 200, "body": _chat_response(NOVEMBER_1_2024)},
            },
            NOVEMBER_1_2024,
            AFTER,
        ),
        # The Responses API's ``created_at`` before the change: the old price.
        (
            {
                "request": {"model": "gpt-4o", "input": "Say hello."},
                "response": {
                    "id": "resp_1",
                    "object": "response",
                    "created_at": SEPTEMBER_10_2024,
                    "model": "gpt-4o-2024-08-06",
                    "usage": {"input_tokens": 1000, "output_tokens": 100, "total_tokens": 1100},
                },
            },
            SEPTEMBER_10_2024,
            BEFORE,
        ),
        # The record's own timestamp (2024-06-01, before the change) wins over ``created``.
        (
            {
                "timestamp": "2024-06-01T00:00:00Z",
                "request": CHAT_BODY,
                "response": _chat_response(NOVEMBER_1_2024),
            },
            1_717_200_000,  # 2024-06-01T00:00:00Z: 2024-01-01 + 152 days
            BEFORE,
        ),
        # ``created: 0`` (a scrubbed recording) is no time: the record stays undated and is
        # priced under the version in force today (docs/predictions.md), the 2024-10-01 one.
        (
            {"request": CHAT_BODY, "response": _chat_response(0)},
            0.0,
            AFTER,
        ),
        # The Responses API's ``created_at`` before the change, but as Chat Completions
        # ``created`` too: the same day (Anthropic and Gemini state none).
        (
            {"request": CHAT_BODY, "response": _chat_response(SEPTEMBER_10_2024)},
            SEPTEMBER_10_2024,
            BEFORE,
        ),
    ],
)
def test_undated_pair_is_priced_on_its_response_day(
    migrated_db_url: str, tmp_path: Path, record: dict[str, Any], timestamp: float, bill: Decimal
) -> None:
    row = _reconciled(_record_file(tmp_path, record), migrated_db_url)
    assert row["target"] == "openai:gpt-4o"
    assert row["timestamp"] == timestamp
    assert Decimal(row["observed_cost"]) == bill


def test_vcrpy_cassette_without_date_header_uses_created(
    migrated_db_url: str, tmp_path: Path
) -> None:
    interaction = vcr_interaction(
        "https://api.openai.com/v1/chat/completions", CHAT_BODY, _chat_response(NOVEMBER_1_2024)
    )
    dated = "      Date:\n      - Wed, 01 Apr 2026 10:00:00 GMT\n"
    assert dated in interaction
    cassette = vcr_cassette(tmp_path / "undated.yaml", interaction.replace(dated, ""))
    row = _reconciled(cassette, migrated_db_url)
    assert row["timestamp"] == NOVEMBER_1_2024
    assert Decimal(row["observed_cost"]) == AFTER
