"""Replay a request stream through a policy in timestamp order, one request at a time."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable, Iterator

from cachecast.errors import BadInputError, Location
from cachecast.simulator.compact import Compactor, key_needs
from cachecast.simulator.policies.base import CachePolicy
from cachecast.simulator.types import RequestUsage
from cachecast.tokenizers.types import TokenizedRequest

DEFAULT_REORDER_WINDOW = 4096


class OutOfOrderError(BadInputError):
    """A request arrived earlier than the reorder window can still place it."""

    title = "Records out of order"


def in_timestamp_order(
    requests: Iterable[TokenizedRequest], window: int = DEFAULT_REORDER_WINDOW
) -> Iterator[TokenizedRequest]:
    """Sort a stream by timestamp within a bounded window (memory: ``window`` requests).

    Ties keep file order. A request older than one already emitted cannot be placed and
    raises ``OutOfOrderError`` naming its file and line: sort such a log first.
    """
    heap: list[tuple[float, int, TokenizedRequest]] = []
    counter = itertools.count()
    last_emitted = float("-inf")
    for request in requests:
        if request.timestamp < last_emitted:
            raise OutOfOrderError(
                f"{request.timestamp} is earlier than a request {window} or more places before"
                " it; sort the log",
                location=Location(source=request.source, line=request.line, field="timestamp"),
            )
        heapq.heappush(heap, (request.timestamp, next(counter), request))
        if len(heap) > window:
            last_emitted, _, oldest = heapq.heappop(heap)
            yield oldest
    while heap:
        yield heapq.heappop(heap)[2]


def simulate(
    requests: Iterable[TokenizedRequest],
    policy: CachePolicy,
    *,
    window: int = DEFAULT_REORDER_WINDOW,
) -> Iterator[RequestUsage]:
    """Per-request usage, in timestamp order (input sorted within ``window`` requests).

    The window holds each request reduced to the keys ``policy`` reads (``compact``), not
    its token ids: memory for the window's requests, not for their prompts."""
    compact = Compactor(key_needs([policy])).compact
    for request in in_timestamp_order(map(compact, requests), window):
        usage = policy.process(request)
        usage.check()
        yield usage
