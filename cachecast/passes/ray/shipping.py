"""Tokenizing a part and shipping its requests to their buckets' replayers.

:func:`tokenize_and_shuffle` is the Ray task of the first stage (see the package): it reads
and tokenizes one part (:mod:`planning`) as one process does and yields, every
``chunk_requests`` requests, one object per replayer holding that replayer's buckets' lists
(:func:`pack_chunks`). A request travels as plain field values (:data:`WireItem`); where the
replay reads ids, a prompt that extends its session's previous one travels as its new ids
and its new segments only (:class:`SegmentsSender`, ``ordering.PromptPacker``).
"""

from __future__ import annotations

import math
import os
import pickle
import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

import ray

from cachecast.core.errors import LogRecordError
from cachecast.logs import LogStream, open_log
from cachecast.logs.ranges import open_range
from cachecast.logs.stream import Item as LogItem
from cachecast.passes.log_input import LogInput, LogReading, merged_sources
from cachecast.passes.ray.planning import LogPart
from cachecast.passes.ray.stats import StageSeconds
from cachecast.simulator.compact import Compactor, KeyNeeds
from cachecast.simulator.distributed.partition import bucket_of, partition_key
from cachecast.simulator.ordering import PromptPacker
from cachecast.tokenizers.calibration import RatioStats
from cachecast.tokenizers.encode import THREADS_ENV
from cachecast.tokenizers.types import Segment, TokenizedRequest, request_values, values_with

OrderKey = tuple[float, int, int]
"""(timestamp, index of the file in the argument list, line): the single-process order."""

UNKNOWN_TIMESTAMP = math.nan


WireItem = tuple[OrderKey, int, int, int, tuple[Any, ...]]
"""One compact request on its way to its bucket: (order, part, ``extends``, ``shared``,
its field values, ``tokenizers.types.request_values``). Where the replay reads ids, a
request that extends its session's previous prompt in the bucket travels with its new ids
only (``extends``: how many it takes from that prompt; ``ordering.ExtensionReceiver``) and
without the leading segments that are that prompt's (``shared`` of them;
:class:`SegmentsSender`). Plain tuples: they pickle without a Python call per request,
and nothing is built on the sending side that is not shipped."""


SessionKey = tuple[str | None, str, str | None]


class SegmentsSender:
    """A request's segments as those it shares with its session's previous request in the
    same channel (a bucket) and the rest.

    An agent's request repeats its session's previous prompt, and the tokenizer hands on the
    previous request's ``Segment`` objects for it (one per tool, message and content part:
    dozens): shipping them all again would cost more than the request's new token ids
    (pickling a segment is a Python object each way). Only leading segments that are the
    very same objects count as shared (``is``: no comparison of values)."""

    def __init__(self) -> None:
        self._latest: dict[tuple[int, SessionKey], tuple[Segment, ...]] = {}

    def split(self, request: TokenizedRequest, channel: int) -> int:
        """How many of ``request``'s leading segments the receiver has already."""
        if request.session is None or not request.segments:
            return 0
        key = (channel, (request.model, request.scope, request.session))
        previous = self._latest.get(key, ())
        segments = request.segments
        self._latest[key] = segments
        shared = 0
        for old, new in zip(previous, segments, strict=False):
            if old is not new:
                break
            shared += 1
        return shared


class SegmentsReceiver:
    """Rebuilds the segments :class:`SegmentsSender` split, fed in the sender's order;
    ``stream`` tells apart the senders feeding one receiver."""

    def __init__(self) -> None:
        self._latest: dict[tuple[int, SessionKey], tuple[Segment, ...]] = {}

    def receive(self, request: TokenizedRequest, shared: int, stream: int) -> tuple[Segment, ...]:
        if request.session is None or (not request.segments and not shared):
            return request.segments
        key = (stream, (request.model, request.scope, request.session))
        segments = request.segments
        if shared:
            previous = self._latest.get(key, ())
            if len(previous) < shared:
                raise ValueError(
                    f"{request.source} line {request.line}: {shared} shared segments,"
                    f" {len(previous)} received before"
                )
            segments = previous[:shared] + segments
        self._latest[key] = segments
        return segments


@dataclass(slots=True)
class PartOutcome:
    """What reading one part found besides its requests."""

    errors: list[LogRecordError]
    requests_by_source: dict[str, int]
    last_timestamp: float  # NaN: no request of the part had a timestamp of its own
    inherits: bool  # some request took its timestamp from before the part
    stages: StageSeconds
    calibration: dict[str, RatioStats] | None = None
    counted_elsewhere: dict[str, int] | None = None  # ``LogReading.counted_elsewhere``


def _timed(stream: LogStream, stages: StageSeconds) -> LogStream:
    """``stream`` with the time spent producing its records added to ``stages.read``."""

    def records(_: LogStream) -> Iterator[LogItem]:
        clock = time.perf_counter
        items = iter(stream)
        while True:
            began = clock()
            item = next(items, None)
            stages.read += clock() - began
            if item is None:
                timed.counted_elsewhere = stream.counted_elsewhere
                return
            yield item

    timed = LogStream(stream.path, stream.format, records, counts_itself=True)
    timed.source = stream.source
    timed.skipped = stream.skipped  # what the file held that is no request, as it is read
    return timed


def _part_requests(
    reading: LogReading, part: LogPart, stages: StageSeconds
) -> Iterator[tuple[int, TokenizedRequest]]:
    """The part's requests, each with the index of its file: one file (or a range of it) in
    file order, or every file merged as ``LogReading.requests`` merges them (the order in
    which the files that share a calibration are read)."""
    log = reading.log
    if part.file_index is None:
        streams = [
            map(
                partial(_tagged, index),
                reading.source_requests(index, _timed_open(log, index, stages, reading.seen)),
            )
            for index in range(len(log.files))
        ]
        return merged_sources(streams, _tagged_timestamp)
    inside = part.lines is not None and part.lines.start > 0
    requests = reading.source_requests(
        part.file_index,
        _timed(_open_part(log, part.file_index, part), stages),
        UNKNOWN_TIMESTAMP if inside else 0.0,
    )
    return map(partial(_tagged, part.file_index), requests)


def _tagged(index: int, request: TokenizedRequest) -> tuple[int, TokenizedRequest]:
    return index, request


def _tagged_timestamp(tagged: tuple[int, TokenizedRequest]) -> float:
    return tagged[1].timestamp


def _timed_open(log: LogInput, index: int, stages: StageSeconds, seen: set[str]) -> LogStream:
    """A whole file of the log, read as one process reads it among the others (``seen``:
    the requests counted in the files read with it, ``LogReading.seen``)."""
    stream = _open_part(log, index, None)
    stream.seen = seen
    return _timed(stream, stages)


def _open_part(log: LogInput, file_index: int, part: LogPart | None) -> LogStream:
    file = log.files[file_index]
    name = log.source_names[file_index]
    if part is None or part.lines is None:
        return open_log(file.path, format=file.format, results=file.results, name=name)
    return open_range(file.path, part.lines, name)


def pack_chunks(chunks: list[list[WireItem]]) -> bytes:
    """A chunk for one replayer, as the bytes Ray stores as they are.

    Why not the lists themselves: Ray serializes an object through msgpack, calling back
    into Python for every value msgpack does not know (each request's tuple), then pickles
    those, and reads them back the same way: measured on the benchmark's agent log, 2.3
    times the CPU of pickling the chunk in one call when storing it and 3.7 times when
    reading it (docs/capacity-plan.md, "Shipping")."""
    return pickle.dumps(chunks, protocol=pickle.HIGHEST_PROTOCOL)


@ray.remote
def tokenize_and_shuffle(
    log: LogInput,
    part: LogPart,
    tokenize_as: str,
    unit: int,
    owners: list[list[int]],
    chunk_requests: int,
    needs: KeyNeeds,
    ids: bool,
) -> Iterator[bytes | PartOutcome]:
    """Yield, per chunk of compact requests, one object per replayer (``owners``: the
    buckets each replayer holds), the lists of its buckets (pickled: :func:`pack_chunks`); then
    the part's outcome. (One object per bucket would cost every bucket a put, a handle and
    a fetch, most of them empty or small.)"""
    buckets = sum(len(owned) for owned in owners)
    # A task holds one CPU: the tokenizer's encoding thread would only contend with the
    # other tasks on the node (unless the environment says otherwise).
    os.environ.setdefault(THREADS_ENV, "1")
    clock = time.perf_counter
    began = clock()
    stages = StageSeconds()
    reading = LogReading(log, tokenize_as)
    requests = _part_requests(reading, part, stages)
    # Where the ids travel the replay's policies key them as in one process (reusing each
    # session's earlier keys): shipping keys besides would only cost their pickling.
    compact = None if ids else Compactor(needs).compact
    packer = PromptPacker() if ids else None
    segments = SegmentsSender()
    chunk: list[list[WireItem]] = [[] for _ in range(buckets)]
    held = 0
    last, inherits = UNKNOWN_TIMESTAMP, False
    shuffled = 0.0
    for file_index, request in requests:
        timestamp = request.timestamp
        if math.isnan(timestamp):
            inherits = True
        else:
            last = timestamp
        bucket = bucket_of(partition_key(request, unit), buckets)
        if compact is not None:
            request = compact(request)
        extends = 0
        node = packer.extension(request, bucket) if packer is not None else None
        shared = segments.split(request, bucket)
        values = request_values(request)
        if node is not None and node.parent is not None:
            extends = node.parent.length
            values = values_with(values, tokens=node.tail, segments=request.segments[shared:])
        elif shared:
            values = values_with(values, segments=request.segments[shared:])
        chunk[bucket].append(
            ((timestamp, file_index, request.line), part.index, extends, shared, values)
        )
        held += 1
        if held >= chunk_requests:
            moved = clock()
            for owned in owners:  # not ``yield from``: Ray resumes with send()
                yield pack_chunks([chunk[bucket] for bucket in owned])
            shuffled += clock() - moved
            chunk = [[] for _ in range(buckets)]
            held = 0
    moved = clock()
    for owned in owners:
        yield pack_chunks([chunk[bucket] for bucket in owned])
    shuffled += clock() - moved
    stages.shuffle = shuffled
    stages.tokenize = clock() - began - stages.read - shuffled
    yield PartOutcome(
        reading.errors,
        {name: count for name, count in reading.requests_by_source.items() if count},
        last,
        inherits,
        stages,
        reading.calibration,
        reading.counted_elsewhere,
    )
