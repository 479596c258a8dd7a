"""Self-hosted vLLM automatic prefix caching, block for block as vLLM 0.32's v1 manager.

Mirrors ``vllm/v1/core`` (kv_cache_manager, block_pool, single_type_kv_cache_manager,
kv_cache_utils) for one full-attention KV cache group with prefix caching on; the free-block
queue (kv_cache_utils' ``FreeKVCacheBlockQueue``) is :mod:`vllm_free_queue`'s:

- ``num_blocks`` blocks; block 0 is the null block, so ``num_blocks - 1`` are usable.
- Only full blocks are cached, keyed by the chained block key. A lookup walks the keys
  from the start and stops at the first miss; it may cover at most ``len - 1`` tokens
  (the last prompt token is always recomputed for its logits), so the hit is
  ``floor((len - 1) / block_size)`` blocks at most.
- Equal keys may live in several blocks (vLLM does not de-duplicate); a lookup takes the
  earliest cached one still present.
- Hit blocks leave the free queue; new blocks are taken from the front of the free queue,
  and a reused block loses its old key only then (lazy eviction).
- Blocks that became full are cached at allocation; on finish the request's blocks are
  freed tail first: blocks without a key (the partial tail) go to the front of the free
  queue, keyed blocks to the back in that reversed order. Hence LRU across requests and,
  within one request, the deepest block is evicted first.
- A request needing more blocks than the pool has is never admitted (vLLM's
  ``allocate_slots`` returns None before changing anything): it is counted as uncached
  and leaves the cache untouched.

Requests run one at a time (prefill only: generated tokens are not added to the cache,
since a log gives their count, not their ids). ``state_checkpoint_tokens`` models hybrid
models: the hit is trimmed to a multiple of lcm(block, checkpoint), as vLLM trims a hit
to its ``alignment_tokens``.
"""

from __future__ import annotations

import math
import sys
from collections import deque
from itertools import repeat

from cachecast.simulator.blocks import REMEMBERED_IDLE_SECONDS, BlockKey, BlockKeyer
from cachecast.simulator.policies.base import (
    SELF_HOSTED_WRITE,
    CachePolicy,
    empty_usage,
    hit_alignment,
    make_usage,
)
from cachecast.simulator.policies.vllm_free_queue import FreeBlockQueue
from cachecast.simulator.types import RequestUsage
from cachecast.tokenizers.types import TokenizedRequest

UNBOUNDED_BLOCKS = 1 << 62


def block_usage(request: TokenizedRequest, read: int, written: int, bucket: str) -> RequestUsage:
    """The record make_usage would build, built directly (this runs per request): read +
    written <= the request's blocks' tokens, so uncached = input - read - written >= 0."""
    length = request.input_tokens
    return RequestUsage(
        request_id=request.request_id,
        line=request.line,
        timestamp=request.timestamp,
        scope=request.scope,
        input_tokens=length,
        output_tokens=request.output_tokens,
        cache_read_tokens=read,
        cache_write_tokens={bucket: written} if written else {},
        uncached_input_tokens=length - read - written,
    )


class VllmPrefixCache(CachePolicy):
    """vLLM v1 automatic prefix caching over ``num_blocks`` blocks of ``block_size`` tokens."""

    name = "vllm"
    remembered_sessions = 4096

    def __init__(
        self,
        block_size: int = 16,
        num_blocks: int | None = None,
        *,
        state_checkpoint_tokens: int | None = None,
        write_bucket: str = SELF_HOSTED_WRITE,
    ) -> None:
        if block_size <= 0:
            raise ValueError("block_size must be positive")
        total = UNBOUNDED_BLOCKS if num_blocks is None else num_blocks
        if total < 2:
            raise ValueError("num_blocks must be at least 2 (block 0 is vLLM's null block)")
        self.block_size = block_size
        self.num_blocks = total
        self.alignment = hit_alignment(block_size, state_checkpoint_tokens)
        self.write_bucket = write_bucket
        self.keyer = BlockKeyer(block_size)
        self.free_queue = FreeBlockQueue(1, total)
        # key -> the oldest block holding it; younger duplicates (vLLM does not
        # de-duplicate) wait in ``_duplicates`` in insertion order.
        self._block_of_key: dict[BlockKey, int] = {}
        self._table_bytes = sys.getsizeof(self._block_of_key)  # see ``_table_resized``
        self._keyed_since_copy = 0
        self._duplicates: dict[BlockKey, list[int]] = {}
        # session -> (its last key, the blocks holding its keys, the run number they left in,
        # when it was kept), least recently kept first. A shortcut only (see
        # ``_remembered_hits``): forgetting an entry changes no result, so sessions idle for
        # ``REMEMBERED_IDLE_SECONDS`` of log time go, and the memory follows the live sessions.
        self._last_run: dict[
            tuple[str | None, str, str | None], tuple[BlockKey, list[int], int, float]
        ] = {}
        self._newest = -math.inf  # the latest request time seen

    @property
    def usable_blocks(self) -> int:
        return self.num_blocks - 1

    def free_block_order(self) -> list[int]:
        """The free queue front to back (first evicted first), as vLLM lists it."""
        return list(self.free_queue)

    def cached_block_count(self) -> int:
        return self.free_queue.keyed  # between requests every keyed block is free

    def peek_hit_tokens(self, request: TokenizedRequest) -> int:
        """The hit ``process`` would give ``request`` now, changing nothing (for routers)."""
        length = request.input_tokens
        if length <= 0 or -(-length // self.block_size) > len(self.free_queue):
            return 0
        keys = self.keyer.keys(request)  # memoises per session; keys are pure
        lookups = keys[: (length - 1) // self.block_size]
        found = list(map(self._block_of_key.get, lookups, repeat(-1)))
        hit_blocks = found.index(-1) if -1 in found else len(found)
        return hit_blocks * self.block_size // self.alignment * self.alignment

    def process(self, request: TokenizedRequest) -> RequestUsage:
        length = request.input_tokens
        if length <= 0:
            return empty_usage(request)
        block_size = self.block_size
        keys = self.keyer.keys(request)
        full = len(keys)
        needed = -(-length // block_size)
        queue = self.free_queue
        if needed > len(queue):
            return make_usage(request, 0, {})  # never admitted: nothing changes

        # Lookup: longest run of cached full blocks, at most len - 1 tokens. The C-level
        # map/index pair replaces a Python loop: this is the hot path of agent traffic.
        # (-1 marks a miss: int == int is cheaper for list.index than int == None. A
        # final -1 spares the ValueError of a lookup that hits up to the limit.)
        limit = (length - 1) // block_size
        session = (request.model, request.scope, request.session)
        # The shortcut reads one key for the whole prefix, which holds for chained keys
        # (computed from token ids); a trace's block ids are taken as they are, so a
        # malformed trace (equal ids after different ones) is looked up block by block.
        chained = request.block_keys is None
        found = self._remembered_hits(session, keys, limit) if chained else []
        remembered = len(found)
        block_of_key = self._block_of_key
        # A session's new turn usually misses right after its resent prefix: one probe
        # settles that before mapping the rest.
        if remembered < limit and keys[remembered] in block_of_key:
            found += map(block_of_key.get, keys[remembered:limit], repeat(-1))
            found.append(-1)
            hit_count = found.index(-1, remembered)
        else:
            hit_count = remembered
        hit_count = hit_count * block_size // self.alignment * self.alignment // block_size
        hits = found if hit_count == len(found) else found[:hit_count]
        pieces = queue.remove_hits(hits)  # touch

        # Allocate from the front of the free queue; a reused block loses its old key.
        taken, evicted_keys = queue.take(needed - hit_count)
        if evicted_keys:
            self._evict_keys(taken[len(taken) - len(evicted_keys) :], evicted_keys)
        newly_keyed = taken[: full - hit_count]
        # the blocks that are now full
        each_oldest = self._cache(keys[hit_count:full], newly_keyed)
        self._keyed_since_copy += len(newly_keyed)
        if sys.getsizeof(self._block_of_key) != self._table_bytes:
            self._table_resized()

        # Finish: free tail first; the unkeyed partial tail (if any) goes to the front,
        # keyed blocks to the back, deepest first.
        if needed > full:
            queue.prepend(taken[-1])
        first_sequence = queue.append_runs(newly_keyed, hits, keys, pieces)
        # Remembered only if each block is the oldest of its key (hits are; new blocks
        # are when none became a duplicate).
        if request.timestamp > self._newest:
            self._newest = request.timestamp
        self._remember(session, keys, hits + newly_keyed if each_oldest else [], first_sequence)
        return block_usage(
            request, hit_count * block_size, (full - hit_count) * block_size, self.write_bucket
        )

    def _remembered_hits(
        self, session: tuple[str | None, str, str | None], keys: list[BlockKey], limit: int
    ) -> list[int]:
        """The lookup result for a leading part of ``keys``, known without looking up.

        A session's previous request left its blocks in runs numbered from some
        ``sequence`` on, each block the oldest holding its key (``_remember`` checks this).
        Keys are chained, so when this request's key at the depth of that request's last
        block is the same, so are all keys before it. Later requests may move those blocks
        to newer runs (a shared prefix hit by another session) but never to older ones,
        and a block loses its key only when it is taken from the queue, which happens
        front first, in run order. So while no block was ever taken from a run numbered
        ``sequence`` or above, every one of those blocks is still cached and still the
        oldest of its key: a lookup of the same keys would return exactly them. Agent
        sessions resend their previous prompt, so this skips one dict lookup per resent
        block.
        """
        remembered = self._last_run.get(session)
        if remembered is None:
            return []
        last_key, blocks, sequence, _ = remembered
        depth = len(blocks)
        if (
            self.free_queue.evicted_through >= sequence
            or len(keys) < depth
            or keys[depth - 1] != last_key
        ):
            return []
        return blocks[:limit]

    def _remember(
        self,
        session: tuple[str | None, str, str | None],
        keys: list[BlockKey],
        blocks: list[int],
        sequence: int,
    ) -> None:
        """Keep the blocks of ``keys[:len(blocks)]``, each the oldest block of its key,
        freed into runs numbered from ``sequence`` on (see ``_remembered_hits``)."""
        memory = self._last_run
        memory.pop(session, None)
        if blocks:
            memory[session] = (keys[len(blocks) - 1], blocks, sequence, self._newest)
            if len(memory) > self.remembered_sessions:
                del memory[next(iter(memory))]
        idle_before = self._newest - REMEMBERED_IDLE_SECONDS
        while memory and next(iter(memory.values()))[3] < idle_before:
            del memory[next(iter(memory))]

    def _table_resized(self) -> None:
        """Keep ``_block_of_key``'s hash table about half the size CPython grows it to.

        A full pool evicts a key for every key it caches, so the dict's size stays put
        while its entry table fills with deleted slots; CPython then rebuilds it for 3x the
        live keys (its dict growth rate), twice the table that a copy of
        the same keys gets (1.5x): ~100 bytes a block instead of ~50. So when the table has
        just grown, it is copied (same keys, same blocks: no result changes), unless fewer
        than a quarter of its keys were cached since the last copy: then the dict is truly
        growing (a filling pool) and copies would only add work; so a copy costs at most
        four entry copies per cached block.
        """
        table = self._block_of_key
        size = sys.getsizeof(table)
        if size > self._table_bytes and self._keyed_since_copy >= len(table) // 4:
            copy = dict(table)
            self._keyed_since_copy = 0
            if sys.getsizeof(copy) < size:
                self._block_of_key = table = copy
        self._table_bytes = sys.getsizeof(table)

    def _evict_keys(self, blocks: list[int], old_keys: list[BlockKey]) -> None:
        """Lazy eviction: ``blocks`` were taken for reuse and lose ``old_keys``, in order."""
        block_of_key = self._block_of_key
        if not self._duplicates:
            # Without duplicates every cached key has exactly one block, the one evicted
            # here, so its entry goes: one C-level pass instead of a Python loop.
            deque(map(block_of_key.__delitem__, old_keys), maxlen=0)
            return
        for block, key in zip(blocks, old_keys, strict=True):
            if key in self._duplicates or block_of_key[key] != block:
                self._forget(key, block)
            else:
                del block_of_key[key]

    def _cache(self, keys: list[BlockKey], blocks: list[int]) -> bool:
        """Key ``blocks`` (in order); an already cached key gets a younger duplicate.

        True when no duplicate was made: each block is then the oldest of its key.
        """
        block_of_key = self._block_of_key
        if block_of_key.keys().isdisjoint(keys):  # the usual case: all keys are new
            before = len(block_of_key)
            block_of_key.update(zip(keys, blocks, strict=True))
            if len(block_of_key) - before == len(keys):
                return True
            # A key repeated within ``keys`` (only a malformed trace can do that): the
            # update kept the last block, but the first is the oldest. Redo it in order.
            for key in keys:
                block_of_key.pop(key, None)
        for key, block in zip(keys, blocks, strict=True):
            if key in block_of_key:  # vLLM keeps duplicates; lookups take the oldest
                self._duplicates.setdefault(key, []).append(block)
            else:
                block_of_key[key] = block
        return False

    def _forget(self, key: BlockKey, block: int) -> None:
        """Drop ``block`` from the blocks holding ``key`` (the next oldest takes over)."""
        others = self._duplicates.get(key)
        if self._block_of_key[key] == block:
            if others:
                self._block_of_key[key] = others.pop(0)
                if not others:
                    del self._duplicates[key]
            else:
                del self._block_of_key[key]
        else:
            assert others is not None
            others.remove(block)
            if not others:
                del self._duplicates[key]
