"""Compact requests: a prompt's token ids replaced by the keys the replay will look up.

Token ids are 4 bytes per token (an agent call of 30,000 tokens is 120 kB, several times its
JSON text). Two places hold many requests between tokenizing and replaying them: a
distributed replay ships them from the tokenizing worker to the replaying one, and the
reorder window (``ordering.in_timestamp_order``) keeps thousands of them to sort a log's
slightly out-of-order requests. What a cache policy reads from a prompt is far smaller:

- the chained key of every full block, at the policy's block size
  (``BlockKeyer.keys``: automatic prefix caching, the Gemini implicit cache, vLLM);
- the key of the prefix ending at each offset an entry may sit at: segment ends,
  breakpoints and the prompt's end (``explicit.PrefixKeys.at``: explicit breakpoints and
  Gemini cached content), with the segments and breakpoints themselves, which place them.

Keys are pure functions of (namespace, token ids) (``simulator.blocks``), so keys computed
on the tokenizing worker are the keys the replaying policy would compute: the replay of
compact requests gives every request the same usage as the replay of the full ones. The
worker computes them with the same :class:`BlockKeyer` (reusing a session's earlier keys),
so nothing is hashed twice.

:func:`key_needs` says what a set of policies reads; a policy it does not know (radix, which
matches token by token) gets full requests, which is correct, only larger.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from cachecast.simulator.blocks import BlockKeyer
from cachecast.simulator.policies import (
    AutomaticPrefixCache,
    CachePolicy,
    ExplicitBreakpointCache,
    ImplicitPlusCachedContent,
    NoCache,
    VllmPrefixCache,
)
from cachecast.simulator.policies.explicit import PrefixKeys
from cachecast.tokenizers.types import PromptKeys, TokenizedRequest, with_changes


@dataclass(frozen=True, slots=True)
class KeyNeeds:
    """What the replay's policies read from a prompt (see the module docstring)."""

    blocks: frozenset[int] = frozenset()  # block sizes whose full-block keys are read
    prefixes: frozenset[int] = frozenset()  # block sizes whose prefix keys are read
    segments: bool = False  # the segments themselves (explicit lookback walks them)
    tokens: bool = False  # a policy that reads the ids: ship full requests


def key_needs(policies: Iterable[CachePolicy], *, tokens: bool = False) -> KeyNeeds:
    """The union of what ``policies`` read; ``tokens``: the replay reads the ids itself
    (explaining misses compares each prompt's ids with earlier prompts', ``misses``)."""
    blocks: set[int] = set()
    prefixes: set[int] = set()
    segments = False
    for policy in policies:
        if isinstance(policy, AutomaticPrefixCache | VllmPrefixCache):
            blocks.add(policy.block_size)
        elif isinstance(policy, ImplicitPlusCachedContent):
            blocks.add(policy.implicit.block_size)
            prefixes.add(policy.implicit.keyer.block_size)
        elif isinstance(policy, ExplicitBreakpointCache):
            prefixes.add(policy.keyer.block_size)
            segments = True
        elif isinstance(policy, NoCache):
            continue  # reads nothing of a prompt but its length
        else:
            tokens = True
    return KeyNeeds(frozenset(blocks), frozenset(prefixes), segments, tokens)


class Compactor:
    """Turns tokenized requests into compact ones for one set of needs, remembering each
    session's keys across requests as the policies themselves would. (A replay that reads
    the ids besides, to explain misses, gets the requests whole: its policies key them.)"""

    def __init__(self, needs: KeyNeeds) -> None:
        self.needs = needs
        self._keyers = {size: BlockKeyer(size) for size in needs.blocks | needs.prefixes}

    def compact(self, request: TokenizedRequest) -> TokenizedRequest:
        """``request`` with its token ids replaced by its keys (a block-level trace, which
        carries no ids, and any request under needs that read ids, come back as they are)."""
        if self.needs.tokens or request.tokens is None:
            return request
        blocks = {size: self._keyers[size].keys(request) for size in self.needs.blocks}
        prefixes = {}
        if self.needs.prefixes:
            offsets = prefix_offsets(request)
            for size in self.needs.prefixes:
                keys = PrefixKeys(self._keyers[size], request)
                prefixes[size] = {offset: keys.at(offset) for offset in offsets}
        return with_changes(
            request,
            tokens=None,
            segments=request.segments if self.needs.segments else (),
            prompt_keys=PromptKeys(blocks, prefixes),
        )


def prefix_offsets(request: TokenizedRequest) -> set[int]:
    """Every offset a policy may ask a prefix key for: segment ends, breakpoints, the end
    (offsets outside the prompt are refused by the policy before it asks)."""
    length = request.input_tokens
    offsets = {segment.end for segment in request.segments if 0 < segment.end <= length}
    offsets.update(point.offset for point in request.breakpoints if 0 < point.offset <= length)
    if length > 0:
        offsets.add(length)
    return offsets
