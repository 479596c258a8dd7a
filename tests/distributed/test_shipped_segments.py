"""Segments shipped to a replayer as those not shared with the session's previous request
come back whole, channel by channel; a pickled request or item is the same value again."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from cachecast.passes.ray.shipping import SegmentsReceiver, SegmentsSender
from cachecast.tokenizers.types import (
    Breakpoint,
    CacheControls,
    PromptKeys,
    Segment,
    TokenizedRequest,
    request_values,
    with_changes,
)
from tests.distributed.conftest import shipped_request

TOOLS = Segment("tool", "tools[0]", 0, 80)
SYSTEM = Segment("system", "messages[0].content", 80, 200)
USER = Segment("message", "messages[1].content", 200, 230)
REPLY = Segment("message", "messages[2].content", 230, 260)


def request(session: str | None, line: int, *segments: Segment) -> TokenizedRequest:
    return shipped_request(session, line, segments=segments)


def test_shared_leading_segments_stay_behind_and_come_back() -> None:
    # Each request reuses the previous request's Segment objects, as the tokenizer does.
    sent = [
        (request("a", 1, TOOLS, SYSTEM, USER), 0),
        (request("a", 2, TOOLS, SYSTEM, USER, REPLY), 0),  # 3 shared: ships REPLY only
        (request("b", 3, TOOLS, SYSTEM), 0),  # another session: all of them
        (request("a", 4, TOOLS, SYSTEM, USER, REPLY), 1),  # another channel: all
        (request("a", 5, TOOLS, SYSTEM, REPLY), 0),  # USER is not line 2's third: 2 shared
        # An equal segment that is not the same object counts as new (no value compare).
        (request("a", 6, TOOLS, Segment("system", "messages[0].content", 80, 200)), 0),
        (request(None, 7, TOOLS, SYSTEM), 0),  # no session: as it is
    ]
    sender = SegmentsSender()
    shared = [sender.split(item, channel) for item, channel in sent]
    assert shared == [0, 3, 0, 0, 2, 1, 0]
    receivers = {0: SegmentsReceiver(), 1: SegmentsReceiver()}
    for (original, channel), count in zip(sent, shared, strict=True):
        wire = dataclasses.replace(original, segments=original.segments[count:])
        arrived = pickle.loads(pickle.dumps(wire))
        back = receivers[channel].receive(arrived, count, stream=0)
        assert back == original.segments


def test_shared_segments_that_did_not_arrive_are_refused() -> None:
    wire = request("a", 2, REPLY)
    with pytest.raises(ValueError, match="line 2: 3 shared segments, 0 received before"):
        SegmentsReceiver().receive(wire, 3, stream=0)


def test_pickled_requests_and_their_values_are_equal_values() -> None:
    full = dataclasses.replace(
        request("a", 1, TOOLS, SYSTEM),
        breakpoints=(Breakpoint(80, "5m"),),
        controls=CacheControls(implicit_breakpoint=False, implicit_offset=80, ttl="24h"),
        prompt_keys=PromptKeys({128: [b"k" * 16]}, {}),
    )
    assert pickle.loads(pickle.dumps(full)) == full
    # What a tokenizing task ships: the field values as a plain tuple.
    values = request_values(full)
    assert type(values) is tuple
    assert TokenizedRequest(*pickle.loads(pickle.dumps(values))) == full
    assert with_changes(full, line=9, tokens=None) == dataclasses.replace(full, line=9, tokens=None)
