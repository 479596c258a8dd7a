"""Target parsing and timestamp ordering of the replayed stream."""

from __future__ import annotations

import heapq
from collections.abc import Iterator

import pytest

from cachecast.core.errors import BadInputError
from cachecast.passes.targets import parse_target
from cachecast.simulator.ordering import DEFAULT_REORDER_WINDOW, OutOfOrderError, in_timestamp_order
from cachecast.simulator.pricing import Target
from cachecast.tokenizers.types import TokenizedRequest


def _time_ordered(streams: list[Iterator[TokenizedRequest]]) -> Iterator[TokenizedRequest]:
    """As ``passes.log_input.LogReading.requests`` merges files: by timestamp, then the window."""
    merged = heapq.merge(*streams, key=lambda request: request.timestamp)
    return in_timestamp_order(merged, DEFAULT_REORDER_WINDOW)


def request(source: str, line: int, timestamp: float) -> TokenizedRequest:
    return TokenizedRequest(
        source=source,
        line=line,
        request_id=f"{source}-{line}",
        timestamp=timestamp,
        scope="org",
        provider="openai",
        model="gpt-4o",
        input_tokens=1,
        output_tokens=0,
        tokens=[1],
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("openai:gpt-4o", Target("openai", "gpt-4o")),
        (" Anthropic : Claude-Sonnet-4-5 ", Target("anthropic", "claude-sonnet-4-5")),
        # Only the first colon separates: model ids may contain colons (Bedrock ids do).
        ("bedrock:anthropic.claude-v2:1", Target("bedrock", "anthropic.claude-v2:1")),
    ],
)
def test_target_parse(text: str, expected: Target) -> None:
    assert parse_target(text) == expected


@pytest.mark.parametrize("text", ["gpt-4o", "openai:", ":gpt-4o", "", " : "])
def test_malformed_target_is_rejected(text: str) -> None:
    with pytest.raises(BadInputError, match="PROVIDER:MODEL") as caught:
        parse_target(text, "targets[2]")
    assert caught.value.location.field == "targets[2]"


def test_files_are_merged_by_timestamp_ties_in_read_order() -> None:
    a = iter([request("a", 1, 1.0), request("a", 2, 3.0), request("a", 3, 3.0)])
    b = iter([request("b", 1, 2.0), request("b", 2, 3.0), request("b", 3, 4.0)])
    merged = [(r.source, r.line) for r in _time_ordered([a, b])]
    # 1.0 a1, 2.0 b1, then the three 3.0s in the order they were read, then 4.0 b3.
    assert merged[:2] == [("a", 1), ("b", 1)]
    assert sorted(merged[2:5]) == [("a", 2), ("a", 3), ("b", 2)]
    assert merged[2:5].index(("a", 2)) < merged[2:5].index(("a", 3))
    assert merged[5] == ("b", 3)


def test_a_request_beyond_the_reorder_window_is_an_error_naming_it() -> None:
    # 4,097 requests at t = 1..4097, then t = 0.5 on line 4098: by then the window (4,096
    # requests) has already replayed t = 1, so the late request cannot be placed.
    stream = [request("f", line, float(line)) for line in range(1, 4098)]
    stream.append(request("f", 4098, 0.5))
    with pytest.raises(OutOfOrderError, match=r"^f:4098: timestamp: "):
        list(_time_ordered([iter(stream)]))
    # One step back is reordered silently: t = 2.0 before 3.0.
    small = [request("f", line, ts) for line, ts in enumerate([1.0, 3.0, 2.0, 4.0], start=1)]
    assert [r.timestamp for r in _time_ordered([iter(small)])] == [1.0, 2.0, 3.0, 4.0]
