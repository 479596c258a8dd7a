"""``check`` and ``suggest`` read every log format the other commands read (issue 29, point
3): Claude Code, OTel, HAR, VCR, Codex, Langfuse, batches with ``--results``; ``--format``
forces one. A log checked against itself passes, with the hit rate ``estimate`` gives it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cachecast.cli import app
from tests.conftest import shared_data

SONNET = "anthropic:claude-sonnet-4-5"
RECORDINGS = {
    "claude-code": "recordings/claude_code/spotter/short.jsonl",
    "har": "recordings/har/mirascope_caching_anthropic_caches-long-system-message.har",
    "langfuse": "recordings/langfuse/claude-agent-2025-12-22.trace.json",
    "codex": "recordings/codex_cli/ccusage_fixture_session-alpha.jsonl",
    "otel": "recordings/otel_genai_spans/genai-interlingua_openinference_in.json",
    "vcr": "recordings/vcr_cassettes/pydantic-ai-parsed-body/"
    "test_bedrock_cache_messages_with_image_as_last_content.yaml",
}


# The prompt and cache-read tokens the sessions' usage states: Codex's two token_count events,
# input 1,000 + 2,500 = 3,500, cached 250 + 500 = 750; the Claude Code response
# (PROVENANCE.md): input 3 + 1h writes 13,835 + reads 11,515 = 25,353, reads 11,515.
OBSERVED = {"codex": (3_500, 750), "claude-code": (25_353, 11_515)}


def _invoke(*args: str) -> tuple[int, str]:
    """The exit code and, for ``--json``, the JSON on stdout (a report may say on stderr which
    client wrote a session), else everything printed."""
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout if "--json" in args else result.output


@pytest.mark.parametrize("name", sorted(RECORDINGS))
def test_check_reads_the_format_and_agrees_with_estimate(
    name: str, migrated_db_url: str, tmp_path: Path
) -> None:
    log = str(shared_data(RECORDINGS[name]))
    db = ("--database-url", migrated_db_url)
    code, text = _invoke("check", log, log, "-t", SONNET, "--json", *db)
    assert code == 0, text
    report = json.loads(text)
    (target,) = report["targets"]
    code, estimated = _invoke("estimate", log, "-t", SONNET, "--json", "--at", report["at"], *db)
    assert code == 0, estimated
    (priced,) = json.loads(estimated)["targets"]
    assert target["baseline"]["requests"] == priced["requests"] > 0
    if name in OBSERVED:
        # An agent session: estimate prices the usage the provider reported (docs/
        # predictions.md), not the visible messages check lays out.
        assert (priced["input_tokens"], priced["cache_read_tokens"]) == OBSERVED[name]
        return
    assert target["baseline"]["input_tokens"] == priced["input_tokens"]
    assert target["baseline"]["cache_read_tokens"] == priced["cache_read_tokens"]


def test_suggest_reads_a_har_with_and_without_format(migrated_db_url: str) -> None:
    log = str(shared_data(RECORDINGS["har"]))
    db = ("--database-url", migrated_db_url)
    detected = _invoke("suggest", log, "-t", SONNET, "--json", *db)
    forced = _invoke("suggest", log, "-t", SONNET, "--json", "--format", "har", *db)
    assert detected[0] == forced[0] == 0, detected[1]
    assert json.loads(detected[1])["analysis"] == json.loads(forced[1])["analysis"]
    code, text = _invoke("suggest", log, "-t", SONNET, "--format", "vcr", *db)
    assert code == 2 and "not a VCR cassette" in text


def test_suggest_reads_a_batch_with_its_results(migrated_db_url: str) -> None:
    requests = str(shared_data("recordings/openai_batch/langbatch_chat_completion_batch.jsonl"))
    results = str(
        shared_data("recordings/openai_batch/langbatch_chat_completion_batch_results.jsonl")
    )
    code, text = _invoke(
        "suggest",
        requests,
        "--results",
        results,
        "-t",
        "openai:gpt-4o",
        "--json",
        "--database-url",
        migrated_db_url,
    )
    assert code == 0, text
    # A request is billed where its results file answered it with status 200: count them.
    answered = [json.loads(line) for line in Path(results).read_text().splitlines() if line]
    billed = sum(1 for entry in answered if (entry["response"] or {}).get("status_code") == 200)
    assert sum(json.loads(text)["analysis"]["templates"]) == billed
