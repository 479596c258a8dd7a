"""A batch's (and a flex response's) requests are billed at the provider's dated batch term
where one is in force, else at on-demand prices, and every report that bills them says which
(docs/contracts.md, "Batch terms"; docs/log-formats.md, "Canonical records", ``service_tier``;
"Batches"). Files are
hand-built from the documented shapes (OpenAI's Batch input/output lines, Anthropic's
Message Batches requests/results, Bedrock batch inference records, a VCR recording of a
batch's results being downloaded, response bodies carrying ``service_tier``); the expected
counts are the requests written here that succeeded.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cachecast.cli import app
from cachecast.logs.canonical import SERVICE_TIER_NOTES, service_tier_hint
from cachecast.usecases.inspect import inspect_logs
from tests.logs.helpers import read, write_jsonl

AT = "2025-06-02"
BEFORE_BATCH_API = "2024-03-01"  # OpenAI's batch term starts on 2024-04-15
MINI = "gpt-4o-mini"
BATCH_NOTE = SERVICE_TIER_NOTES["batch"]
# OpenAI's batch term (docs/contracts.md, "Batch terms"): its note's opening and its start.
TERM_NOTE = "billed at batch prices: 50% of on-demand"


def chat_body(question: str) -> dict[str, Any]:
    return {"model": MINI, "messages": [{"role": "user", "content": question}]}


def chat_response(prompt: int, output: int, **extra: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_748_858_400,  # 2025-06-02T10:00:00Z
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": output, "total_tokens": 0},
        **extra,
    }


QUESTIONS = ["What is a prompt cache?", "And a batch?", "Never answered"]


def openai_batch(folder: Path) -> tuple[Path, Path]:
    """Three requests; the first two succeeded, the third failed (not billed)."""
    folder.mkdir(parents=True, exist_ok=True)
    requests = write_jsonl(
        folder / "batch_input.jsonl",
        [
            {
                "custom_id": f"req-{n}",
                "method": "POST",
                "url": "/v1/chat/completions",
                "body": chat_body(q),
            }
            for n, q in enumerate(QUESTIONS, start=1)
        ],
    )
    outputs: list[dict[str, Any]] = [
        {
            "id": f"batch_req_{n}",
            "custom_id": f"req-{n}",
            "response": {"status_code": 200, "request_id": f"r{n}", "body": chat_response(13, 5)},
            "error": None,
        }
        for n in (1, 2)
    ]
    outputs.append(
        {
            "id": "batch_req_3",
            "custom_id": "req-3",
            "response": None,
            "error": {"code": "server_error", "message": "failed"},
        }
    )
    results = write_jsonl(folder / "batch_output.jsonl", outputs)
    return requests, results


def plain_log(folder: Path, **response_extra: Any) -> Path:
    """The same two billed requests as a plain (non-batch) log of wrapper lines."""
    folder.mkdir(parents=True, exist_ok=True)
    return write_jsonl(
        folder / "plain.jsonl",
        [
            {
                "timestamp": "2025-06-02T10:00:00Z",
                "provider": "openai",
                "request": chat_body(q),
                "response": chat_response(13, 5, **response_extra),
            }
            for q in QUESTIONS[:2]
        ],
    )


def cli(args: list[str], db: str) -> Any:
    result = CliRunner().invoke(app, args, env={"CACHECAST_DATABASE_URL": db})
    assert result.exit_code == 0, result.stderr
    return result


# --- the readers carry it -------------------------------------------------------------------


def test_every_openai_batch_reading_is_batch(tmp_path: Path) -> None:
    requests, results = openai_batch(tmp_path)
    joined = read(requests, results=results)
    assert [r.service_tier for r in joined.requests] == ["batch", "batch"]
    alone = read(requests)  # a batch not yet run: 3 requests
    assert [r.service_tier for r in alone.requests] == ["batch"] * 3
    output_only = read(results)
    assert [r.service_tier for r in output_only.requests] == ["batch", "batch"]


def test_anthropic_batch_requests_and_results_are_batch(tmp_path: Path) -> None:
    params = {
        "model": "claude-3-5-haiku-20241022",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "Hi"}],
    }
    requests = write_jsonl(tmp_path / "requests.jsonl", [{"custom_id": "a", "params": params}])
    message = {
        "id": "msg_1",
        "type": "message",
        "model": "claude-3-5-haiku-20241022",
        "content": [{"type": "text", "text": "ok"}],
        "usage": {"input_tokens": 8, "output_tokens": 2, "service_tier": "batch"},
    }
    results = write_jsonl(
        tmp_path / "results.jsonl",
        [{"custom_id": "a", "result": {"type": "succeeded", "message": message}}],
    )
    assert [r.service_tier for r in read(requests, results=results).requests] == ["batch"]
    assert [r.service_tier for r in read(results).requests] == ["batch"]


def test_bedrock_batch_output_is_batch(tmp_path: Path) -> None:
    model_input = {
        "anthropic_version": "bedrock-2023-05-31",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "Hi"}],
    }
    output = {
        "id": "msg_bdrk_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-3-5-haiku-20241022",
        "content": [{"type": "text", "text": "ok"}],
        "usage": {"input_tokens": 8, "output_tokens": 2},
    }
    path = write_jsonl(
        tmp_path / "q.jsonl.out",
        [{"recordId": "R1", "modelInput": model_input, "modelOutput": output}],
    )
    result = read(path, default_model="anthropic.claude-3-5-haiku-20241022-v1:0")
    assert result.format == "bedrock-batch-output"
    assert [r.service_tier for r in result.requests] == ["batch"]


def test_downloaded_anthropic_batch_results_are_batch(tmp_path: Path) -> None:
    line = json.dumps(
        {
            "custom_id": "a",
            "result": {
                "type": "succeeded",
                "message": {
                    "id": "msg_a",
                    "type": "message",
                    "model": "claude-3-5-haiku-20241022",
                    "content": [{"type": "text", "text": "ok"}],
                    "usage": {"input_tokens": 20, "output_tokens": 80},
                },
            },
        }
    )
    url = "https://api.anthropic.com/v1/messages/batches/msgbatch_1/results"
    path = tmp_path / "batch_results.yml"
    path.write_text(
        "---\nhttp_interactions:\n"
        f"- request:\n    method: get\n    uri: {url}\n"
        "    body:\n      encoding: US-ASCII\n      string: ''\n"
        "  response:\n    status:\n      code: 200\n      message: OK\n"
        "    body:\n      encoding: UTF-8\n      string: " + json.dumps(line) + "\n"
        "recorded_with: VCR 6.1.0\n",
        encoding="utf-8",
    )
    result = read(path)
    assert result.errors == []
    assert [r.service_tier for r in result.requests] == ["batch"]


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({"service_tier": "flex"}, "flex"),
        ({"service_tier": "priority"}, "priority"),
        ({"service_tier": "scale"}, "scale"),
        ({"service_tier": "default"}, None),  # standard processing: what the contracts price
        ({}, None),
    ],
)
def test_a_response_service_tier_is_carried(
    tmp_path: Path, extra: dict[str, str], expected: str | None
) -> None:
    result = read(plain_log(tmp_path, **extra))
    assert [r.service_tier for r in result.requests] == [expected, expected]


def test_a_recorded_openai_response_with_flex_is_flex(tmp_path: Path) -> None:
    body = json.dumps(chat_body("Hi"))
    response = json.dumps(chat_response(8, 2, service_tier="flex"))
    path = tmp_path / "flex.yml"
    path.write_text(
        "---\nhttp_interactions:\n"
        "- request:\n    method: post\n    uri: https://api.openai.com/v1/chat/completions\n"
        "    body:\n      encoding: UTF-8\n      string: " + json.dumps(body) + "\n"
        "  response:\n    status:\n      code: 200\n      message: OK\n"
        "    headers:\n      Content-Type:\n      - application/json\n"
        "    body:\n      encoding: UTF-8\n      string: " + json.dumps(response) + "\n"
        "recorded_with: VCR 6.1.0\n",
        encoding="utf-8",
    )
    result = read(path)
    assert result.errors == []
    assert [r.service_tier for r in result.requests] == ["flex"]


# --- the reports say it ---------------------------------------------------------------------


def batch_notes(notes: list[str]) -> list[str]:
    return [note for note in notes if note.startswith(BATCH_NOTE)]


def term_notes(notes: list[str]) -> list[str]:
    return [note for note in notes if note.startswith(TERM_NOTE)]


def test_reconcile_json_and_text_name_the_batch_term(tmp_path: Path, migrated_db_url: str) -> None:
    requests, results = openai_batch(tmp_path)
    args = ["reconcile", str(requests), str(results), "--at", AT]
    report = json.loads(cli([*args, "--json"], migrated_db_url).stdout)
    (target,) = report["targets"]
    # Two requests succeeded in the batch (the third failed and was not billed).
    (note,) = term_notes(target["notes"])
    assert note.endswith("from 2024-04-15) (2 requests)")
    assert batch_notes(target["notes"]) == []
    text = cli(args, migrated_db_url).stdout
    assert f"note: {note}" in " ".join(text.split())


def test_estimate_json_names_the_batch_term(tmp_path: Path, migrated_db_url: str) -> None:
    requests, results = openai_batch(tmp_path)
    args = ["estimate", str(requests), str(results), "-t", f"openai:{MINI}", "--at", AT]
    report = json.loads(cli([*args, "--json"], migrated_db_url).stdout)
    (target,) = report["targets"]
    (note,) = term_notes(target["notes"])
    assert note.endswith("(2 requests)")
    assert batch_notes(target["notes"]) == []
    text = cli(args, migrated_db_url).stdout
    assert f"note: {note}" in " ".join(text.split())


def test_estimate_before_the_batch_api_says_a_batch_is_billed_on_demand(
    tmp_path: Path, migrated_db_url: str
) -> None:
    requests, results = openai_batch(tmp_path)
    args = ["estimate", str(requests), str(results), "-t", "openai:gpt-3.5-turbo"]
    report = json.loads(cli([*args, "--at", BEFORE_BATCH_API, "--json"], migrated_db_url).stdout)
    (target,) = report["targets"]
    assert batch_notes(target["notes"]) == [f"{BATCH_NOTE} (2 requests)"]
    assert "on-demand prices" in BATCH_NOTE and "50%" in BATCH_NOTE
    assert term_notes(target["notes"]) == []


def test_a_plain_log_gets_no_tier_note(tmp_path: Path, migrated_db_url: str) -> None:
    log = plain_log(tmp_path)
    tier_notes = tuple(SERVICE_TIER_NOTES.values())
    report = json.loads(cli(["reconcile", str(log), "--at", AT, "--json"], migrated_db_url).stdout)
    (target,) = report["targets"]
    assert not [note for note in target["notes"] if note.startswith(tier_notes)]
    estimate = json.loads(
        cli(
            ["estimate", str(log), "-t", f"openai:{MINI}", "--at", AT, "--json"], migrated_db_url
        ).stdout
    )
    assert not [n for n in estimate["targets"][0]["notes"] if n.startswith(tier_notes)]


def test_reconcile_names_the_flex_term_for_a_flex_response(
    tmp_path: Path, migrated_db_url: str
) -> None:
    log = plain_log(tmp_path, service_tier="flex")
    report = json.loads(cli(["reconcile", str(log), "--at", AT, "--json"], migrated_db_url).stdout)
    (target,) = report["targets"]
    assert [n for n in target["notes"] if n.startswith("billed at flex prices: 50% of on-demand")]
    assert f"{SERVICE_TIER_NOTES['flex']} (2 requests)" not in target["notes"]


def test_groq_flex_is_priced_on_demand_and_not_noted(tmp_path: Path) -> None:
    # Groq's flex tier is priced as its on-demand tier (docs/log-formats.md).
    log = write_jsonl(
        tmp_path / "groq.jsonl",
        [
            {
                "provider": "groq",
                "request": {**chat_body("Hi"), "model": "llama-3.1-8b-instant"},
                "response": {**chat_response(8, 2), "service_tier": "flex"},
            }
        ],
    )
    (inspection,) = inspect_logs([log]).files
    assert inspection.service_tiers == {"flex": 1}
    assert not [hint for hint in inspection.hints if "on-demand prices" in hint]


def test_inspect_hints_how_a_batch_is_billed(tmp_path: Path) -> None:
    requests, results = openai_batch(tmp_path)
    (inspection,) = inspect_logs([requests, results]).files
    assert inspection.service_tiers == {"batch": 2}
    hint = service_tier_hint("batch", "openai")
    assert hint is not None and "dated batch term" in hint and "on-demand prices" in hint
    assert f"2 request(s) {hint}" in inspection.hints


def test_a_helicone_row_with_anthropic_priority_is_priority(tmp_path: Path) -> None:
    # Anthropic reports the tier inside usage (its service tiers page, docs/log-formats.md).
    row = {
        "request_id": "h-1",
        "request_created_at": "2026-01-05T10:00:00.000Z",
        "request_body": {
            "model": "claude-sonnet-4-5",
            "max_tokens": 100,
            "messages": [{"role": "user", "content": "Hi"}],
        },
        "response_body": {
            "id": "msg_1",
            "usage": {"input_tokens": 9, "output_tokens": 2, "service_tier": "priority"},
        },
        "response_status": 200,
        "provider": "ANTHROPIC",
        "model": "claude-sonnet-4-5",
        "target_url": "https://api.anthropic.com/v1/messages",
    }
    result = read(write_jsonl(tmp_path / "helicone.jsonl", [row]))
    assert result.format == "helicone"
    assert [r.service_tier for r in result.requests] == ["priority"]
