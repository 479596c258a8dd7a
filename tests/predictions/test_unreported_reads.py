"""A cache read the usage does not report is "not reported", never 0 (docs/log-formats.md,
"Absent cache reads"; docs/predictions.md, "Reads not reported").

Hand-built logs of two requests sharing a prefix of well over 1,024 tokens, so that the
second is predicted to read from the first's cache: a chat completion stripped of
``prompt_tokens_details`` is not judged on the read we predict (the first, predicted to read
nothing, is: an absent counter agrees with none) and billed as all uncached input; the same
with ``cached_tokens: 0`` is judged (a miss); a Gemini response without
``cachedContentTokenCount`` reads 0 (protobuf's JSON omits a count of 0) and is judged."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from cachecast.cli import app
from cachecast.contracts import ContractStore
from cachecast.logs.usage import normalize_usage
from cachecast.logs.xai_grpc import _usage as xai_grpc_usage
from cachecast.passes.log_input import LogInput
from cachecast.usecases.reconcile import (
    BEST_EFFORT_MISS,
    READ_NOT_REPORTED,
    ReconcileReport,
    ReconcileRequest,
    reconcile,
)

SYSTEM = "The quick brown fox jumps over the lazy dog. " * 200  # ~2,000 tokens
PROMPT = 1_820  # the prompt length each usage reports
AT = dt.date(2025, 9, 4)


def _chat_log(tmp_path: Path, details: dict[str, Any] | None) -> Path:
    records = []
    for index in range(2):
        usage: dict[str, Any] = {"prompt_tokens": PROMPT, "completion_tokens": 5}
        if details is not None:
            usage["prompt_tokens_details"] = details
        records.append(
            {
                "timestamp": 1_757_000_000 + 10 * index,
                "provider": "openai",
                "model": "gpt-4o-mini",
                "request_id": f"r{index}",
                "request": {
                    "model": "gpt-4o-mini",
                    "messages": [
                        {"role": "system", "content": SYSTEM},
                        {"role": "user", "content": f"question {index}"},
                    ],
                },
                "response": {"usage": usage},
            }
        )
    path = tmp_path / "chat.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def _run(path: Path, store: ContractStore) -> ReconcileReport:
    return reconcile(ReconcileRequest(log=LogInput.of_paths([path]), at=AT), store)


def _by_line(report: ReconcileReport) -> list[Any]:
    return sorted(report.requests, key=lambda row: row.line)


def test_a_chat_completion_without_prompt_tokens_details_is_not_judged_on_reads(
    tmp_path: Path, store: ContractStore
) -> None:
    report = _run(_chat_log(tmp_path, None), store)
    first, second = _by_line(report)
    assert second.predicted_cache_read_tokens > 0  # the shared prefix, cached by the first
    # The second: a predicted read the log cannot confirm or refute.
    assert second.observed_cache_read_tokens is None
    assert second.classification == READ_NOT_REPORTED
    assert not second.exact_match
    assert not second.within_tolerance
    assert "not judged on reads" in second.explanation
    # The first: nothing predicted to be read (an empty cache), and an absent counter agrees
    # with none (providers leave zero counters out): judged, read 0.
    assert first.predicted_cache_read_tokens == 0
    assert first.observed_cache_read_tokens == 0
    assert first.within_tolerance
    for row in (first, second):
        # gpt-4o-mini: $0.15 input, $0.60 output per MTok (OpenAI's pricing page); the whole
        # reported prompt is billed as uncached input: 1,820 x 0.15 + 5 x 0.60 = 276 micro-$.
        assert row.observed_cost == Decimal("0.000276")
    summary = report.summary
    assert summary.requests == 2
    assert summary.reads_not_reported == 1
    assert summary.within_tolerance == 1
    # The second's read is in neither sum; the first's predicted and observed reads are 0.
    assert summary.predicted_cache_read_tokens == 0
    assert summary.observed_cache_read_tokens == 0
    assert summary.classes.get(READ_NOT_REPORTED) == 1
    assert summary.observed_cost == Decimal("0.000552")


def test_a_chat_completion_with_cached_tokens_0_is_judged_a_miss(
    tmp_path: Path, store: ContractStore
) -> None:
    report = _run(_chat_log(tmp_path, {"cached_tokens": 0}), store)
    first, second = _by_line(report)
    assert (first.observed_cache_read_tokens, second.observed_cache_read_tokens) == (0, 0)
    assert first.exact_match
    assert second.predicted_cache_read_tokens > 0
    assert second.classification == BEST_EFFORT_MISS
    assert second.token_error == second.predicted_cache_read_tokens
    summary = report.summary
    assert summary.reads_not_reported == 0
    assert summary.exact_matches == 1
    assert summary.predicted_cache_read_tokens == second.predicted_cache_read_tokens
    assert summary.observed_cache_read_tokens == 0
    assert second.observed_cost == Decimal("0.000276")  # no read: the same bill


def test_a_gemini_response_without_cached_content_token_count_reads_0(
    tmp_path: Path, store: ContractStore
) -> None:
    records = [
        {
            "timestamp": 1_757_000_000 + 10 * index,
            "provider": "google",
            "model": "gemini-2.5-flash",
            "request_id": f"g{index}",
            "request": {
                "systemInstruction": {"parts": [{"text": SYSTEM}]},
                "contents": [{"role": "user", "parts": [{"text": f"question {index}"}]}],
            },
            "response": {"usageMetadata": {"promptTokenCount": PROMPT, "candidatesTokenCount": 5}},
        }
        for index in range(2)
    ]
    path = tmp_path / "gemini.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    report = _run(path, store)
    rows = _by_line(report)
    assert [row.observed_cache_read_tokens for row in rows] == [0, 0]
    assert all(row.classification != READ_NOT_REPORTED for row in rows)
    assert report.summary.reads_not_reported == 0


def test_the_table_and_the_json_say_which_reads_were_not_reported(
    tmp_path: Path, migrated_db_url: str
) -> None:
    log = str(_chat_log(tmp_path, None))
    db = ["--database-url", migrated_db_url, "--at", AT.isoformat()]
    exact = CliRunner().invoke(app, ["reconcile", log, "--json", *db])
    assert exact.exit_code == 0, exact.output
    report = json.loads(exact.stdout)
    assert report["summary"]["reads_not_reported"] == 1
    # The first request, predicted to read nothing, is taken as 0; the second is not judged.
    observed = {row["line"]: row["observed_cache_read_tokens"] for row in report["requests"]}
    assert observed == {1: 0, 2: None}
    html = tmp_path / "report.html"
    shown = CliRunner().invoke(
        app, ["reconcile", log, "--limit", "0", "--html", str(html), *db], env={"COLUMNS": "200"}
    )
    assert shown.exit_code == 0, shown.output
    text = shown.stdout
    assert "1 request(s) report no cache read where one is predicted (the field is absent" in text
    assert "None" not in text
    assert "read_not_reported" in text
    assert "1 request(s) report no cache read" in html.read_text()


def test_which_absent_read_is_0_and_which_is_not_reported() -> None:
    """docs/log-formats.md, "Absent cache reads": per convention."""
    chat = {"prompt_tokens": 100, "completion_tokens": 2}
    assert normalize_usage(chat).cache_read_tokens is None
    details = {**chat, "prompt_tokens_details": {"cached_tokens": 0}}
    assert normalize_usage(details).cache_read_tokens == 0
    anthropic = {"input_tokens": 100, "output_tokens": 2}
    assert normalize_usage(anthropic, api="anthropic").cache_read_tokens is None
    nulled = {**anthropic, "cache_read_input_tokens": None}
    assert normalize_usage(nulled, api="anthropic").cache_read_tokens is None
    gemini = {"promptTokenCount": 100, "candidatesTokenCount": 2}
    assert normalize_usage(gemini).cache_read_tokens == 0
    bedrock = {"inputTokens": 100, "outputTokens": 2}
    assert normalize_usage(bedrock).cache_read_tokens == 0
    langfuse = {"input": 100, "output": 2}
    assert normalize_usage(langfuse, convention="langfuse").cache_read_tokens is None
    # xAI's gRPC usage as MessageToDict writes it: a count of 0 is left out.
    grpc = xai_grpc_usage({"prompt_tokens": 100, "completion_tokens": 2})
    assert normalize_usage(grpc).cache_read_tokens == 0
