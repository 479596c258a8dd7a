"""A fleet of K vLLM replicas, each with its own KV pool, behind a routing policy.

With several replicas a hit exists only where the KV lives, so the router decides the hit
rate. Each replica is a ``VllmPrefixCache`` (its own capacity, its own LRU); a request is
routed, then replayed on that replica only. Requests are still replayed one at a time in
timestamp order (the simulator has no concurrency), so *load* is defined over time:

    load(replica, t) = prompt tokens the replica had to compute (input - hit) for the
                       requests it received in the window (t - window_seconds, t]

(the prefill work recently queued on it; with ``window_seconds`` about the time a replica
needs to drain its queue this tracks outstanding work).

Routing policies (ties go to the lowest replica index):

- ``round-robin``: request i goes to replica i mod K.
- ``least-loaded``: the replica with the least load.
- ``session-sticky``: a session (``session``, else ``scope``) is pinned to the replica that
  was least loaded when its first request arrived; later requests follow it.
- ``prefix-hash``: a hash of (model, scope, first ``prefix_tokens`` tokens) mod K, as
  prefix-aware gateways do: equal prefixes land together, whatever the load.
- ``cache-aware``: the replica maximising ``w1 * overlap - w2 * load_share``, where
  ``overlap`` is the share of the prompt that replica holds cached (looked up without
  changing it) and ``load_share`` its share of the fleet's load (0 when the fleet is idle).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from cachecast.simulator.distributed.partition import bucket_of, partition_key
from cachecast.simulator.policies.vllm import VllmPrefixCache
from cachecast.simulator.types import RequestUsage
from cachecast.simulator.types import Routing as Routing  # its home before; still named here
from cachecast.tokenizers.types import TokenizedRequest

DEFAULT_WINDOW_SECONDS = 60.0
DEFAULT_OVERLAP_WEIGHT = 1.0
DEFAULT_LOAD_WEIGHT = 0.5


@dataclass(slots=True)
class ReplicaStats:
    """What one replica received and computed."""

    requests: int = 0
    input_tokens: int = 0
    hit_tokens: int = 0

    @property
    def computed_tokens(self) -> int:
        """Prompt tokens the replica prefilled (not read from its cache)."""
        return self.input_tokens - self.hit_tokens

    @property
    def hit_rate(self) -> float:
        return self.hit_tokens / self.input_tokens if self.input_tokens else 0.0


@dataclass(slots=True)
class RoutingStats:
    """Hit rate and load balance of one routing policy over a log."""

    routing: Routing
    replicas: list[ReplicaStats]
    window_seconds: float
    overlap_weight: float | None = None  # cache-aware routing only
    load_weight: float | None = None  # cache-aware routing only
    prefix_tokens: int | None = None  # prefix-hash routing only

    @property
    def options(self) -> dict[str, float | int]:
        """The router's parameters that apply to its policy, by name."""
        named = {
            "window_seconds": self.window_seconds,
            "overlap_weight": self.overlap_weight,
            "load_weight": self.load_weight,
            "prefix_tokens": self.prefix_tokens,
        }
        return {name: value for name, value in named.items() if value is not None}

    @property
    def input_tokens(self) -> int:
        return sum(replica.input_tokens for replica in self.replicas)

    @property
    def hit_tokens(self) -> int:
        return sum(replica.hit_tokens for replica in self.replicas)

    @property
    def hit_rate(self) -> float:
        """Hit tokens / input tokens over the whole log, cold start."""
        return self.hit_tokens / self.input_tokens if self.input_tokens else 0.0

    @property
    def imbalance(self) -> float:
        """Most computed tokens on one replica / the mean (1.0 = perfectly even)."""
        computed = [replica.computed_tokens for replica in self.replicas]
        mean = sum(computed) / len(computed)
        return max(computed) / mean if mean else 1.0


class _WindowLoad:
    """Computed prompt tokens per replica over a sliding time window."""

    def __init__(self, replicas: int, window_seconds: float) -> None:
        self.window = window_seconds
        self.recent: list[deque[tuple[float, int]]] = [deque() for _ in range(replicas)]
        self.totals = [0] * replicas

    def at(self, now: float) -> list[int]:
        for replica, recent in enumerate(self.recent):
            while recent and recent[0][0] <= now - self.window:
                self.totals[replica] -= recent.popleft()[1]
        return self.totals

    def add(self, replica: int, now: float, tokens: int) -> None:
        self.recent[replica].append((now, tokens))
        self.totals[replica] += tokens


def cached_prefix_tokens(replica: VllmPrefixCache, request: TokenizedRequest) -> int:
    """Tokens ``replica`` would serve from cache for ``request``, without changing it."""
    return replica.peek_hit_tokens(request)


class Fleet:
    """K replicas behind one routing policy; ``process`` routes and replays one request."""

    def __init__(
        self,
        replicas: list[VllmPrefixCache],
        routing: Routing,
        *,
        window_seconds: float = DEFAULT_WINDOW_SECONDS,
        overlap_weight: float = DEFAULT_OVERLAP_WEIGHT,
        load_weight: float = DEFAULT_LOAD_WEIGHT,
        prefix_tokens: int | None = None,
    ) -> None:
        if not replicas:
            raise ValueError("a fleet needs at least one replica")
        if window_seconds <= 0:
            raise ValueError("window_seconds must be positive")
        self.replicas = replicas
        self.routing = Routing(routing)
        self.stats = [ReplicaStats() for _ in replicas]
        self.load = _WindowLoad(len(replicas), window_seconds)
        self.overlap_weight = overlap_weight
        self.load_weight = load_weight
        self.prefix_tokens = prefix_tokens or replicas[0].block_size
        self._sessions: dict[tuple[str | None, str], int] = {}
        self._count = 0
        self._choose: Callable[[TokenizedRequest, list[int]], int] = {
            Routing.round_robin: self._round_robin,
            Routing.least_loaded: self._least_loaded,
            Routing.session_sticky: self._session_sticky,
            Routing.prefix_hash: self._prefix_hash,
            Routing.cache_aware: self._cache_aware,
        }[self.routing]

    def process(self, request: TokenizedRequest) -> tuple[int, RequestUsage]:
        loads = self.load.at(request.timestamp)
        replica = self._choose(request, loads)
        self._count += 1
        usage = self.replicas[replica].process(request)
        usage.check()
        stats = self.stats[replica]
        stats.requests += 1
        stats.input_tokens += usage.input_tokens
        stats.hit_tokens += usage.cache_read_tokens
        self.load.add(replica, request.timestamp, usage.input_tokens - usage.cache_read_tokens)
        return replica, usage

    def report(self) -> RoutingStats:
        cache_aware = self.routing is Routing.cache_aware
        return RoutingStats(
            self.routing,
            self.stats,
            window_seconds=self.load.window,
            overlap_weight=self.overlap_weight if cache_aware else None,
            load_weight=self.load_weight if cache_aware else None,
            prefix_tokens=self.prefix_tokens if self.routing is Routing.prefix_hash else None,
        )

    def _round_robin(self, request: TokenizedRequest, loads: list[int]) -> int:
        return self._count % len(self.replicas)

    def _least_loaded(self, request: TokenizedRequest, loads: list[int]) -> int:
        return min(range(len(loads)), key=loads.__getitem__)

    def _session_sticky(self, request: TokenizedRequest, loads: list[int]) -> int:
        session = (request.session, request.scope)
        replica = self._sessions.get(session)
        if replica is None:
            replica = self._sessions[session] = self._least_loaded(request, loads)
        return replica

    def _prefix_hash(self, request: TokenizedRequest, loads: list[int]) -> int:
        return bucket_of(partition_key(request, self.prefix_tokens), len(self.replicas))

    def _cache_aware(self, request: TokenizedRequest, loads: list[int]) -> int:
        total_load = sum(loads)
        length = max(request.input_tokens, 1)

        def score(replica: int) -> tuple[float, int]:
            overlap = cached_prefix_tokens(self.replicas[replica], request) / length
            share = loads[replica] / total_load if total_load else 0.0
            # Higher score first; among equal scores the less loaded replica.
            return (self.overlap_weight * overlap - self.load_weight * share, -loads[replica])

        best = max(range(len(self.replicas)), key=lambda r: (score(r), -r))
        return best
