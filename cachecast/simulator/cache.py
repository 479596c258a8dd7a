"""Cache state for provider policies: keyed entries with a lifetime and an LRU order.

Expiry boundary: an entry written (or refreshed) at time ``t`` with TTL ``T`` is alive at
``t'`` iff ``t' < t + T``; at exactly ``t + T`` it is gone. A hit refreshes the lifetime
only where the TTL option says so (``refresh_on_hit``).

Capacity (optional) counts entries; when an insert would exceed it, the least recently
used entries that the current request does not hold are evicted first.

Removed entries are remembered (bounded, oldest forgotten first) with why they went
(``EXPIRED`` or ``EVICTED``) and when they were last used, so that a later miss can be
explained (``gone``); removal is rare next to lookups, so this costs the hot loop nothing.

Callers touch the entries of one prefix deepest-first, so within one request the shallower
entries are the more recent ones and the deepest block goes first, as in vLLM. Expired entries are
dropped when met at lookup and swept from the LRU end as the cache grows, so memory stays
bounded by the live entries plus one sweep's worth.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Collection
from dataclasses import dataclass


@dataclass(slots=True)
class CacheEntry:
    """One cached prefix (or block): its size, lifetime rule and expiry time."""

    tokens: int
    ttl_seconds: int
    refresh_on_hit: bool
    expires_at: float
    ttl_name: str


EXPIRED = "expired"
EVICTED = "evicted"
REMEMBERED_REMOVALS = 1 << 16


@dataclass(frozen=True, slots=True)
class Gone:
    """A removed entry: why, when it was last written or refreshed, and its TTL."""

    reason: str
    last_used: float
    ttl_seconds: int


class TtlLruCache:
    """Entries keyed by chained block/prefix keys, with TTL expiry and LRU capacity."""

    def __init__(self, capacity: int | None = None) -> None:
        if capacity is not None and capacity <= 0:
            raise ValueError("capacity must be positive")
        self.capacity = capacity
        self._entries: OrderedDict[bytes, CacheEntry] = OrderedDict()  # LRU first
        self._sweep_at = 1024
        self._gone: OrderedDict[bytes, Gone] = OrderedDict()

    def gone(self, key: bytes) -> Gone | None:
        """Why ``key`` is no longer cached, where it was and is remembered."""
        return self._gone.get(key)

    def _remove(self, key: bytes, entry: CacheEntry, reason: str) -> None:
        del self._entries[key]
        gone = self._gone
        gone[key] = Gone(reason, entry.expires_at - entry.ttl_seconds, entry.ttl_seconds)
        if len(gone) > REMEMBERED_REMOVALS:
            gone.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def lookup(self, key: bytes, now: float) -> CacheEntry | None:
        """The live entry under ``key`` (an expired one is removed and not returned)."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        if now >= entry.expires_at:
            self._remove(key, entry, EXPIRED)
            return None
        return entry

    def touch(self, key: bytes, now: float) -> float:
        """Mark a live entry used now; refresh its lifetime if its rule says so.

        Returns the lifetime added in seconds (for storage billing), 0 without refresh.
        """
        entry = self._entries[key]
        self._entries.move_to_end(key)
        if not entry.refresh_on_hit:
            return 0.0
        new_expiry = now + entry.ttl_seconds
        added = max(0.0, new_expiry - entry.expires_at)
        entry.expires_at = max(entry.expires_at, new_expiry)
        return added

    def touch_order(self, key: bytes) -> None:
        """Make ``key`` the most recently used entry without touching its lifetime."""
        self._entries.move_to_end(key)

    def insert(
        self,
        key: bytes,
        now: float,
        *,
        tokens: int,
        ttl_seconds: int,
        refresh_on_hit: bool,
        ttl_name: str,
        held: Collection[bytes] = (),
    ) -> bool:
        """Store an entry alive until ``now + ttl_seconds``; False if no room was found.

        Entries in ``held`` (the current request's) are never evicted to make room.
        """
        if key in self._entries:
            del self._entries[key]
        if self.capacity is not None and not self._make_room(now, held):
            return False
        self._entries[key] = CacheEntry(
            tokens, ttl_seconds, refresh_on_hit, now + ttl_seconds, ttl_name
        )
        if len(self._entries) >= self._sweep_at:
            self.sweep(now)
            self._sweep_at = max(1024, 2 * len(self._entries))
        return True

    def hold(
        self,
        key: bytes,
        now: float,
        tokens: int,
        rule: tuple[int, bool, str],
        held: Collection[bytes] = (),
    ) -> None:
        """Keep ``key`` cached from ``now`` (an entry a provider said it holds): inserted under
        ``rule`` (TTL seconds, refresh on hit, TTL name) unless it is alive already."""
        if self.lookup(key, now) is None:
            ttl_seconds, refresh_on_hit, ttl_name = rule
            self.insert(
                key,
                now,
                tokens=tokens,
                ttl_seconds=ttl_seconds,
                refresh_on_hit=refresh_on_hit,
                ttl_name=ttl_name,
                held=held,
            )

    def sweep(self, now: float) -> int:
        """Drop every expired entry; returns how many."""
        expired = [(key, entry) for key, entry in self._entries.items() if now >= entry.expires_at]
        for key, entry in expired:
            self._remove(key, entry, EXPIRED)
        return len(expired)

    def _make_room(self, now: float, held: Collection[bytes]) -> bool:
        assert self.capacity is not None
        if len(self._entries) < self.capacity:
            return True
        self.sweep(now)
        while len(self._entries) >= self.capacity:
            # The current request's entries sit at the MRU end, so this stops early.
            victim = next((key for key in self._entries if key not in held), None)
            if victim is None:
                return False
            self._remove(victim, self._entries[victim], EVICTED)
        return True
