"""Anthropic's server web search: usage that sums the sampling iterations of the tool loop,
and provider-defined tools whose own prompt the body does not hold (docs/predictions.md,
"Server tools").

Observed figures are the recording's own stream events: ``message_start``'s usage (the first
iteration) and the final ``message_delta``'s (the request's totals, with
``server_tool_use.web_search_requests``)."""

from __future__ import annotations

from decimal import Decimal

from cachecast.contracts import ContractStore
from cachecast.tokenizers.record_fields import built_in_tools
from tests.conftest import shared_data
from tests.logs.helpers import read
from tests.predictions.test_served_recordings import run

PATH = (
    "recordings/vcr_cassettes/vcrpy-more/"
    "mirascope_test_web_search_tool_stream_anthropic_claude_sonnet_4_0.yaml"
)
OPENAI = (
    "recordings/vcr_cassettes/ruby-vcr/"
    "chat_web_search_with_openai_gpt-5_2_searches_and_records_the_tool_call_items.yml"
)


def test_the_final_totals_and_the_tool_calls_are_read() -> None:
    requests = read(shared_data(PATH)).requests
    observed = [r.observed for r in requests]
    assert all(o is not None for o in observed)
    # Request 2: message_start says input 3, cache_creation 2,399 (split 5m: 2,399), read 0;
    # the final message_delta says input 17, cache_creation 23,258 (no split), read 16,242,
    # web_search_requests 2. The first iteration's split is not the request's: the writes are
    # 23,258, all at the default 5-minute TTL (no 1h mark in the body).
    second = observed[1]
    assert second is not None
    assert (second.cache_read_tokens, second.cache_write_tokens) == (16_242, 23_258)
    assert second.cache_write_by_ttl == {"5m": 23_258}
    assert second.input_tokens == 17 + 23_258 + 16_242
    # web_search_requests: 3 in request 1's final usage, 2 in request 2's.
    assert [o.server_tool_calls for o in observed if o is not None] == [3, 2]


def test_a_server_tool_request_says_what_is_not_documented(store: ContractStore) -> None:
    report = run(shared_data(PATH), store)
    row = sorted(report.requests, key=lambda row: row.line)[1]
    assert row.classification == "unexplained"
    assert row.explanation is not None
    assert "sums the 3 sampling iterations of 2 server tool call(s)" in row.explanation
    # The observed bill under claude-sonnet-4 ($3 in, $15 out, 5m writes 1.25x, reads 0.1x):
    # 17 x 3 + 23,258 x 3.75 + 16,242 x 0.30 + 515 x 15 = 51 + 87,217.5 + 4,872.6 + 7,725
    # = 99,866.1 per million = $0.0998661.
    assert row.observed_cost == Decimal("0.0998661")


def test_built_in_tools_are_named() -> None:
    tools = [
        {"type": "function", "name": "f"},
        {"type": "custom", "name": "g"},
        {"name": "h", "input_schema": {}},  # Anthropic: a caller's tool has no type
        {"type": "web_search"},
        {"type": "web_search"},
    ]
    assert built_in_tools(tools) == ("web_search",)
    assert built_in_tools(None) == ()


def test_openai_hosted_web_search_says_what_is_not_documented(store: ContractStore) -> None:
    # RubyLLM's gpt-5.2 cassette: request 2 (tools [{"type": "web_search"}]) reads 4,352 of
    # 4,565 input tokens, which no earlier request of the log cached.
    report = run(shared_data(OPENAI), store)
    row = sorted(report.requests, key=lambda row: row.line)[1]
    assert (row.observed_cache_read_tokens, row.classification) == (
        4_352,
        "warm_cache_at_log_start",
    )
    assert row.explanation is not None
    assert "built-in tool(s) web_search, whose own prompt the body does not hold" in (
        row.explanation
    )
