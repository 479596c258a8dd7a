"""Self-hosted vLLM automatic prefix caching, block for block as vLLM 0.32's v1 manager.

Mirrors ``vllm/v1/core`` (kv_cache_manager, block_pool, single_type_kv_cache_manager,
kv_cache_utils) for one full-attention KV cache group with prefix caching on:

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

from collections import OrderedDict
from collections.abc import Iterator

from cachecast.simulator.blocks import BlockKey, BlockKeyer
from cachecast.simulator.policies.base import (
    SELF_HOSTED_WRITE,
    CachePolicy,
    empty_usage,
    hit_alignment,
    make_usage,
)
from cachecast.simulator.types import RequestUsage
from cachecast.tokenizers.types import TokenizedRequest

UNBOUNDED_BLOCKS = 1 << 62


class FreeBlockQueue:
    """vLLM's free-block queue, with never-used blocks kept as a lazy id range.

    The queue is always ``front + [fresh_next, fresh_end) + back``: blocks prepended go to
    ``front``, blocks appended go to ``back``, and the untouched initial blocks (in id order)
    sit between them. So a pool of 2**62 blocks costs nothing until used.
    """

    def __init__(self, first: int, end: int) -> None:
        self.front: OrderedDict[int, None] = OrderedDict()
        self.back: OrderedDict[int, None] = OrderedDict()
        self.fresh_next = first
        self.fresh_end = end

    def __len__(self) -> int:
        return len(self.front) + (self.fresh_end - self.fresh_next) + len(self.back)

    def popleft(self) -> int:
        if self.front:
            return self.front.popitem(last=False)[0]
        if self.fresh_next < self.fresh_end:
            self.fresh_next += 1
            return self.fresh_next - 1
        return self.back.popitem(last=False)[0]

    def remove(self, block: int) -> None:
        if block in self.back:
            del self.back[block]
        else:
            del self.front[block]

    def prepend(self, block: int) -> None:
        self.front[block] = None
        self.front.move_to_end(block, last=False)

    def append(self, block: int) -> None:
        self.back[block] = None

    def __iter__(self) -> Iterator[int]:
        yield from self.front
        yield from range(self.fresh_next, self.fresh_end)
        yield from self.back


class VllmPrefixCache(CachePolicy):
    """vLLM v1 automatic prefix caching over ``num_blocks`` blocks of ``block_size`` tokens."""

    name = "vllm"

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
        self._key_of_block: dict[int, BlockKey] = {}
        # key -> block id, or a list of ids (oldest first) when vLLM holds duplicates
        self._block_of_key: dict[BlockKey, int | list[int]] = {}

    @property
    def usable_blocks(self) -> int:
        return self.num_blocks - 1

    def free_block_order(self) -> list[int]:
        """The free queue front to back (first evicted first), as vLLM lists it."""
        return list(self.free_queue)

    def cached_block_count(self) -> int:
        return len(self._key_of_block)

    def process(self, request: TokenizedRequest) -> RequestUsage:
        length = request.input_tokens
        if length <= 0:
            return empty_usage(request)
        block_size = self.block_size
        keys = self.keyer.keys(request)
        needed = -(-length // block_size)
        if needed > len(self.free_queue):
            return make_usage(request, 0, {})  # never admitted: nothing changes

        # Lookup: longest run of cached full blocks, at most len - 1 tokens.
        block_of_key = self._block_of_key
        hits: list[int] = []
        for key in keys[: (length - 1) // block_size]:
            entry = block_of_key.get(key)
            if entry is None:
                break
            hits.append(entry if type(entry) is int else entry[0])  # type: ignore[index]
        usable_hit_blocks = len(hits) * block_size // self.alignment * self.alignment
        del hits[usable_hit_blocks // block_size :]

        queue = self.free_queue
        for block in hits:  # touch: hit blocks leave the free queue
            queue.remove(block)
        blocks = hits
        key_of_block = self._key_of_block
        for _ in range(needed - len(hits)):
            block = queue.popleft()
            old_key = key_of_block.pop(block, None)
            if old_key is not None:  # lazy eviction of the reused block's old key
                self._forget(old_key, block)
            blocks.append(block)

        hit_count = usable_hit_blocks // block_size
        for index in range(hit_count, len(keys)):  # cache the blocks that are now full
            key = keys[index]
            block = blocks[index]
            key_of_block[block] = key
            existing = block_of_key.get(key)
            if existing is None:
                block_of_key[key] = block
            elif type(existing) is int:
                block_of_key[key] = [existing, block]
            else:
                existing.append(block)  # type: ignore[union-attr]

        # Finish: free tail first; unkeyed blocks to the front, keyed ones to the back.
        for block in reversed(blocks):
            if block in key_of_block:
                queue.append(block)
            else:
                queue.prepend(block)
        written = (len(keys) - hit_count) * block_size
        return make_usage(request, usable_hit_blocks, {self.write_bucket: written})

    def _forget(self, key: BlockKey, block: int) -> None:
        entry = self._block_of_key[key]
        if type(entry) is int:
            del self._block_of_key[key]
            return
        assert isinstance(entry, list)
        entry.remove(block)
        if not entry:
            del self._block_of_key[key]
