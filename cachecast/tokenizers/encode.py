"""Rendered requests -> token ids, segments and breakpoints, tokenizing each text once.

Why segment-wise encoding is exact for our rendering (tiktoken encodings): every framed part
is ``<start> role <message> text <end>`` and the framing tokens are special tokens. tiktoken
(like every BPE with special tokens) first splits the input at special tokens and encodes the
ordinary text between two of them independently, so encoding the role and the text of each
part on its own and concatenating gives exactly the ids of encoding the whole rendered
request with those specials allowed (``TiktokenTokenizer.framed_encoding``). Non-text inputs
(image placeholders) are boundaries of the same kind. An unframed plain prompt is a single
text and is encoded whole.

Speed: identical parts recur across requests (system prompts, tool schemas, the earlier turns
of a session). :class:`SegmentCache` maps each part (tokenizer namespace, role, content) to
its framed ids, bounded by a total token budget with least-recently-used eviction.

The second core: a batch's cache misses are encoded on a background thread
(:meth:`BatchEncoder.begin_batch`) while the caller parses and renders the next batch, and
collected by :meth:`BatchEncoder.end_batch`. tiktoken's Rust encoder releases the GIL, so
the thread runs in parallel with Python work, with no fork and no copying of texts or ids
between processes (a process pool measured no faster than one process on this 2-core host:
its transfers and start-up ate the gain).
"""

from __future__ import annotations

import os
from array import array
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from cachecast.core.errors import ConfigurationError, Location
from cachecast.tokenizers.base import NON_TEXT_ID_BASE, NON_TEXT_ID_SPAN, TiktokenTokenizer
from cachecast.tokenizers.render import NO_BREAKPOINT, NonText, PartItem, Rendered, RenderedPart
from cachecast.tokenizers.types import Breakpoint, Segment

DEFAULT_CACHE_TOKENS = 32_000_000  # ~128 MB of uint32 ids
# A part unused for this long in the log's time (``SegmentCache.now``) is dropped as well: the
# cache then holds what the traffic still sends (system prompts, tools, live conversations),
# not every part of a long log, whose texts and ids would fill the token budget.
IDLE_SECONDS = 3600.0


PartKey = tuple[str, str | None, tuple[PartItem, ...]]


def part_key(namespace: str, part: RenderedPart) -> PartKey:
    """The cache key of a part: tokenizer namespace, role (framed parts) and the content.

    Keyed by the content itself rather than a digest of it: a dict lookup is content-addressed
    with no collision possible (equal hash, then full equality), and Python's string hash is
    cheaper than a cryptographic digest of every part of every request.
    """
    return (namespace, part.role if part.framed else None, tuple(part.items))


class SegmentCache:
    """Content-addressed token ids, bounded by the total number of cached tokens (LRU) and
    by idleness in the log's time: the reader sets :attr:`now` to the latest timestamp it
    has read, and a part unused for :data:`IDLE_SECONDS` of it is dropped."""

    def __init__(
        self, max_tokens: int = DEFAULT_CACHE_TOKENS, idle_seconds: float = IDLE_SECONDS
    ) -> None:
        self.max_tokens = max_tokens
        self.idle_seconds = idle_seconds
        self.now = 0.0
        self._entries: OrderedDict[PartKey, array[int]] = OrderedDict()
        self._used: dict[PartKey, float] = {}  # last use, in the log's time
        self._tokens = 0
        self.hits = 0
        self.misses = 0

    def get(self, key: PartKey) -> array[int] | None:
        found = self._entries.get(key)
        if found is not None:
            self._entries.move_to_end(key)
            self._used[key] = self.now
            self.hits += 1
        return found

    def put(self, key: PartKey, ids: array[int]) -> None:
        if key in self._entries or len(ids) > self.max_tokens:
            return
        entries = self._entries
        entries[key] = ids
        self._used[key] = self.now
        self._tokens += len(ids)
        idle_before = self.now - self.idle_seconds
        while self._tokens > self.max_tokens or self._used[next(iter(entries))] < idle_before:
            evicted_key, evicted = entries.popitem(last=False)  # never the one just put
            del self._used[evicted_key]
            self._tokens -= len(evicted)


@dataclass(slots=True)
class Encoded:
    tokens: array[int]
    segments: tuple[Segment, ...]
    breakpoints: tuple[Breakpoint, ...]
    implicit_offset: int | None = None  # OpenAI: end of the newest message a breakpoint fits


@dataclass(slots=True)
class PendingBatch:
    """A batch whose cache misses are being encoded (see :meth:`BatchEncoder.begin_batch`)."""

    batch: Sequence[Rendered]
    found: dict[PartKey, array[int]]
    missed: dict[PartKey, RenderedPart]
    texts: list[str]
    encoded: Future[list[array[int]]] | list[array[int]]


class BatchEncoder:
    """Encodes batches of rendered requests with one tokenizer, sharing a segment cache.

    ``workers``: 2 or more encodes the misses on a background thread, 1 in the caller's.
    """

    def __init__(
        self,
        tokenizer: TiktokenTokenizer,
        cache: SegmentCache | None = None,
        workers: int | None = None,
    ) -> None:
        self.tokenizer = tokenizer
        self.cache = cache if cache is not None else SegmentCache()
        self.workers = workers if workers is not None else _default_workers()
        self._thread: ThreadPoolExecutor | None = None
        # Threads that encode shares of a batch beside self._thread (never the same pool: a
        # task waiting on its own pool could deadlock when two batches are in flight).
        self._helpers: ThreadPoolExecutor | None = None
        framing = tokenizer.framing
        self._start = framing.start[1]
        self._message = framing.message[1]
        self._end = framing.end[1]
        self._priming: array[int] | None = None

    def close(self) -> None:
        if self._thread is not None:
            self._thread.shutdown()
            self._thread = None
        if self._helpers is not None:
            self._helpers.shutdown()
            self._helpers = None

    def encode_batch(self, batch: Sequence[Rendered]) -> list[Encoded]:
        return self.end_batch(self.begin_batch(batch))

    def begin_batch(self, batch: Sequence[Rendered]) -> PendingBatch:
        """Look every part up and start encoding the texts of the missed ones. Batches must
        end in the order they began (a request may take over an earlier one's ids)."""
        namespace = self.tokenizer.cache_namespace
        # Pass 1: look every part up (framing included); collect the texts of missed parts.
        found: dict[PartKey, array[int]] = {}
        missed: dict[PartKey, RenderedPart] = {}
        texts: dict[str, None] = {}
        for rendered in batch:
            for part in rendered.parts:
                key = part_key(namespace, part)
                if key in found or key in missed:
                    continue
                ids = self.cache.get(key)
                if ids is not None:
                    found[key] = ids
                    continue
                missed[key] = part
                if part.framed and part.role:
                    texts[part.role] = None
                for item in part.items:
                    if isinstance(item, str) and item:
                        texts[item] = None
            if rendered.reply_priming:
                texts.setdefault("assistant", None)
        text_list = list(texts)
        encoded: Future[list[array[int]]] | list[array[int]]
        if not text_list:
            encoded = []
        elif self.workers < 2:
            encoded = self._encode_texts(text_list)
        else:
            if self._thread is None:
                self._thread = ThreadPoolExecutor(1, thread_name_prefix="cachecast-encode")
            encoded = self._thread.submit(self._encode_parallel, text_list)
        return PendingBatch(batch, found, missed, text_list, encoded)

    def end_batch(self, pending: PendingBatch) -> list[Encoded]:
        """Wait for the batch's misses, cache them and assemble each request's ids."""
        namespace = self.tokenizer.cache_namespace
        found = pending.found
        if pending.missed:
            self.cache.misses += len(pending.missed)
            results = pending.encoded
            if isinstance(results, Future):
                results = results.result()
            encoded = dict(zip(pending.texts, results, strict=True))
            for key, part in pending.missed.items():
                ids = found.get(key) or self.cache.get(key)
                if ids is None:
                    ids = self._part_ids(part, encoded)
                    self.cache.put(key, ids)
                found[key] = ids
        if self._priming is None:
            self._priming = array("I", [self._start, *self.tokenizer.encode("assistant")])
            self._priming.append(self._message)
        # Each request is the ids taken over from an earlier one plus its parts' ids.
        return [self._assemble(rendered, found, namespace) for rendered in pending.batch]

    def _part_ids(self, part: RenderedPart, encoded: dict[str, array[int]]) -> array[int]:
        ids: array[int] = array("I")
        if part.framed:
            ids.append(self._start)
            if part.role:
                ids.extend(encoded[part.role])
            ids.append(self._message)
        for item in part.items:
            if isinstance(item, NonText):
                ids.extend(item.ids(NON_TEXT_ID_BASE, NON_TEXT_ID_SPAN))
            elif item:
                ids.extend(encoded[item])
        if part.framed:
            ids.append(self._end)
        return ids

    def _assemble(
        self, rendered: Rendered, found: dict[PartKey, array[int]], namespace: str
    ) -> Encoded:
        """The request's ids: the ids taken over from an earlier request of the conversation
        (``rendered.prefix``, assembled before this one: file order), then each part's."""
        previous = rendered.prefix
        if previous is not None:
            assert previous.encoded_tokens is not None, "a prefix is assembled before its use"
            taken = rendered.prefix_parts
            taken_segments = previous.encoded_segments[:taken]
            tokens: array[int] = previous.encoded_tokens[: taken_segments[-1].end if taken else 0]
            segments = list(taken_segments)
            breakpoints = list(previous.encoded_explicit_breakpoints[: rendered.prefix_breakpoints])
            rendered.prefix = None  # keep no chain of earlier requests alive
        else:
            tokens = array("I")
            segments = []
            breakpoints = []
        for part in rendered.parts:
            start = len(tokens)
            tokens.extend(found[part_key(namespace, part)])
            segments.append(Segment(part.kind, part.label, start, len(tokens)))
            if part.inner_breakpoints:
                breakpoints.extend(self._inner_breakpoints(part, start))
            if part.breakpoint_ttl != NO_BREAKPOINT:
                breakpoints.append(Breakpoint(len(tokens), part.breakpoint_ttl))
        explicit = tuple(breakpoints)
        if rendered.auto_breakpoint_part >= 0:
            offset = segments[rendered.auto_breakpoint_part].end
            automatic = Breakpoint(offset, rendered.auto_breakpoint_ttl)
            breakpoints.append(automatic)
            breakpoints.sort(key=lambda breakpoint: breakpoint.offset)
        if rendered.reply_priming and segments:
            assert self._priming is not None
            start = len(tokens)
            tokens.extend(self._priming)
            segments.append(Segment("template", "reply_priming", start, len(tokens)))
        implicit = None
        if 0 <= rendered.implicit_part < len(segments):
            implicit = segments[rendered.implicit_part].end
        result = Encoded(tokens, tuple(segments), tuple(breakpoints), implicit)
        if rendered.body is not None:  # a conversation: later requests may take this over
            rendered.encoded_tokens = tokens
            rendered.encoded_segments = result.segments
            rendered.encoded_explicit_breakpoints = explicit
        return result

    def _inner_breakpoints(self, part: RenderedPart, start: int) -> list[Breakpoint]:
        """Breakpoints after some of a part's items (OpenAI content-part marks): the part's
        framing before its text, then the items' own lengths (each item is encoded alone,
        so the sum is exact). Rare, so the items are simply encoded again here."""
        position = start
        if part.framed:
            position += 2 + (len(self.tokenizer.encode(part.role)) if part.role else 0)
        lengths = [
            item.count if isinstance(item, NonText) else len(self.tokenizer.encode(item))
            for item in part.items
        ]
        found = []
        for after, ttl in part.inner_breakpoints:
            offset = position + sum(lengths[:after])
            if offset > start:
                found.append(Breakpoint(offset, ttl))
        return found

    def _encode_parallel(self, texts: list[str]) -> list[array[int]]:
        # tiktoken releases the GIL while it encodes, so a batch's misses are split into
        # shares: this thread encodes the first, helper threads the others, in parallel.
        shares = min(self.workers, len(texts) // 8)
        if shares < 2:
            return self._encode_texts(texts)
        if self._helpers is None:
            self._helpers = ThreadPoolExecutor(
                self.workers - 1, thread_name_prefix="cachecast-encode-share"
            )
        size = -(-len(texts) // shares)
        chunks = [texts[start : start + size] for start in range(0, len(texts), size)]
        others = [self._helpers.submit(self._encode_texts, chunk) for chunk in chunks[1:]]
        first = self._encode_texts(chunks[0])
        return first + [ids for future in others for ids in future.result()]

    def _encode_texts(self, texts: list[str]) -> list[array[int]]:
        # One call per text: joining the texts around a special token and encoding them in
        # one call gave the same ids but measured 1.3-1.7x slower here (tiktoken's path
        # for allowed specials), so it was dropped.
        encode = self.tokenizer.encode
        return [array("I", encode(text)) for text in texts]


THREADS_ENV = "CACHECAST_TOKENIZER_THREADS"


def _default_workers() -> int:
    """2 (the encoding thread) when a core is idle now, else 1: on a host whose cores are
    all busy the thread only adds hand-offs (measured: 5-15% slower at load 2-5 on 2 cores).

    ``CACHECAST_TOKENIZER_THREADS`` fixes the number instead (1: encode in the caller's
    thread; what a process sharing its cores with others, or a benchmark, may want)."""
    fixed = os.environ.get(THREADS_ENV, "").strip()
    if fixed:
        try:
            return max(int(fixed), 1)
        except ValueError:
            raise ConfigurationError(
                f"must be a whole number, got {fixed!r}", location=Location(source=THREADS_ENV)
            ) from None
    cores = os.cpu_count() or 1
    if cores < 2:
        return 1
    return 2 if os.getloadavg()[0] < cores - 0.5 else 1


def rendered_text(rendered: Rendered, tokenizer: TiktokenTokenizer) -> str:
    """The whole request as one string with framing markers: what the baseline encodes with
    ``tokenizer.framed_encoding.encode(text, allowed_special="all")``. Text-only requests."""
    framing = tokenizer.framing
    pieces: list[str] = []
    for part in rendered.parts:
        if part.framed:
            pieces += [framing.start[0], part.role, framing.message[0]]
        for item in part.items:
            if isinstance(item, NonText):
                raise ValueError(f"{part.label}: non-text input has no text rendering")
            pieces.append(item)
        if part.framed:
            pieces.append(framing.end[0])
    if rendered.reply_priming and rendered.parts:
        pieces += [framing.start[0], "assistant", framing.message[0]]
    return "".join(pieces)
