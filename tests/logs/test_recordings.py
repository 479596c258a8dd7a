"""Every real recording in ../shared/data/recordings, end to end: ``read_log`` hands out
priced-ready requests (tokenized, observed usage where the file has it, billable under a
stored contract), ``inspect_logs`` reports them, and ``estimate`` prices each file.

Request counts are the ones each file's PROVENANCE.md states (the per-format tests derive
them again from the files); a results file alone carries only its succeeded requests."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from cachecast.contracts import ContractStore
from cachecast.passes.log_input import LogInput
from cachecast.simulator.billing import bill_request, usage_from_observed
from cachecast.usecases.estimate import EstimateRequest, estimate
from cachecast.usecases.inspect import inspect_logs
from tests.conftest import shared_data
from tests.logs.helpers import read

SESSIONS = "codex_cli/localpush/raw/sessions"
SUBAGENTS = "claude_code/spotter/8463c716-a2ea-4c14-9efa-87158ebd9f20/subagents"
# file -> (format, billed requests, whether every request carries usage)
RECORDINGS: dict[str, tuple[str, int, bool]] = {
    "claude_code/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl": ("claude-code", 7, True),
    "claude_code/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl": ("claude-code", 20, True),
    "claude_code/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl": ("claude-code", 170, True),
    "claude_code/spotter/8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl": ("claude-code", 143, True),
    f"{SUBAGENTS}/agent-a7be2f0.jsonl": ("claude-code", 13, True),
    f"{SUBAGENTS}/agent-acompact-f46190.jsonl": ("claude-code", 1, True),
    "claude_code/spotter/short.jsonl": ("claude-code", 1, True),
    "claude_code/spotter/tool_heavy.jsonl": ("claude-code", 4, True),
    "claude_code/spotter/subagent.jsonl": ("claude-code", 12, True),
    "codex_cli/ccusage_fixture_session-alpha.jsonl": ("codex", 2, True),
    f"{SESSIONS}/rollout-2026-02-23T12-40-23-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl": (
        "codex",
        81,
        True,
    ),
    f"{SESSIONS}/rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl": (
        "codex",
        28,
        True,
    ),
    f"{SESSIONS}/rollout-2026-02-23T12-47-42-019c8a53-a0dd-7130-bcd7-95445d84846a.jsonl": (
        "codex",
        83,
        True,
    ),
    f"{SESSIONS}/rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl": (
        "codex",
        286,
        True,
    ),
    f"{SESSIONS}/rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl": (
        "codex",
        1,
        True,
    ),
    f"{SESSIONS}/rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl": (
        "codex",
        6,
        True,
    ),
    "langfuse/claude-agent-2025-12-22.trace.json": ("langfuse", 4, True),
    "langfuse/langgraph-js-2025-10-30.trace.json": ("langfuse", 2, True),
    "langfuse/langgraph-python-2025-08-22.trace.json": ("langfuse", 2, True),
    "langfuse/openai-agents-2025-09-30.trace.json": ("langfuse", 2, True),
    "langfuse/pydantic-ai-tools-2025-12-04.trace.json": ("langfuse", 4, True),
    "openai_batch/langbatch_chat_completion_batch.jsonl": ("openai-batch", 8, False),
    "openai_batch/langbatch_chat_completion_batch_results.jsonl": ("openai-batch-output", 2, True),
    "otel_genai_spans/genai-interlingua_openinference_in.json": ("otel", 1, True),
    "otel_genai_spans/genai-interlingua_openllmetry_in.json": ("otel", 1, True),
    "vcr_cassettes/openllmetry/test_anthropic_prompt_caching_legacy.yaml": ("vcr", 2, True),
    "vcr_cassettes/openllmetry/test_anthropic_prompt_caching_async_legacy.yaml": ("vcr", 2, True),
    "vcr_cassettes/openllmetry/test_anthropic_prompt_caching_stream_legacy.yaml": ("vcr", 2, True),
    "vcr_cassettes/openllmetry/test_openai_prompt_caching.yaml": ("vcr", 4, True),
    "vcr_cassettes/openllmetry/test_openai_prompt_caching_async.yaml": ("vcr", 4, True),
    "vcr_cassettes/openllmetry/test_invoke_model_cache_tokens.yaml": ("vcr", 2, True),
}
LARGE = {f"{SESSIONS}/rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl"}
DAY = dt.date(2026, 10, 15)


def recording(relative: str) -> Path:
    return shared_data(f"recordings/{relative}")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> ContractStore:
    from cachecast.core import db

    url = f"sqlite:///{tmp_path_factory.mktemp('store') / 'cachecast.db'}"
    db.upgrade(url)
    return ContractStore(url)


@pytest.mark.parametrize("relative", sorted(RECORDINGS))
def test_read_log_hands_out_priced_ready_requests(relative: str, store: ContractStore) -> None:
    fmt, count, with_usage = RECORDINGS[relative]
    result = read(recording(relative))
    assert (result.format, len(result.requests), result.errors) == (fmt, count, [])
    # Billable as observed under a contract with both Anthropic TTLs (5m and 1h).
    contract = store.as_of("anthropic", "claude-sonnet-4-5", DAY)
    for request in result.requests:
        assert request.model is not None and request.provider is not None
        assert request.tokens is not None and len(request.tokens) == request.input_tokens > 0
        if not with_usage:
            assert request.observed is None
            continue
        assert request.observed is not None
        usage = usage_from_observed(
            request.observed,
            contract,
            request_id=request.request_id,
            line=request.line,
            timestamp=request.timestamp,
            scope=request.scope,
            fallback_input_tokens=request.input_tokens,
            fallback_output_tokens=request.output_tokens,
        )
        assert bill_request(usage, contract).total >= 0
        if not request.prompt_complete:
            # A prompt the log does not hold whole is fitted to the observed count.
            assert request.input_tokens == request.observed.input_tokens


@pytest.mark.parametrize(
    "relative",
    [pytest.param(r, marks=pytest.mark.slow) if r in LARGE else r for r in sorted(RECORDINGS)],
)
def test_estimate_prices_each_recording(relative: str, store: ContractStore) -> None:
    _, count, _ = RECORDINGS[relative]
    request = EstimateRequest(
        log=LogInput.of_paths([recording(relative)]),
        targets=["anthropic:claude-sonnet-4-5", "openai:gpt-4o"],
        at=DAY,
    )
    report = estimate(request, store)
    assert report.errors == []
    for result in report.targets:
        assert result.requests == count
        assert result.cost.total > 0


def test_inspect_every_recording() -> None:
    paths = [recording(r) for r in sorted(RECORDINGS) if r not in LARGE]
    report = inspect_logs(paths)
    # The batch input and output pair up: one report for the two files.
    batch = {r for r in RECORDINGS if r.startswith("openai_batch/")}
    assert len(report.files) == len(paths) - 1
    by_path = {Path(f.path): f for f in report.files}
    for relative in sorted(RECORDINGS):
        if relative in LARGE or relative.endswith("_results.jsonl"):
            continue
        fmt, count, with_usage = RECORDINGS[relative]
        found = by_path[recording(relative)]
        assert found.format == fmt
        assert found.errors == [] and found.error_count == 0
        if relative in batch:
            assert found.results_path is not None
            assert (found.requests, found.requests_with_usage) == (2, 2)  # joined
            continue
        assert (
            found.requests == count == sum(found.models.values()) == sum(found.providers.values())
        )
        assert found.requests_with_usage == (count if with_usage else 0)
        assert found.first_timestamp is not None and found.last_timestamp is not None
        assert found.first_timestamp <= found.last_timestamp
