"""Token-granular radix-tree prefix cache, as SGLang's RadixCache (page size 1).

- One tree per namespace (model, scope). Edges carry token runs; a lookup follows the
  longest common prefix token by token, splitting nowhere (splits happen on insert).
- A request may reuse at most ``len - 1`` tokens (SGLang recomputes the last prompt token
  for its logits), rounded down to ``state_checkpoint_tokens`` for hybrid models.
- After the request its whole prompt is inserted; the tokens added are its writes.
- ``capacity_tokens`` bounds the tokens held by all trees. To make room, leaves that no
  running request holds are evicted least recently used first (a whole leaf at a time,
  as SGLang does; a parent that becomes a leaf joins the candidates). The current
  request's matched path is held while it inserts. A prompt longer than the capacity is
  not admitted: it is counted as uncached and changes nothing.
"""

from __future__ import annotations

import heapq
import itertools

from cachecast.core.errors import BadInputError, Location
from cachecast.simulator.blocks import common_prefix_length, namespace_seed, token_bytes
from cachecast.simulator.policies.base import (
    SELF_HOSTED_WRITE,
    CachePolicy,
    empty_usage,
    make_usage,
)
from cachecast.simulator.types import RequestUsage
from cachecast.tokenizers.types import TokenizedRequest

_T = 4  # bytes per token id in edge labels


class _Node:
    __slots__ = ("children", "label", "last_used", "locks", "parent", "serial")

    def __init__(self, label: bytes, parent: _Node | None, last_used: float, serial: int) -> None:
        self.label = label  # uint32 token ids of the edge into this node
        self.parent = parent
        self.children: dict[bytes, _Node] = {}  # first token's bytes -> child
        self.last_used = last_used
        self.locks = 0
        self.serial = serial  # insertion order: ties in last_used evict the newest first


def _common_tokens(left: bytes, right: bytes) -> int:
    """Number of leading tokens two uint32 byte strings share (whole tokens of their common
    byte prefix)."""
    return common_prefix_length(left, right) // _T


class RadixPrefixCache(CachePolicy):
    """SGLang-style radix cache with leaf-first LRU eviction."""

    name = "radix"

    def __init__(
        self,
        capacity_tokens: int | None = None,
        *,
        state_checkpoint_tokens: int | None = None,
        write_bucket: str = SELF_HOSTED_WRITE,
    ) -> None:
        if capacity_tokens is not None and capacity_tokens <= 0:
            raise ValueError("capacity_tokens must be positive")
        if state_checkpoint_tokens is not None and state_checkpoint_tokens <= 0:
            raise ValueError("state_checkpoint_tokens must be positive")
        self.capacity_tokens = capacity_tokens
        self.alignment = state_checkpoint_tokens or 1
        self.write_bucket = write_bucket
        self.cached_tokens = 0
        self._roots: dict[bytes, _Node] = {}
        self._serial = itertools.count()

    def _root(self, request: TokenizedRequest) -> _Node:
        seed = namespace_seed(request.model, request.scope)
        root = self._roots.get(seed)
        if root is None:
            root = _Node(b"", None, float("-inf"), next(self._serial))
            root.locks = 1  # a root is never evicted
            self._roots[seed] = root
        return root

    def _match(self, root: _Node, data: bytes, now: float) -> tuple[int, list[_Node]]:
        """Tokens matched from the start and the nodes fully matched on the way."""
        node, position, path = root, 0, []
        while position < len(data):
            child = node.children.get(data[position : position + _T])
            if child is None:
                break
            common = _common_tokens(child.label, data[position : position + len(child.label)])
            if common * _T < len(child.label):
                child = self._split(node, child, common, now)  # the matched part, held
            position += common * _T
            child.last_used = now
            path.append(child)
            node = child
        return position // _T, path

    def _split(self, parent: _Node, child: _Node, tokens: int, now: float) -> _Node:
        """Cut ``child``'s edge after ``tokens`` tokens; returns the new upper node."""
        first = child.label[:_T]
        upper = _Node(child.label[: tokens * _T], parent, now, next(self._serial))
        parent.children[first] = upper
        child.label = child.label[tokens * _T :]
        child.parent = upper
        upper.children[child.label[:_T]] = child
        return upper

    def process(self, request: TokenizedRequest) -> RequestUsage:
        if request.tokens is None:
            raise BadInputError(
                "the radix policy needs token ids; block-level traces only work with the"
                " vllm policy",
                location=Location(source=request.source, line=request.line),
            )
        length = request.input_tokens
        if length <= 0:
            return empty_usage(request)
        if self.capacity_tokens is not None and length > self.capacity_tokens:
            return make_usage(request, 0, {})
        data = token_bytes(request.tokens)
        root = self._root(request)
        now = request.timestamp
        matched, path = self._match(root, data, now)
        read = min(matched, length - 1) // self.alignment * self.alignment
        for node in path:
            node.locks += 1
        try:
            added = self._insert(root, data, now, length - matched)
        finally:
            for node in path:
                node.locks -= 1
        return make_usage(request, read, {self.write_bucket: added})

    def _insert(self, root: _Node, data: bytes, now: float, new_tokens: int) -> int:
        """Add the prompt below the matched path (which is held, so it survives)."""
        if new_tokens == 0:
            return 0
        if self.capacity_tokens is not None:
            self._evict(self.cached_tokens + new_tokens - self.capacity_tokens)
        node, position = root, 0
        while position < len(data):
            first = data[position : position + _T]
            child = node.children.get(first)
            if child is None:
                node.children[first] = _Node(data[position:], node, now, next(self._serial))
                break
            common = _common_tokens(child.label, data[position : position + len(child.label)])
            if common * _T < len(child.label):
                child = self._split(node, child, common, now)
            child.last_used = now
            node = child
            position += common * _T
        added = (len(data) - position) // _T
        assert added == new_tokens, "the held matched path must survive eviction"
        self.cached_tokens += added
        return added

    def _evict(self, tokens_needed: int) -> None:
        """Free at least ``tokens_needed`` tokens, least recently used leaves first."""
        if tokens_needed <= 0:
            return
        heap = [
            (node.last_used, -node.serial, id(node), node)
            for node in self._leaves()
            if node.locks == 0
        ]
        heapq.heapify(heap)
        freed = 0
        while freed < tokens_needed and heap:
            _, _, _, leaf = heapq.heappop(heap)
            parent = leaf.parent
            assert parent is not None
            del parent.children[leaf.label[:_T]]
            freed += len(leaf.label) // _T
            if not parent.children and parent.locks == 0 and parent.parent is not None:
                heapq.heappush(heap, (parent.last_used, -parent.serial, id(parent), parent))
        self.cached_tokens -= freed

    def _leaves(self) -> list[_Node]:
        leaves: list[_Node] = []
        stack = list(self._roots.values())
        while stack:
            node = stack.pop()
            if node.children:
                stack.extend(node.children.values())
            elif node.parent is not None:
                leaves.append(node)
        return leaves
