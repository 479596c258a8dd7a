"""vLLM automatic prefix caching with an unbounded pool, in a few bytes per cached block.

A pool that never evicts (``VllmPrefixCache(block_size, None)``: the capacity curve's
"unbounded" point, an unbounded host tier) keeps every full block of the log. Its answers
need far less than vLLM's block bookkeeping (``policies/vllm.py``): with no eviction and
every request admitted, a lookup is "how many leading full-block keys of the prompt were
ever cached", capped as vLLM caps it (at most ``len - 1`` tokens, and for hybrid models a
multiple of lcm(block, checkpoint)); the writes are the full blocks past the hit (vLLM
recomputes and caches again a block the cap left out, as a duplicate). Which block holds a
key, the free queue's order and duplicates change no result here, so only the set of keys
ever cached is kept.

The set is an LSM tree: a small Python set of recent keys, and below it sorted numpy arrays
of fixed-width keys (``S<width>``: 16 bytes per 16-byte key, ``simulator/blocks.py``), each
at least twice the size of the next younger one, so a log of N blocks has about log2(N)
arrays, and a lookup is one vectorised binary search per array. Keys of one width share one
tree; any other width (block-level traces' keys are 32 bytes) gets its own, so no key is
ever compared with a key of another length (a numpy bytes array pads with NULs, which is
exact only within one width).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from cachecast.simulator.blocks import BlockKey, BlockKeyer
from cachecast.simulator.policies.base import (
    SELF_HOSTED_WRITE,
    CachePolicy,
    empty_usage,
    hit_alignment,
)
from cachecast.simulator.policies.vllm import UNBOUNDED_BLOCKS, block_usage
from cachecast.simulator.types import RequestUsage
from cachecast.tokenizers.types import TokenizedRequest

# Recent keys kept as Python objects before they are sorted into an array: large enough that
# flushes are rare, small enough (a few MB) not to matter next to the arrays of a long log.
RECENT_KEYS = 1 << 15

BoolArray = npt.NDArray[np.bool_]


class KeySet:
    """Every key ever added, exactly: membership of many keys at once (see the module
    docstring)."""

    def __init__(self, recent_keys: int = RECENT_KEYS) -> None:
        if recent_keys <= 0:
            raise ValueError("recent_keys must be positive")
        self.recent_keys = recent_keys
        self._recent: set[BlockKey] = set()
        # width -> sorted arrays of distinct keys, oldest (largest) first
        self._levels: dict[int, list[npt.NDArray[np.bytes_]]] = {}

    def __len__(self) -> int:
        """Distinct keys held (a key kept in two places, before a merge, counts once)."""
        self._flush()
        for width in self._levels:
            self._merge(width, everything=True)
        arrays = sum(level.size for levels in self._levels.values() for level in levels)
        return arrays + len(self._recent)  # the empty key, if added, stays in the set

    def stored_bytes(self) -> int:
        """The arrays' bytes (the recent set aside): the size of the tree."""
        return sum(level.nbytes for levels in self._levels.values() for level in levels)

    def contains(self, keys: list[BlockKey]) -> BoolArray:
        """For each of ``keys``, whether it was ever added."""
        recent = self._recent
        found = np.fromiter(map(recent.__contains__, keys), dtype=np.bool_, count=len(keys))
        if not self._levels or found.all():
            return found
        missing = np.flatnonzero(~found)
        widths = set(map(len, keys))
        if len(widths) == 1:
            (width,) = widths
            query = np.frombuffer(b"".join(keys), dtype=f"S{width}")[missing]
            found[missing] = self._search(width, query)
            return found
        for index in missing.tolist():  # mixed widths: only a hand-made log has them
            key = keys[index]
            found[index] = bool(self._search(len(key), np.array([key], dtype=f"S{len(key)}"))[0])
        return found

    def add(self, keys: list[BlockKey]) -> None:
        self._recent.update(keys)
        if len(self._recent) >= self.recent_keys:
            self._flush()

    def _search(self, width: int, query: npt.NDArray[np.bytes_]) -> BoolArray:
        found = np.zeros(query.size, dtype=np.bool_)
        for level in self._levels.get(width, ()):
            spot = np.searchsorted(level, query)
            np.minimum(spot, level.size - 1, out=spot)
            found |= level[spot] == query
        return found

    def _flush(self) -> None:
        """Move the recent keys into a new sorted array per width, then merge."""
        if not self._recent:
            return
        by_width: dict[int, list[BlockKey]] = {}
        for key in self._recent:
            by_width.setdefault(len(key), []).append(key)
        self._recent = set()
        for width, keys in by_width.items():
            if width == 0:  # no numpy bytes dtype is 0 wide; one empty key is all there is
                self._recent.add(b"")
                continue
            keys.sort()  # bytes order is numpy's order within one width
            level = np.frombuffer(b"".join(keys), dtype=f"S{width}")
            self._levels.setdefault(width, []).append(level)
            self._merge(width)

    def _merge(self, width: int, *, everything: bool = False) -> None:
        """Merge the youngest arrays while the older is not twice the younger's size
        (``everything``: into one). Merging drops keys added again since their flush."""
        levels = self._levels[width]
        while len(levels) >= 2 and (everything or levels[-2].size <= 2 * levels[-1].size):
            younger = levels.pop()
            levels[-1] = np.unique(np.concatenate((levels[-1], younger)))


class NeverEvictingVllmCache(CachePolicy):
    """Gives every request exactly the usage ``VllmPrefixCache(block_size, None)`` gives it,
    keeping only the set of cached keys (see the module docstring)."""

    name = "vllm"

    def __init__(
        self,
        block_size: int = 16,
        *,
        state_checkpoint_tokens: int | None = None,
        write_bucket: str = SELF_HOSTED_WRITE,
        recent_keys: int = RECENT_KEYS,
    ) -> None:
        if block_size <= 0:
            raise ValueError("block_size must be positive")
        self.block_size = block_size
        self.num_blocks = UNBOUNDED_BLOCKS
        self.alignment = hit_alignment(block_size, state_checkpoint_tokens)
        self.write_bucket = write_bucket
        self.keyer = BlockKeyer(block_size)
        self.keys = KeySet(recent_keys)
        self._keyed_blocks = 0  # blocks ever keyed, duplicates included

    @property
    def usable_blocks(self) -> int:
        return self.num_blocks - 1

    def cached_block_count(self) -> int:
        """Keyed blocks, as ``VllmPrefixCache`` counts them: a key cached twice (vLLM does
        not de-duplicate) counts twice; nothing is ever evicted."""
        return self._keyed_blocks

    def _hit_blocks(self, length: int, keys: list[BlockKey]) -> int:
        lookups = keys[: (length - 1) // self.block_size]
        if not lookups:
            return 0
        found = self.keys.contains(lookups)
        hit_blocks = len(lookups) if found.all() else int(found.argmin())
        return hit_blocks * self.block_size // self.alignment * self.alignment // self.block_size

    def peek_hit_tokens(self, request: TokenizedRequest) -> int:
        """The hit ``process`` would give ``request`` now, changing nothing (for routers)."""
        length = request.input_tokens
        if length <= 0:
            return 0
        return self._hit_blocks(length, self.keyer.keys(request)) * self.block_size

    def process(self, request: TokenizedRequest) -> RequestUsage:
        length = request.input_tokens
        if length <= 0:
            return empty_usage(request)
        keys = self.keyer.keys(request)
        hit_count = self._hit_blocks(length, keys)
        full = len(keys)
        if full > hit_count:
            self.keys.add(keys[hit_count:])
            self._keyed_blocks += full - hit_count
        size = self.block_size
        return block_usage(request, hit_count * size, (full - hit_count) * size, self.write_bucket)
