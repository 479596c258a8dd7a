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

import math
import sys
import threading
import weakref
from collections import OrderedDict, deque
from collections.abc import Iterator
from itertools import repeat

from cachecast.simulator.blocks import (
    REMEMBERED_IDLE_SECONDS,
    BlockKey,
    BlockKeyer,
    common_prefix_length,
)
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

# (a run that moves whole or None, start, end): one piece of a request's hits
Piece = tuple["_Run | None", int, int]


class _Run:
    """Blocks freed together, kept so that the whole group moves in one step.

    ``stack`` lists the blocks in reverse queue order: ``stack[-1]`` is evicted first.
    A finished request's blocks form one or more consecutive runs (one per piece of its
    hits, the new keyed blocks joining the deepest), each in depth order, which is
    exactly the reverse of the order vLLM frees them in.
    """

    __slots__ = ("keys", "next", "previous", "sequence", "stack")

    def __init__(self, stack: list[int], keys: list[BlockKey], sequence: int = -1) -> None:
        self.stack = stack
        # keys[i] is the key block stack[i] holds: an evicted block's key is at hand
        # without a per-block lookup (every block in a run is keyed).
        self.keys = keys
        # Position in the queue: runs are linked in increasing ``sequence`` order (a run
        # gets the next number when it is appended; a split remainder keeps its run's).
        self.sequence = sequence
        self.previous: _Run = self
        self.next: _Run = self


class FreeBlockQueue:
    """vLLM's free-block queue as ``front + [fresh_next, fresh_end) + back``.

    - ``front``: blocks prepended (unkeyed partial tails), an ordered dict (it stays small).
    - the never-used initial blocks in id order, kept as a lazy range, so a pool of 2**62
      blocks costs nothing until used;
    - ``back``: appended (keyed) blocks, as a doubly linked list of runs (``_Run``), each
      the blocks one request freed, plus ``run_of`` (block -> its run: a list indexed by
      block id, 8 bytes a block, where a dict cost ~100 with its int keys' share; a
      block's entry is current while it sits in a run and is only read then, so a block
      taken from the queue keeps a stale entry instead of a deletion) and ``keyed``, the
      number of blocks in runs.

    Why runs: agent traffic resends a session's previous prompt, so a request's hits are
    usually whole earlier runs (the session's own blocks, a system prompt shared with
    other sessions) or the bottom of one, each matched by one list comparison. A whole
    run moves to the back as the same object (no per-block work), and keeps moving
    whole for later requests; only blocks that change run get their ``run_of`` entry
    rewritten. Any other shape of hits (duplicates, a block deep inside a run) takes a
    slower general path with the same result.
    """

    def __init__(self, first: int, end: int) -> None:
        self.front: OrderedDict[int, None] = OrderedDict()
        self.fresh_next = first
        self.fresh_end = end
        self.runs = _Run([], [])  # sentinel of the circular list; .next is the front run
        # Grows with the highest block id used (never-used blocks have none), so a pool
        # of 2**62 blocks costs what it uses; unused entries hold the sentinel.
        self.run_of: list[_Run] = []
        self.keyed = 0
        self.ids = BlockIds.shared()
        self.next_sequence = 0
        # The highest run sequence any block was ever taken (evicted) from. Runs are taken
        # front first, in sequence order, so every block that sits in a run numbered
        # above this has stayed in the queue, keyed, since that run was appended.
        self.evicted_through = -1

    def __len__(self) -> int:
        return len(self.front) + (self.fresh_end - self.fresh_next) + self.keyed

    def take(self, number: int) -> tuple[list[int], list[BlockKey]]:
        """Remove and return the first ``number`` free blocks, front first.

        Also returns the keys the blocks taken from runs held, in order: they are the last
        ``len(keys)`` blocks taken (front and never-used blocks hold no key).
        """
        taken: list[int] = []
        evicted_keys: list[BlockKey] = []
        front = self.front
        while front and len(taken) < number:
            taken.append(front.popitem(last=False)[0])
        remaining = number - len(taken)
        if remaining and self.fresh_next < self.fresh_end:
            stop = min(self.fresh_end, self.fresh_next + remaining)
            taken += self.ids.slice(self.fresh_next, stop)
            remaining -= stop - self.fresh_next
            self.fresh_next = stop
        if remaining:
            from_back: list[int] = []
            sentinel = self.runs
            while remaining:
                run = sentinel.next
                if run is sentinel:
                    raise IndexError("take from an exhausted free-block queue")
                stack, keys = run.stack, run.keys
                self.evicted_through = run.sequence
                count = min(remaining, len(stack))
                cut = len(stack) - count
                from_back.extend(reversed(stack[cut:]))
                evicted_keys.extend(reversed(keys[cut:]))
                del stack[cut:], keys[cut:]
                if not stack:
                    _unlink(run)
                remaining -= count
            self.keyed -= len(from_back)  # their run_of entries go stale, unread
            taken += from_back
        return taken, evicted_keys

    def remove_hits(self, hits: list[int]) -> list[Piece]:
        """Take the (free, keyed) hit blocks out of the queue: vLLM's touch.

        ``hits`` is in depth order; it is cut into pieces, each the bottom blocks of one
        run. Returns them in order as ``(run, start, end)``: ``run`` is an unlinked run
        object whose stack is exactly ``hits[start:end]`` and whose blocks' ``run_of``
        entries already point at it (so ``append_runs`` moves it as is), or None when
        ``hits[start:end]`` needs a new run.
        """
        run_of = self.run_of
        total = len(hits)
        position = 0
        pieces: list[Piece] = []
        while position < total:
            run = run_of[hits[position]]
            stack = run.stack
            size = len(stack)
            if size <= total - position:
                whole = stack == hits[position : position + size]
            else:
                size = total - position
                whole = stack[:size] == hits[position:]
            if not whole:
                size = self._piece_length(run, hits, position)
                if size == 0:  # a hit inside a run: the general path
                    self._remove_scattered(hits[position:])
                    pieces.append((None, position, total))
                    break
            end = position + size
            if size == len(stack):  # the whole run is hit: it moves as one piece
                _unlink(run)
                pieces.append((run, position, end))
            elif len(stack) - size < size:
                # Fewer blocks stay than leave: the deeper ones move to a new run in this
                # run's place, and this run leaves whole, so fewer run_of entries change.
                rest = _Run(stack[size:], run.keys[size:], run.sequence)
                rest.previous, rest.next = run.previous, run.next
                run.previous.next = run.next.previous = rest
                run.previous = run.next = run
                self._assign(rest.stack, rest)
                del stack[size:], run.keys[size:]
                pieces.append((run, position, end))
            else:  # the run keeps its deeper blocks where it is
                del stack[:size], run.keys[:size]
                pieces.append((None, position, end))
            position = end
        return pieces

    def _piece_length(self, run: _Run, hits: list[int], position: int) -> int:
        """How many hits from ``position`` on are the bottom blocks of ``run``, in order.

        Usually the hits end with another run's blocks (the session's own previous
        request) and everything before them is this run's piece (a shared prefix that
        another session moved): checked with one comparison. Otherwise a search.
        """
        stack = run.stack
        run_of = self.run_of
        end = len(hits) - len(run_of[hits[-1]].stack)
        size = end - position
        if (
            0 < size <= len(stack)
            and run_of[hits[end]] is not run
            and stack[:size] == hits[position:end]
        ):
            return size  # maximal: hits[end] is in another run, stack[size] in this one
        return common_prefix_length(stack, hits[position : position + len(stack)])

    def _remove_scattered(self, hits: list[int]) -> None:
        run_of = self.run_of
        touched: dict[_Run, None] = dict.fromkeys(map(run_of.__getitem__, hits))
        leaving = set(hits)
        for run in touched:
            staying = [
                (block, key)
                for block, key in zip(run.stack, run.keys, strict=True)
                if block not in leaving
            ]
            run.stack = [block for block, _ in staying]
            run.keys = [key for _, key in staying]
            if not run.stack:
                _unlink(run)

    def prepend(self, block: int) -> None:
        self.front[block] = None
        self.front.move_to_end(block, last=False)

    def append_runs(
        self, new_blocks: list[int], hits: list[int], keys: list[BlockKey], pieces: list[Piece]
    ) -> int:
        """Free a finished request: its new keyed blocks then its hits, deepest first.

        ``keys`` are the request's keys: hit ``i`` holds ``keys[i]``, and the new blocks
        the keys that follow. Each hit piece stays a run of its own, so that a prefix
        shared by many sessions (a system prompt) keeps moving as one object; the new
        blocks join the deepest piece. Appending the pieces deepest first puts the
        request's blocks in vLLM's order. Returns the number of the first run appended:
        all of the request's blocks sit in runs numbered from there on.
        """
        first_sequence = self.next_sequence
        hit_count = len(hits)
        new_keys = keys[hit_count : hit_count + len(new_blocks)]
        if not pieces:
            if not new_blocks:
                return first_sequence
            pieces = [(None, hit_count, hit_count)]  # an empty piece the new blocks join
        deepest = True
        for run_or_none, start, end in reversed(pieces):
            if run_or_none is None:
                run = _Run(hits[start:end], keys[start:end])
                self._assign(run.stack, run)
            else:
                run = run_or_none
            if deepest and new_blocks:
                run.stack += new_blocks
                run.keys += new_keys
                self._assign(new_blocks, run)
                self.keyed += len(new_blocks)
            deepest = False
            self._append(run)
        return first_sequence

    def _assign(self, blocks: list[int], run: _Run) -> None:
        """Set ``run_of`` of ``blocks`` to ``run`` (a plain loop: about half the time of
        ``dict.update(zip(...))`` per block)."""
        run_of = self.run_of
        try:
            for block in blocks:
                run_of[block] = run
        except IndexError:  # a block id above any seen (a queue driven directly)
            run_of.extend(repeat(self.runs, max(blocks) + 1 - len(run_of)))
            for block in blocks:
                run_of[block] = run

    def _append(self, run: _Run) -> None:
        run.sequence = self.next_sequence
        self.next_sequence += 1
        last = self.runs.previous
        run.previous, run.next = last, self.runs
        last.next = self.runs.previous = run

    def __iter__(self) -> Iterator[int]:
        yield from self.front
        yield from range(self.fresh_next, self.fresh_end)
        run = self.runs.next
        while run is not self.runs:
            yield from reversed(run.stack)
            run = run.next


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


class BlockIds:
    """The int objects of block ids, shared by every pool alive in the process.

    A block id above 256 is an object of 32 bytes, and a full pool holds one per block; the
    pools of a capacity curve or of a fleet's replicas number their blocks alike, so they
    share one object per id instead. The table lives while a pool holds it (a weak
    reference finds it), so a long-running process keeps none between replays.
    """

    __slots__ = ("__weakref__", "ids", "lock")
    _current: weakref.ref[BlockIds] | None = None
    _made = threading.Lock()

    def __init__(self) -> None:
        self.ids: list[int] = []
        self.lock = threading.Lock()

    @classmethod
    def shared(cls) -> BlockIds:
        with cls._made:
            table = None if cls._current is None else cls._current()
            if table is None:
                table = cls()
                cls._current = weakref.ref(table)
            return table

    def slice(self, start: int, stop: int) -> list[int]:
        """The ids ``start`` to ``stop - 1`` (a new list of the shared objects)."""
        ids = self.ids
        if stop > len(ids):
            with self.lock:
                ids.extend(range(len(ids), stop))
        return ids[start:stop]


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
