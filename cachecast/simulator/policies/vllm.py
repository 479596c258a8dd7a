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
from operator import eq

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


class _Run:
    """Blocks freed together, kept so that the whole group moves in one step.

    ``stack`` lists the blocks in reverse queue order: ``stack[-1]`` is evicted first.
    A finished request's run is its hits followed by its new keyed blocks, i.e. its chain
    in depth order, which is exactly the reverse of the order vLLM frees them in.
    """

    __slots__ = ("next", "previous", "stack")

    def __init__(self, stack: list[int]) -> None:
        self.stack = stack
        self.previous: _Run = self
        self.next: _Run = self


class FreeBlockQueue:
    """vLLM's free-block queue as ``front + [fresh_next, fresh_end) + back``.

    - ``front``: blocks prepended (unkeyed partial tails), an ordered dict (it stays small).
    - the never-used initial blocks in id order, kept as a lazy range, so a pool of 2**62
      blocks costs nothing until used;
    - ``back``: appended (keyed) blocks, as a doubly linked list of runs (``_Run``), each
      the blocks one request freed, plus ``run_of`` (block -> its run).

    Why runs: agent traffic resends a session's previous prompt, so a request's hits are
    usually the bottoms of one or two earlier runs, matched by one list comparison. Such
    a piece moves to the back with its run object (no per-block work but a list copy);
    only blocks that change run get their ``run_of`` entry rewritten. Any other shape
    of hits (duplicates, a block deep inside a run) takes a slower general path with
    the same result.
    """

    def __init__(self, first: int, end: int) -> None:
        self.front: OrderedDict[int, None] = OrderedDict()
        self.fresh_next = first
        self.fresh_end = end
        self.runs = _Run([])  # sentinel of the circular list; .next is the front run
        self.run_of: dict[int, _Run] = {}

    def __len__(self) -> int:
        return len(self.front) + (self.fresh_end - self.fresh_next) + len(self.run_of)

    def popleft(self) -> int:
        return self.take(1)[0]

    def take(self, number: int) -> list[int]:
        """Remove and return the first ``number`` free blocks, front first."""
        taken: list[int] = []
        front = self.front
        while front and len(taken) < number:
            taken.append(front.popitem(last=False)[0])
        remaining = number - len(taken)
        if remaining and self.fresh_next < self.fresh_end:
            stop = min(self.fresh_end, self.fresh_next + remaining)
            taken.extend(range(self.fresh_next, stop))
            remaining -= stop - self.fresh_next
            self.fresh_next = stop
        if remaining:
            from_back: list[int] = []
            sentinel = self.runs
            while remaining:
                run = sentinel.next
                if run is sentinel:
                    raise IndexError("take from an exhausted free-block queue")
                stack = run.stack
                count = min(remaining, len(stack))
                from_back.extend(reversed(stack[len(stack) - count :]))
                del stack[len(stack) - count :]
                if not stack:
                    _unlink(run)
                remaining -= count
            deque(map(self.run_of.__delitem__, from_back), maxlen=0)  # C-level bulk delete
            taken += from_back
        return taken

    def remove_hits(self, hits: list[int]) -> tuple[_Run | None, int]:
        """Take the (free, keyed) hit blocks out of the queue: vLLM's touch.

        Returns a run object that held a whole slice ``hits[start : start + len]`` and is
        now unlinked (so ``append_run`` can reuse it, rewriting no ``run_of`` entry for
        that slice), and ``start``; or ``(None, 0)``.
        """
        run_of = self.run_of
        total = len(hits)
        position = 0
        reusable: _Run | None = None
        reusable_start = 0
        left_whole: list[_Run] = []
        while position < total:
            run = run_of[hits[position]]
            stack = run.stack
            size = min(len(stack), total - position)
            wanted = hits[position : position + size]
            if stack[:size] != wanted:
                matched = list(map(eq, stack[:size], wanted))
                size = matched.index(False)
                if size == 0:  # a hit inside a run: the general path
                    self._remove_scattered(hits[position:])
                    break
            if size == len(stack):  # the whole run is hit: it can move as one piece
                _unlink(run)
                left_whole.append(run)
                if reusable is None or size > len(reusable.stack):
                    reusable, reusable_start = run, position
            elif len(stack) - size < size:
                # Fewer blocks stay than leave: the deeper ones move to a new run in this
                # run's place, and this run leaves whole, so fewer run_of entries change.
                rest = _Run(stack[size:])
                rest.previous, rest.next = run.previous, run.next
                run.previous.next = run.next.previous = rest
                run.previous = run.next = run
                run_of.update(zip(rest.stack, repeat(rest)))
                del stack[size:]
                left_whole.append(run)
                if reusable is None or size > len(reusable.stack):
                    reusable, reusable_start = run, position
            else:  # the run keeps its deeper blocks where it is
                del stack[:size]
            position += size
        for run in left_whole:
            if run is not reusable:
                run.stack = []  # its blocks now belong to the request's run
        if reusable is None:
            return None, 0
        return reusable, reusable_start

    def _remove_scattered(self, hits: list[int]) -> None:
        run_of = self.run_of
        touched: dict[_Run, None] = dict.fromkeys(map(run_of.__getitem__, hits))
        leaving = set(hits)
        for run in touched:
            run.stack = [block for block in run.stack if block not in leaving]
            if not run.stack:
                _unlink(run)

    def prepend(self, block: int) -> None:
        self.front[block] = None
        self.front.move_to_end(block, last=False)

    def append_run(
        self, new_blocks: list[int], hits: list[int], reused: _Run | None, reused_start: int
    ) -> _Run:
        """Free a finished request: its new keyed blocks then its hits, deepest first.

        Both lists are in depth order (the chain's order), so the run is their sum.

        ``reused``/``reused_start`` come from ``remove_hits``: that slice of ``hits``
        already points at ``reused``.
        """
        stack = hits + new_blocks
        run_of = self.run_of
        if reused is None:
            run = _Run(stack)
            run_of.update(zip(stack, repeat(run)))
        else:
            run = reused
            kept = len(run.stack)
            run.stack = stack
            run_of.update(zip(hits[:reused_start], repeat(run)))
            run_of.update(zip(stack[reused_start + kept :], repeat(run)))
        if stack:
            last = self.runs.previous
            run.previous, run.next = last, self.runs
            last.next = self.runs.previous = run
        return run

    def __iter__(self) -> Iterator[int]:
        yield from self.front
        yield from range(self.fresh_next, self.fresh_end)
        run = self.runs.next
        while run is not self.runs:
            yield from reversed(run.stack)
            run = run.next


def _unlink(run: _Run) -> None:
    run.previous.next = run.next
    run.next.previous = run.previous
    run.previous = run.next = run


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
        self._key_of_block: dict[int, BlockKey] = {}
        # key -> the oldest block holding it; younger duplicates (vLLM does not
        # de-duplicate) wait in ``_duplicates`` in insertion order.
        self._block_of_key: dict[BlockKey, int] = {}
        self._duplicates: dict[BlockKey, list[int]] = {}
        # session -> (its last keys, the run they left, that run's block list, length)
        self._last_run: dict[
            tuple[str | None, str, str | None], tuple[list[BlockKey], _Run, list[int], int]
        ] = {}

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
        # (-1 marks a miss: int == int is cheaper for list.index than int == None. A
        # final -1 spares the ValueError of a lookup that hits up to the limit.)
        limit = (length - 1) // block_size
        session = (request.model, request.scope, request.session)
        found = self._remembered_hits(session, keys, limit)
        remembered = len(found)
        found += map(self._block_of_key.get, keys[remembered:limit], repeat(-1))
        found.append(-1)
        hit_count = found.index(-1, remembered)
        hit_count = hit_count * block_size // self.alignment * self.alignment // block_size
        hits = found[:hit_count]
        reused, reused_start = queue.remove_hits(hits)  # touch

        # Allocate from the front of the free queue; a reused block loses its old key.
        taken = queue.take(needed - hit_count)
        self._evict_keys(taken)
        newly_keyed = taken[: full - hit_count]
        # the blocks that are now full
        each_oldest = self._cache(keys[hit_count:full], newly_keyed)

        # Finish: free tail first; the unkeyed partial tail (if any) goes to the front,
        # keyed blocks to the back, deepest first.
        if needed > full:
            queue.prepend(taken[-1])
        run = queue.append_run(newly_keyed, hits, reused, reused_start)
        self._remember(session, keys, run, each_oldest)
        # The record make_usage would build, built directly (this runs per request): read +
        # written <= needed blocks' tokens, so uncached = input - read - written >= 0.
        read = hit_count * block_size
        written = (full - hit_count) * block_size
        return RequestUsage(
            request_id=request.request_id,
            line=request.line,
            timestamp=request.timestamp,
            scope=request.scope,
            input_tokens=length,
            output_tokens=request.output_tokens,
            cache_read_tokens=read,
            cache_write_tokens={self.write_bucket: written} if written else {},
            uncached_input_tokens=length - read - written,
        )

    def _remembered_hits(
        self, session: tuple[str | None, str, str | None], keys: list[BlockKey], limit: int
    ) -> list[int]:
        """The lookup result for a leading part of ``keys``, known without looking up.

        A session's previous request left its run: its blocks hold that request's keys
        in order, each the oldest block of its key (``_remember`` checks this). While the
        run's block list is the very list object seen then, at the same length, no block
        has left it (taking, touching and moving blocks all shrink or replace the list),
        so those blocks are still cached and still the oldest: a lookup of the same keys
        would return exactly them. Agent sessions resend their previous prompt, so this
        skips one dict lookup per resent block.
        """
        remembered = self._last_run.get(session)
        if remembered is None:
            return []
        previous_keys, run, stack, size = remembered
        if run.stack is not stack or len(stack) != size or keys[:size] != previous_keys:
            return []
        return stack[:limit]

    def _remember(
        self,
        session: tuple[str | None, str, str | None],
        keys: list[BlockKey],
        run: _Run,
        each_oldest: bool,
    ) -> None:
        memory = self._last_run
        memory.pop(session, None)
        # The run holds the blocks of keys[:full] in order; usable only if each is the
        # oldest block of its key (hits are, new blocks are when none was a duplicate).
        if each_oldest and run.stack:
            memory[session] = (keys, run, run.stack, len(run.stack))
            if len(memory) > self.remembered_sessions:
                del memory[next(iter(memory))]

    def _evict_keys(self, blocks: list[int]) -> None:
        """Lazy eviction: ``blocks`` were taken for reuse and lose their keys, in order."""
        old_keys = list(map(self._key_of_block.pop, blocks, repeat(None)))
        block_of_key = self._block_of_key
        if not self._duplicates:
            # Without duplicates every cached key has exactly one block, the one evicted
            # here, so its entry goes: one C-level pass instead of a Python loop.
            deque(map(block_of_key.__delitem__, filter(None, old_keys)), maxlen=0)
            return
        for block, key in zip(blocks, old_keys, strict=True):
            if key is None:
                continue
            if key in self._duplicates or block_of_key[key] != block:
                self._forget(key, block)
            else:
                del block_of_key[key]

    def _cache(self, keys: list[BlockKey], blocks: list[int]) -> bool:
        """Key ``blocks`` (in order); an already cached key gets a younger duplicate.

        True when no duplicate was made: each block is then the oldest of its key.
        """
        self._key_of_block.update(zip(blocks, keys, strict=True))
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
