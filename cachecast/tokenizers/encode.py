"""Rendered requests -> token ids, segments and breakpoints, tokenizing each text once.

Why segment-wise encoding is exact for our rendering (tiktoken encodings): every framed part
is ``<start> role <message> text <end>`` and the framing tokens are special tokens. tiktoken
(like every BPE with special tokens) first splits the input at special tokens and encodes the
ordinary text between two of them independently, so encoding the role and the text of each
part on its own and concatenating gives exactly the ids of encoding the whole rendered
request with those specials allowed (``TiktokenTokenizer.framed_encoding``). Non-text inputs
(image placeholders) are boundaries of the same kind. An unframed plain prompt is a single
text and is encoded whole.

Speed: identical texts recur across requests (system prompts, tool schemas, the earlier turns
of a session). :class:`SegmentCache` maps ``(tokenizer namespace, text)`` to the ids, bounded by
a total token budget with least-recently-used eviction. Cache misses of a batch of requests
are encoded in a process pool (fork: workers inherit the loaded encoding) when they are
large enough to pay for the transfer, else in process.
"""

from __future__ import annotations

import multiprocessing
import os
from array import array
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

from cachecast.tokenizers.base import NON_TEXT_ID_BASE, NON_TEXT_ID_SPAN, TiktokenTokenizer
from cachecast.tokenizers.render import NO_BREAKPOINT, NonText, Rendered
from cachecast.tokenizers.types import Breakpoint, Segment

DEFAULT_CACHE_TOKENS = 32_000_000  # ~128 MB of uint32 ids
POOL_MIN_CHARS = 400_000  # below this a batch's misses are encoded in process


def text_key(namespace: str, text: str) -> tuple[str, str]:
    """The cache key of ``text``: the text itself with the tokenizer's namespace.

    A dict keyed by the string is content-addressed with no collision possible (equal hash
    and then full equality), and Python's string hash is cheaper than a cryptographic
    digest of every segment of every request.
    """
    return (namespace, text)


class SegmentCache:
    """Content-addressed token ids, bounded by the total number of cached tokens (LRU)."""

    def __init__(self, max_tokens: int = DEFAULT_CACHE_TOKENS) -> None:
        self.max_tokens = max_tokens
        self._entries: OrderedDict[tuple[str, str], array[int]] = OrderedDict()
        self._tokens = 0
        self.hits = 0
        self.misses = 0

    def get(self, key: tuple[str, str]) -> array[int] | None:
        found = self._entries.get(key)
        if found is not None:
            self._entries.move_to_end(key)
            self.hits += 1
        return found

    def put(self, key: tuple[str, str], ids: array[int]) -> None:
        if key in self._entries or len(ids) > self.max_tokens:
            return
        self._entries[key] = ids
        self._tokens += len(ids)
        while self._tokens > self.max_tokens:
            _, evicted = self._entries.popitem(last=False)
            self._tokens -= len(evicted)


@dataclass(slots=True)
class Encoded:
    tokens: array[int]
    segments: tuple[Segment, ...]
    breakpoints: tuple[Breakpoint, ...]


class BatchEncoder:
    """Encodes batches of rendered requests with one tokenizer, sharing a segment cache."""

    def __init__(
        self,
        tokenizer: TiktokenTokenizer,
        cache: SegmentCache | None = None,
        workers: int | None = None,
    ) -> None:
        self.tokenizer = tokenizer
        self.cache = cache if cache is not None else SegmentCache()
        self.workers = workers if workers is not None else min(2, os.cpu_count() or 1)
        self._pool: ProcessPoolExecutor | None = None
        framing = tokenizer.framing
        self._start = framing.start[1]
        self._message = framing.message[1]
        self._end = framing.end[1]

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def encode_batch(self, batch: Sequence[Rendered]) -> list[Encoded]:
        namespace = self.tokenizer.cache_namespace
        # Pass 1: resolve every text through the cache; collect distinct misses.
        resolved: dict[tuple[str, str], array[int]] = {}
        misses: dict[tuple[str, str], str] = {}
        for rendered in batch:
            for part in rendered.parts:
                texts = [part.role, *part.items] if part.framed else list(part.items)
                for item in texts:
                    if isinstance(item, str) and item:
                        key = text_key(namespace, item)
                        if key in resolved or key in misses:
                            continue
                        found = self.cache.get(key)
                        if found is None:
                            misses[key] = item
                        else:
                            resolved[key] = found
        if misses:
            self.cache.misses += len(misses)
            for key, ids in zip(misses, self._encode_texts(list(misses.values())), strict=True):
                resolved[key] = ids
                self.cache.put(key, ids)
        # Pass 2: assemble each request from its parts.
        return [self._assemble(rendered, resolved, namespace) for rendered in batch]

    def _assemble(
        self, rendered: Rendered, resolved: dict[tuple[str, str], array[int]], namespace: str
    ) -> Encoded:
        tokens: array[int] = array("I")
        segments: list[Segment] = []
        breakpoints: list[Breakpoint] = []
        for part in rendered.parts:
            start = len(tokens)
            if part.framed:
                tokens.append(self._start)
                tokens.extend(resolved[text_key(namespace, part.role)] if part.role else ())
                tokens.append(self._message)
            for item in part.items:
                if isinstance(item, NonText):
                    tokens.extend(item.ids(NON_TEXT_ID_BASE, NON_TEXT_ID_SPAN))
                elif item:
                    tokens.extend(resolved[text_key(namespace, item)])
            if part.framed:
                tokens.append(self._end)
            segments.append(Segment(part.kind, part.label, start, len(tokens)))
            if part.breakpoint_ttl != NO_BREAKPOINT:
                breakpoints.append(Breakpoint(len(tokens), part.breakpoint_ttl))
        if rendered.reply_priming and rendered.parts:
            start = len(tokens)
            tokens.append(self._start)
            tokens.extend(self._role_ids("assistant", resolved, namespace))
            tokens.append(self._message)
            segments.append(Segment("template", "reply_priming", start, len(tokens)))
        return Encoded(tokens, tuple(segments), tuple(breakpoints))

    def _role_ids(
        self, role: str, resolved: dict[tuple[str, str], array[int]], namespace: str
    ) -> array[int]:
        key = text_key(namespace, role)
        found = resolved.get(key) or self.cache.get(key)
        if found is None:
            found = array("I", self.tokenizer.encode(role))
            self.cache.put(key, found)
        return found

    def _encode_texts(self, texts: list[str]) -> list[array[int]]:
        total = sum(len(text) for text in texts)
        if self.workers < 2 or total < POOL_MIN_CHARS or len(texts) < 2:
            return [array("I", self.tokenizer.encode(text)) for text in texts]
        if self._pool is None:
            self._pool = ProcessPoolExecutor(
                max_workers=self.workers,
                mp_context=multiprocessing.get_context("fork"),
                initializer=_worker_init,
                initargs=(self.tokenizer.key,),
            )
        chunks = _balanced_chunks(texts, self.workers * 4)
        results: list[array[int]] = []
        for encoded_chunk in self._pool.map(_worker_encode, chunks):
            for raw in encoded_chunk:
                ids: array[int] = array("I")
                ids.frombytes(raw)
                results.append(ids)
        return results


def _balanced_chunks(texts: list[str], count: int) -> list[list[str]]:
    """Consecutive chunks of about equal total length (order preserved)."""
    target = max(1, sum(len(text) for text in texts) // count)
    chunks: list[list[str]] = [[]]
    size = 0
    for text in texts:
        if size >= target:
            chunks.append([])
            size = 0
        chunks[-1].append(text)
        size += len(text)
    return chunks


_WORKER_TOKENIZER: TiktokenTokenizer | None = None


def _worker_init(key: str) -> None:
    global _WORKER_TOKENIZER
    from cachecast.tokenizers.registry import tokenizer_for_key

    tokenizer = tokenizer_for_key(key)
    assert isinstance(tokenizer, TiktokenTokenizer)
    _WORKER_TOKENIZER = tokenizer


def _worker_encode(texts: list[str]) -> list[bytes]:
    assert _WORKER_TOKENIZER is not None
    return [array("I", _WORKER_TOKENIZER.encode(text)).tobytes() for text in texts]


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
