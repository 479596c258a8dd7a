"""A log as the self-hosting comparisons read it, and one replica sized for it.

``compare`` and ``fleet`` read their log twice, each time in the replay order of every other
command (timestamp order within the reorder window): :func:`size_deployment` is the first
pass, keeping only numbers per request (input and output tokens, the trace's block size), and
sizes one replica of the deployment (:mod:`capacity`: KV blocks after weights) at the log's
mean decode context; the second pass replays the log (:mod:`pools`, ``fleet``).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Protocol, runtime_checkable

import numpy as np

from cachecast.core.errors import Location
from cachecast.economics.capacity import DEFAULT_BLOCK_SIZE, Capacity, Deployment, kv_capacity
from cachecast.economics.errors import ComparisonError
from cachecast.economics.timing import FloatArray
from cachecast.tokenizers.types import TokenizedRequest

Prepare = Callable[[TokenizedRequest], TokenizedRequest]


@runtime_checkable
class RequestLog(Protocol):
    """A log that can be read more than once, in the same replay order every time."""

    def read(self, prepare: Prepare | None = None) -> Iterator[TokenizedRequest]:
        """Every request, in replay order; ``prepare`` is applied to each before a reorder
        window holds it (``simulator.compact``: keys instead of token ids)."""
        ...


class SortedRequests:
    """Requests already in memory (a library caller's, a test's) as a :class:`RequestLog`:
    sorted by timestamp, equal timestamps in their given order, which is the order the
    reorder window gives a log whose requests are within it."""

    def __init__(self, requests: Iterable[TokenizedRequest]) -> None:
        self.requests = sorted(requests, key=lambda request: request.timestamp)

    def read(self, prepare: Prepare | None = None) -> Iterator[TokenizedRequest]:
        return iter(self.requests) if prepare is None else map(prepare, self.requests)


def as_log(requests: RequestLog | Iterable[TokenizedRequest]) -> RequestLog:
    """``requests`` as a log to read twice (a list is sorted, see :class:`SortedRequests`)."""
    return requests if isinstance(requests, RequestLog) else SortedRequests(requests)


def numbers_only(request: TokenizedRequest) -> TokenizedRequest:
    """``request`` without its prompt (ids, keys, segments): what the sizing pass reads is
    its numbers. An empty ``block_keys`` still says that it came from a block-key trace
    (:func:`trace_block_size` reads only that and its block size)."""
    return replace(
        request,
        tokens=None,
        block_keys=None if request.block_keys is None else (),
        segments=(),
        breakpoints=(),
        prompt_keys=None,
    )


def trace_block_size(sizes: Iterable[int], given: int | None) -> int:
    """The block size to simulate: a block-key trace's own (``sizes``: the block sizes its
    requests give, which ``given`` must equal), else ``given``, else vLLM's default."""
    found = set(sizes)
    if len(found) > 1:
        raise ComparisonError(f"the log mixes block-key traces of block sizes {sorted(found)}")
    if found:
        (size,) = found
        if given is not None and given != size:
            raise ComparisonError(
                f"the log's block keys cover {size} tokens each; a block size of {given}"
                " cannot be simulated on it",
                location=Location(field="block_size"),
            )
        return size
    return given or DEFAULT_BLOCK_SIZE


class _Sizing:
    """What the sizing pass keeps: numbers per request, in replay order."""

    def __init__(self) -> None:
        self.inputs: array[float] = array("d")
        self.outputs: array[float] = array("d")
        self.first: float | None = None
        self.last = 0.0
        self.tokenizer: str | None = None
        self.exact = True
        self.block_sizes: set[int] = set()
        self.unsized: Location | None = None  # the first block-key request without a size

    def add(self, request: TokenizedRequest) -> None:
        if self.first is None:
            self.first = request.timestamp
            self.tokenizer = request.tokenizer or None
        self.last = request.timestamp
        self.inputs.append(request.input_tokens)
        self.outputs.append(request.output_tokens)
        self.exact = self.exact and request.exact
        if request.block_keys is not None:
            if request.block_size is None:
                if self.unsized is None:
                    self.unsized = Location(source=request.source, line=request.line)
            else:
                self.block_sizes.add(request.block_size)


@dataclass(frozen=True, slots=True)
class SizedLog:
    """A log (read once, in replay order) with one replica's deployment sized for it: its
    numbers per request, not its requests; the replays read ``log`` again."""

    log: RequestLog
    block_size: int
    deployment: Deployment
    inputs: FloatArray
    outputs: FloatArray
    decode_context: int
    capacity: Capacity
    duration: float
    tokenizer: str | None
    exact_tokens: bool

    @property
    def count(self) -> int:
        return len(self.inputs)

    @property
    def input_tokens(self) -> int:
        return int(self.inputs.sum())

    @property
    def output_tokens(self) -> int:
        return int(self.outputs.sum())

    @property
    def mean_input_tokens(self) -> float:
        return float(self.inputs.mean())

    @property
    def p95_input_tokens(self) -> float:
        return float(np.percentile(self.inputs, 95))

    @property
    def max_input_tokens(self) -> int:
        return int(self.inputs.max())

    @property
    def arrival_rate_per_s(self) -> float | None:
        return self.count / self.duration if self.duration > 0 else None


def size_deployment(
    requests: RequestLog | Iterable[TokenizedRequest],
    deployment: Deployment,
    block_size: int | None,
) -> SizedLog:
    """Read the log once (replay order; a list: sorted by timestamp) and size one replica of
    ``deployment`` (its block size replaced by the trace's or ``block_size``) at the log's
    mean decode context: what ``compare`` and ``fleet`` both start from. Raises
    :class:`ComparisonError` when the log is empty or the model does not fit."""
    log = as_log(requests)
    sizing = _Sizing()
    for request in log.read(numbers_only):
        sizing.add(request)
    if sizing.first is None:
        raise ComparisonError("the log has no usable request")
    if sizing.unsized is not None:
        raise ComparisonError("block keys without a block size", location=sizing.unsized)
    size = trace_block_size(sizing.block_sizes, block_size)
    deployment = replace(deployment, block_size=size)
    inputs = np.frombuffer(sizing.inputs, dtype=np.float64)
    outputs = np.frombuffer(sizing.outputs, dtype=np.float64)
    # Decode runs, on average, halfway through the output: mean input + output/2.
    decode_context = max(1, round(float(np.mean(inputs + outputs / 2))))
    kv = kv_capacity(deployment, decode_context)
    if not kv.fits:
        raise ComparisonError(kv.error or "the model does not fit")
    if kv.max_concurrent_requests == 0 or kv.num_blocks < 2:
        raise ComparisonError(
            kv.error or f"only {kv.num_blocks} KV blocks fit; vLLM needs at least 2"
        )
    return SizedLog(
        log=log,
        block_size=size,
        deployment=deployment,
        inputs=inputs,
        outputs=outputs,
        decode_context=decode_context,
        capacity=kv,
        duration=sizing.last - sizing.first,
        tokenizer=sizing.tokenizer,
        exact_tokens=sizing.exact,
    )
