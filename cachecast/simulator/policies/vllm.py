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

from collections import OrderedDict, deque
from collections.abc import Iterator
from itertools import repeat

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
    """vLLM's free-block queue as ``front + [fresh_next, fresh_end) + back``.

    - ``front``: blocks prepended (unkeyed partial tails), an ordered dict (it stays small).
    - the never-used initial blocks in id order, kept as a lazy range, so a pool of 2**62
      blocks costs nothing until used;
    - ``back``: appended (keyed) blocks, in append order. It is a log of block ids plus a
      dict giving each free block its position in the log; removing a block deletes its
      dict entry and leaves a stale log entry that ``popleft`` skips. Appending a run and
      removing hits are then bulk C-level operations (an ordered dict's per-item cost
      dominated the replay), and the log is compacted when stale entries dominate.
    """

    compact_slack = 4096  # stale log entries tolerated beyond 4x the live ones

    def __init__(self, first: int, end: int) -> None:
        self.front: OrderedDict[int, None] = OrderedDict()
        self.fresh_next = first
        self.fresh_end = end
        self.back_log: deque[int] = deque()
        self.back_position: dict[int, int] = {}  # free block -> its position in back_log
        self.log_head = 0  # position of back_log[0]
        self.log_end = 0  # position the next appended block gets

    def __len__(self) -> int:
        return len(self.front) + (self.fresh_end - self.fresh_next) + len(self.back_position)

    def popleft(self) -> int:
        if self.front:
            return self.front.popitem(last=False)[0]
        if self.fresh_next < self.fresh_end:
            self.fresh_next += 1
            return self.fresh_next - 1
        log, positions = self.back_log, self.back_position
        while True:
            block = log.popleft()
            position = self.log_head
            self.log_head += 1
            if positions.get(block) == position:
                del positions[block]
                return block

    def move_hits_to_back(self, hits: list[int], keyed_new: int) -> None:
        """Touch hit blocks and, in the same step, give them their places after the finish.

        After the request the back will end with ``keyed_new`` new blocks and then the
        hits in reversed order. The hits get those final positions now: their old log
        entries go stale at once (so allocation skips them, as if they had left the
        queue), and allocation never reaches the new positions because the admission check
        guarantees enough other free blocks ahead of them. ``append_run`` then writes the
        log entries. One dict update per hit block instead of a delete and an insert.
        """
        start = self.log_end + keyed_new
        self.back_position.update(zip(reversed(hits), range(start, start + len(hits)), strict=True))

    def prepend(self, block: int) -> None:
        self.front[block] = None
        self.front.move_to_end(block, last=False)

    def append_run(self, new_blocks: list[int], hits: list[int]) -> None:
        """Append ``new_blocks`` then ``hits`` (already placed by ``move_hits_to_back``)."""
        start = self.log_end
        self.log_end += len(new_blocks) + len(hits)
        self.back_log.extend(new_blocks)
        self.back_log.extend(reversed(hits))
        self.back_position.update(
            zip(new_blocks, range(start, start + len(new_blocks)), strict=True)
        )
        if len(self.back_log) > 4 * len(self.back_position) + self.compact_slack:
            self._compact()

    def _compact(self) -> None:
        live = sorted(self.back_position, key=self.back_position.__getitem__)
        self.back_log = deque(live)
        self.log_head = 0
        self.log_end = len(live)
        self.back_position = dict(zip(live, range(len(live)), strict=True))

    def _back_in_order(self) -> Iterator[int]:
        positions = self.back_position
        for position, block in enumerate(self.back_log, self.log_head):
            if positions.get(block) == position:
                yield block

    def __iter__(self) -> Iterator[int]:
        yield from self.front
        yield from range(self.fresh_next, self.fresh_end)
        yield from self._back_in_order()


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
        # key -> the oldest block holding it; younger duplicates (vLLM does not
        # de-duplicate) wait in ``_duplicates`` in insertion order.
        self._block_of_key: dict[BlockKey, int] = {}
        self._duplicates: dict[BlockKey, list[int]] = {}

    @property
    def usable_blocks(self) -> int:
        return self.num_blocks - 1

    def free_block_order(self) -> list[int]:
        """The free queue front to back (first evicted first), as vLLM lists it."""
        return list(self.free_queue)

    def cached_block_count(self) -> int:
        return len(self._key_of_block)

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
        # (-1 marks a miss: int == int is cheaper for list.index than int == None.)
        lookups = keys[: (length - 1) // block_size]
        found = list(map(self._block_of_key.get, lookups, repeat(-1)))
        try:
            hit_count = found.index(-1)
        except ValueError:
            hit_count = len(found)
        hit_count = hit_count * block_size // self.alignment * self.alignment // block_size
        hits = found[:hit_count]
        queue.move_hits_to_back(hits, full - hit_count)  # touch
        blocks = list(hits)

        key_of_block = self._key_of_block
        block_of_key = self._block_of_key
        duplicates = self._duplicates
        front, log, positions = queue.front, queue.back_log, queue.back_position
        for _ in range(needed - hit_count):  # queue.popleft(), inlined: a hot loop
            if front:
                block = front.popitem(last=False)[0]
            elif queue.fresh_next < queue.fresh_end:
                block = queue.fresh_next
                queue.fresh_next += 1
            else:
                while True:  # skip stale log entries (blocks touched since they were put)
                    block = log.popleft()
                    position = queue.log_head
                    queue.log_head = position + 1
                    if positions.get(block) == position:
                        del positions[block]
                        break
            old_key = key_of_block.pop(block, None)
            if old_key is not None:  # lazy eviction of the reused block's old key
                if old_key in duplicates or block_of_key[old_key] != block:
                    self._forget(old_key, block)
                else:
                    del block_of_key[old_key]
            blocks.append(block)

        for index in range(hit_count, full):  # cache the blocks that are now full
            key = keys[index]
            block = blocks[index]
            key_of_block[block] = key
            if key in block_of_key:  # vLLM keeps duplicates; lookups take the oldest
                self._duplicates.setdefault(key, []).append(block)
            else:
                block_of_key[key] = block

        # Finish: free tail first; the unkeyed partial tail (if any) goes to the front,
        # keyed blocks to the back in reversed order.
        if needed > full:
            queue.prepend(blocks[full])
        newly_keyed = blocks[hit_count:full]
        newly_keyed.reverse()
        queue.append_run(newly_keyed, hits)
        written = (full - hit_count) * block_size
        return make_usage(request, hit_count * block_size, {self.write_bucket: written})

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
