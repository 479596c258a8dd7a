"""vLLM's free-block queue, as each pool of :class:`~vllm.VllmPrefixCache` keeps it.

Mirrors ``FreeKVCacheBlockQueue`` of vLLM 0.32's ``vllm/v1/core/kv_cache_utils``: the order
in which free blocks are reused (front first), which is the eviction order of the prefix
cache. Unkeyed partial tails go to the front, keyed blocks to the back; a hit block leaves the
queue until its request finishes. :class:`FreeBlockQueue` holds the same order in runs of
blocks that move together (see its docstring), so agent traffic costs one step per run
instead of one per block; :class:`BlockIds` shares the block ids' int objects between pools.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterator
from itertools import repeat

from cachecast.simulator.blocks import BlockKey, common_prefix_length

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
