"""Replay a request stream through a policy in timestamp order, one request at a time."""

from __future__ import annotations

import heapq
import itertools
from array import array
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass

from cachecast.core.errors import BadInputError, Location
from cachecast.simulator.blocks import REMEMBERED_IDLE_SECONDS
from cachecast.simulator.compact import Compactor, key_needs
from cachecast.simulator.policies.base import CachePolicy
from cachecast.simulator.types import RequestUsage
from cachecast.tokenizers.types import TokenizedRequest, with_changes

DEFAULT_REORDER_WINDOW = 4096
# What the window may hold of prompts (token ids, keys), whatever its count: on a log of
# long prompts that do not extend each other (nothing to pack) 4,096 of them would be
# hundreds of MB. Past it, the oldest requests leave the window early: a narrower window
# for such logs, never a different order for a log within it (docs/limits.md).
DEFAULT_WINDOW_BYTES = 16 << 20
KEY_BYTES_HELD = 16  # a block key, or a prefix key


def held_bytes(request: TokenizedRequest) -> int:
    """What holding ``request`` costs in prompt data: 4 bytes a token id, 16 a key."""
    if request.tokens is not None:
        return 4 * len(request.tokens)
    if request.block_keys is not None:
        return KEY_BYTES_HELD * len(request.block_keys)
    keys = request.prompt_keys
    if keys is None:
        return 0
    blocks = sum(len(each) for each in keys.blocks.values())
    prefixes = sum(len(each) for each in keys.prefixes.values())
    return KEY_BYTES_HELD * (blocks + prefixes)


class OutOfOrderError(BadInputError):
    """A request arrived earlier than the reorder window can still place it."""

    title = "Records out of order"


def in_timestamp_order(
    requests: Iterable[TokenizedRequest],
    window: int = DEFAULT_REORDER_WINDOW,
    *,
    weigh: Callable[[TokenizedRequest], int] = held_bytes,
    budget_bytes: int = DEFAULT_WINDOW_BYTES,
) -> Iterator[TokenizedRequest]:
    """Sort a stream by timestamp within a bounded window: at most ``window`` requests, and
    no more than ``budget_bytes`` of their prompts (``weigh``: what one holds) beyond one.

    Ties keep file order. A request older than one already emitted cannot be placed and
    raises ``OutOfOrderError`` naming its file and line: sort such a log first.
    """
    heap: list[tuple[float, int, int, TokenizedRequest]] = []
    counter = itertools.count()
    last_emitted = float("-inf")
    held = 0
    for request in requests:
        if request.timestamp < last_emitted:
            raise OutOfOrderError(
                f"{request.timestamp} is earlier than a request already replayed, {window} or"
                f" more places (or {budget_bytes >> 20} MB of prompts) before it; sort the log",
                location=Location(source=request.source, line=request.line, field="timestamp"),
            )
        weight = weigh(request)
        held += weight
        heapq.heappush(heap, (request.timestamp, next(counter), weight, request))
        while len(heap) > window or (held > budget_bytes and len(heap) > 1):
            last_emitted, _, gone, oldest = heapq.heappop(heap)
            held -= gone
            yield oldest
    while heap:
        yield heapq.heappop(heap)[3]


@dataclass(frozen=True, slots=True)
class Extension:
    """A prompt's ids as the ids of the session's previous prompt (``parent``) plus its own
    new ones (``tail``); a session's first prompt has no parent. ``length``: all its ids."""

    parent: Extension | None
    tail: array[int]
    depth: int
    length: int

    def extend(self, tail: array[int]) -> Extension:
        return Extension(self, tail, self.depth + 1, self.length + len(tail))

    def ids(self) -> array[int]:
        tails: list[array[int]] = []
        node: Extension | None = self
        while node is not None:
            tails.append(node.tail)
            node = node.parent
        out: array[int] = array("I")
        for tail in reversed(tails):
            out += tail
        return out


SessionKey = tuple[str | None, str, str | None]  # (model, scope, session)


def packable(request: TokenizedRequest) -> bool:
    """Whether :class:`PromptPacker` packs ``request`` (a session's, with ``array("I")`` ids)."""
    tokens = request.tokens
    return request.session is not None and isinstance(tokens, array) and tokens.typecode == "I"


class PromptPacker:
    """Holds the requests a reorder window keeps with their token ids at the cost of their
    new tokens only.

    An agent's request repeats its session's previous prompt and adds a little: the
    window's 4,096 requests would hold 4,096 whole prompts (45 MB on the benchmark's agent
    log), growing with the log up to the window. :meth:`pack` keeps a request that extends
    its session's previous prompt as that prompt's (shared) representation plus its own new
    ids, :meth:`unpack` rebuilds the same ids when the window lets the request go. Memory:
    one latest prompt per live session, plus each held request's new tokens. A request of
    no session, or one that does not extend the previous prompt, is held as it is; sessions
    idle for ``REMEMBERED_IDLE_SECONDS`` of log time (or past ``sessions`` of them) are
    forgotten, which only costs compression, never a different id."""

    MAX_DEPTH = 64  # a longer chain starts again from whole ids (unpacking walks the chain)

    def __init__(self, *, sessions: int = 4096) -> None:
        self._latest: OrderedDict[tuple[Hashable, SessionKey], tuple[array[int], Extension, float]]
        self._latest = OrderedDict()
        self._held: dict[int, Extension] = {}
        self._sessions = sessions

    def pack(self, request: TokenizedRequest) -> TokenizedRequest:
        node = self.extension(request)
        if node is None or node.parent is None:
            return request
        packed = with_changes(request, tokens=None)
        self._held[id(packed)] = node
        return packed

    def extension(self, request: TokenizedRequest, channel: Hashable = None) -> Extension | None:
        """``request``'s ids as an extension of its session's previous prompt in ``channel``
        (no parent where it does not extend it), remembered as the session's latest there;
        None for a request that cannot be packed (no session, or ids not an ``array("I")``).
        A receiver rebuilds the same chains from the tails alone (:class:`ExtensionReceiver`)."""
        tokens = request.tokens
        if not packable(request) or not isinstance(tokens, array):
            return None
        key = (channel, (request.model, request.scope, request.session))
        latest = self._latest.pop(key, None)
        node: Extension | None = None
        if latest is not None:
            previous, parent, _ = latest
            size = len(previous)
            if parent.depth < self.MAX_DEPTH and len(tokens) >= size and tokens[:size] == previous:
                node = parent.extend(tokens[size:])
        if node is None:
            node = Extension(None, tokens, 0, len(tokens))
        self._latest[key] = (tokens, node, request.timestamp)
        self._forget(request.timestamp)
        return node

    def held_bytes(self, request: TokenizedRequest) -> int:
        """What the window holds for ``request``: its new ids when packed."""
        node = self._held.get(id(request))
        return 4 * len(node.tail) if node is not None else held_bytes(request)

    def unpack(self, request: TokenizedRequest) -> TokenizedRequest:
        node = self._held.pop(id(request), None)
        if node is None:
            return request
        return with_changes(request, tokens=node.ids())

    def _forget(self, now: float) -> None:
        latest = self._latest
        while latest:
            _, (_, _, seen) = next(iter(latest.items()))
            if len(latest) <= self._sessions and not seen < now - REMEMBERED_IDLE_SECONDS:
                break
            latest.popitem(last=False)


class ExtensionReceiver:
    """The receiving side of a channel of :meth:`PromptPacker.extension`: the requests of
    the channel, in the order the sender packed them, each with its tail (the new ids
    only, where ``extends`` > 0: the number of ids taken from the session's previous
    prompt) or its whole ids. Rebuilds the sender's chains, so every request gets its ids
    back exactly (:meth:`Extension.ids`) while only the tails are held.

    ``stream`` tells apart the senders feeding one receiver (each has its own chains)."""

    def __init__(self) -> None:
        self._latest: dict[tuple[Hashable, SessionKey], Extension] = {}

    def receive(
        self, request: TokenizedRequest, extends: int, stream: Hashable
    ) -> Extension | None:
        if not packable(request):
            if extends:
                raise ValueError(f"{_where(request)}: a packed request without its new ids")
            return None
        tokens = request.tokens
        assert isinstance(tokens, array)
        key = (stream, (request.model, request.scope, request.session))
        if extends == 0:
            node = Extension(None, tokens, 0, len(tokens))
        else:
            parent = self._latest.get(key)
            if parent is None or parent.length != extends:
                raise ValueError(
                    f"{_where(request)}: packed as an extension of {extends} ids that were"
                    " not received before it"
                )
            node = parent.extend(tokens)
        self._latest[key] = node
        return node


class RebuiltIds:
    """:meth:`Extension.ids` for requests replayed in order, each built from its parent's
    ids where those were the last built for that chain (one copy of the prompt instead of
    a walk that concatenates every tail): a session's requests come one after the other.
    Holds the latest ids of at most ``chains`` chains (the oldest built dropped first)."""

    def __init__(self, *, chains: int = 1024) -> None:
        self._latest: dict[int, tuple[Extension, array[int]]] = {}  # by id() of the node
        self._chains = chains

    def ids(self, node: Extension) -> array[int]:
        parent = node.parent
        # An entry holds its node alive, so no other node can have an id() kept here.
        found = self._latest.pop(id(parent), None) if parent is not None else None
        ids = found[1] + node.tail if found is not None else node.ids()
        latest = self._latest
        latest[id(node)] = (node, ids)
        if len(latest) > self._chains:
            del latest[next(iter(latest))]
        return ids


def _where(request: TokenizedRequest) -> str:
    return f"{request.source}:{request.line}"


def usages_in_order(
    requests: Iterable[TokenizedRequest],
    policy: CachePolicy,
    *,
    window: int = DEFAULT_REORDER_WINDOW,
) -> Iterator[RequestUsage]:
    """Per-request usage, in timestamp order (input sorted within ``window`` requests).

    The window holds each request reduced to the keys ``policy`` reads (``compact``), not
    its token ids: memory for the window's requests, not for their prompts."""
    compact = Compactor(key_needs([policy])).compact
    for request in in_timestamp_order(map(compact, requests), window):
        usage = policy.process(request)
        usage.check()
        yield usage
