"""What the tokenizers hand to the simulator: one exact token sequence per logged request.

These types are the contract between ``cachecast.tokenizers`` (producer) and
``cachecast.simulator`` (consumer); keep them small and stable.

Each pickles as its constructor and its field values (``__reduce__``): a distributed replay
ships millions of them between processes, and the pickling that ``dataclass(slots=True)``
gives frozen classes walks the fields in Python twice per object (about 70 us for a
request, several times the cost of its token ids).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from operator import attrgetter
from typing import Any

from cachecast.logs.types import ObservedUsage


@dataclass(frozen=True, slots=True)
class Segment:
    """A span of the prompt that came from one part of the request body.

    ``kind`` is one of: system, tool, message, content, prompt (a plain prompt), template.
    ``label`` is the path of that part in the record, e.g. ``messages[2].content[0]``.
    Offsets are token positions, ``start`` inclusive, ``end`` exclusive.
    """

    kind: str
    label: str
    start: int
    end: int

    def __reduce__(self) -> tuple[type[Segment], tuple[str, str, int, int]]:
        return (Segment, (self.kind, self.label, self.start, self.end))


@dataclass(frozen=True, slots=True)
class Breakpoint:
    """An explicit cache breakpoint: the prefix of ``offset`` tokens may be cached.

    ``ttl`` names the contract's TTL option ('5m', '1h', '30m'...) or is None for the default.
    """

    offset: int
    ttl: str | None = None

    def __reduce__(self) -> tuple[type[Breakpoint], tuple[int, str | None]]:
        return (Breakpoint, (self.offset, self.ttl))


@dataclass(frozen=True, slots=True)
class CacheCreation:
    """This record creates a named cache object (Gemini ``cachedContents``) holding its whole
    prompt: alive from ``timestamp`` for ``lifetime_seconds`` (until its TTL ran out, or it
    was deleted or its TTL updated, as far as the log shows), under the TTL option
    ``ttl``."""

    name: str
    lifetime_seconds: int
    ttl: str | None = None
    deleted: bool = False  # the log shows its deletion before its TTL ran out


@dataclass(frozen=True, slots=True)
class CacheControls:
    """Request-level caching controls the request body sets (defaults: none set).

    ``implicit_breakpoint``: False where OpenAI's ``prompt_cache_options.mode`` is
    ``explicit`` (only marked blocks are cached). ``implicit_offset``: where OpenAI puts the
    implicit breakpoint (the end of the newest message that may carry one). ``ttl``: the
    request's TTL option name (``prompt_cache_options.ttl``, ``prompt_cache_retention``).
    ``cached_content``: the Gemini cache object the request reads; ``creates``: the one this
    record creates (the record is then no inference call, see :class:`CacheCreation`).
    ``carries_reply``: the label of the message that carries the previous request's reply
    verbatim, this request being that one continued (a provider that caches what it
    generated holds the prefix up to that message's end). ``built_in_tools``: the types of
    the tools the provider defines itself (OpenAI's ``web_search``, Anthropic's
    ``web_search_20250305``...), whose own prompt the body does not hold.
    """

    implicit_breakpoint: bool = True
    implicit_offset: int | None = None
    ttl: str | None = None
    cached_content: str | None = None
    creates: CacheCreation | None = None
    carries_reply: str | None = None
    built_in_tools: tuple[str, ...] = ()

    def __reduce__(self) -> tuple[type[CacheControls], tuple[Any, ...]]:
        return (CacheControls, _controls_fields(self))


NO_CONTROLS = CacheControls()


@dataclass(frozen=True, slots=True)
class PromptKeys:
    """A prompt reduced to the keys cache policies look up, in place of its token ids.

    ``blocks`` maps a block size to the chained key of every full block
    (``simulator.blocks.BlockKeyer.keys``); ``prefixes`` maps a block size to the key of the
    prefix ending at each token offset a policy may ask for (segment ends, breakpoints, the
    prompt's end: ``simulator.policies.explicit.PrefixKeys.at``). Keys are 16 bytes per
    block, a few percent of the ids they stand for: what a distributed tokenizer ships to
    the replay, or a reorder window holds (``simulator.compact``).
    """

    blocks: Mapping[int, Sequence[bytes]]
    prefixes: Mapping[int, Mapping[int, bytes]]

    def __reduce__(self) -> tuple[type[PromptKeys], tuple[Any, ...]]:
        return (PromptKeys, (self.blocks, self.prefixes))


@dataclass(frozen=True, slots=True)
class TokenizedRequest:
    """One logged request, tokenized exactly (or marked ``exact=False``).

    Either ``tokens`` holds the prompt's token ids, or (for block-level traces such as
    Mooncake) ``block_keys`` holds one key per ``block_size`` tokens, equal keys meaning an
    equal prefix chain; ``input_tokens`` is always the prompt length.

    ``prompt_complete`` is False where the log does not hold the whole prompt (agent
    transcripts omit the system prompt and tool definitions; redacted logs keep only text
    lengths): the observed usage is then exact but the prompt's tokens are not.

    ``prompt_keys`` (with ``tokens`` None) stands for the tokens where only their keys
    travelled (a distributed replay); the policies read the keys instead.
    """

    source: str  # file the record came from
    line: int  # 1-based line number in that file
    request_id: str
    timestamp: float  # seconds (epoch or trace-relative); the simulator replays in this order
    scope: str  # whatever separates caches: org, API key, prompt_cache_key, cache salt
    provider: str | None
    model: str | None  # the model tokenized as (the cache's model namespace)
    input_tokens: int
    output_tokens: int
    tokens: Sequence[int] | None = None
    block_keys: Sequence[int] | None = None
    block_size: int | None = None
    segments: tuple[Segment, ...] = ()
    breakpoints: tuple[Breakpoint, ...] = ()
    observed: ObservedUsage | None = None
    exact: bool = True
    tokenizer: str = ""
    session: str | None = None
    logged_model: str | None = None  # the model the log names for this request
    prompt_complete: bool = True
    controls: CacheControls = NO_CONTROLS
    prompt_keys: PromptKeys | None = None
    gateway: str | None = None  # the gateway the request went through (``openrouter``)
    # A service tier billed otherwise than the on-demand prices the contracts hold (``batch``,
    # ``flex``, ``priority``, ``scale``): priced on demand all the same, and the reports say
    # so (docs/log-formats.md, "Canonical records").
    service_tier: str | None = None

    def __reduce__(self) -> tuple[type[TokenizedRequest], tuple[Any, ...]]:
        return (TokenizedRequest, _request_fields(self))


def request_values(request: TokenizedRequest) -> tuple[Any, ...]:
    """``request``'s field values in field order (``TokenizedRequest(*values)`` is it again):
    a plain tuple, which pickles without a Python call per request."""
    values: tuple[Any, ...] = _request_fields(request)
    return values


def values_with(values: tuple[Any, ...], **changes: Any) -> tuple[Any, ...]:
    """:func:`request_values` with the named fields changed."""
    changed = list(values)
    for name, value in changes.items():
        changed[REQUEST_FIELD_INDEX[name]] = value
    return tuple(changed)


def with_changes(request: TokenizedRequest, **changes: Any) -> TokenizedRequest:
    """``request`` with the named fields changed: ``dataclasses.replace`` for the hot paths
    (it looks the fields up and passes them by keyword each time: about twice as slow)."""
    return TokenizedRequest(*values_with(_request_fields(request), **changes))


__all__ = [
    "NO_CONTROLS",
    "REQUEST_FIELD_INDEX",
    "Breakpoint",
    "CacheControls",
    "CacheCreation",
    "ObservedUsage",
    "PromptKeys",
    "Segment",
    "TokenizedRequest",
    "request_values",
    "values_with",
    "with_changes",
]


_controls_fields = attrgetter(*(item.name for item in fields(CacheControls)))
_request_fields = attrgetter(*(item.name for item in fields(TokenizedRequest)))
REQUEST_FIELD_INDEX = {item.name: index for index, item in enumerate(fields(TokenizedRequest))}
