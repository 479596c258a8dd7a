"""What each request of an agent session should have read from cache, and why it read less.

This is the seam between the usage report (``usecases.usage``) and the predictions of agent
sessions: a :class:`ReadPredictor` sees a session's requests in order, one at a time, and for
each says how many prompt tokens an ideal cache would have served (``expected_read``) and,
where the request read fewer, the cause in the vocabulary of ``simulator.misses`` with a
sentence a user acts on. The rule every predictor keeps: a prediction for request k may use
everything the log says about the requests before k and request k's own prompt length, never
request k's observed split into reads and writes (:meth:`ReadPredictor.observe` is called
after :meth:`ReadPredictor.predict`).

:class:`PreviousPromptPredictor` is the default: a client that puts a breakpoint on the newest
message (Claude Code) or a provider that caches prefixes automatically (Codex on the Responses
API) can serve, at most, the previous prompt of the same lineage and model, while the TTL it
was written with has not run out since that request (reads refresh it). What it cannot see (a
changed system prompt or tools, a compaction, a provider that missed) is ``prefix_diverged``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from cachecast.contracts.model import ContractTerms
from cachecast.logs.session_usage import SessionCall
from cachecast.sessions.predictor import duration
from cachecast.simulator.misses import FIRST_SIGHT, PREFIX_DIVERGED, TTL_EXPIRED

DEFAULT_TTL_SECONDS = 300  # Anthropic's default and OpenAI's in-memory retention


@dataclass(frozen=True, slots=True)
class ReadPrediction:
    """What request k should have read: ``expected_read`` tokens at most ``cacheable`` (what
    an earlier request of its lineage had cached), the ``cause`` of any shortfall, in words."""

    expected_read: int
    cacheable: int
    cause: str
    detail: str
    gap_seconds: float | None  # since the previous request of its lineage (None: first)


class ReadPredictor(Protocol):
    """Sees the requests of every lineage in order: ``predict`` then ``observe`` for each."""

    name: str

    def predict(self, call: SessionCall, contract: ContractTerms | None) -> ReadPrediction: ...

    def observe(self, call: SessionCall) -> None: ...


@dataclass(slots=True)
class _Last:
    timestamp: float | None
    input_tokens: int
    ttl_seconds: int


def cacheable_length(tokens: int, contract: ContractTerms | None) -> int:
    """The longest prefix of ``tokens`` a contract can serve: none below its minimum, and
    rounded down to its increment above it (OpenAI: 1,024, then steps of 128)."""
    if contract is None:
        return tokens
    minimum = contract.min_cacheable_tokens or 0
    if tokens < minimum:
        return 0
    step = contract.increment_tokens
    if step:
        return minimum + (tokens - minimum) // step * step
    return tokens


class PreviousPromptPredictor:
    """The previous prompt of the same lineage and model, while its TTL runs (module doc)."""

    name = "previous-prompt"

    def __init__(self) -> None:
        self._last: dict[tuple[str, str], _Last] = {}

    def predict(self, call: SessionCall, contract: ContractTerms | None) -> ReadPrediction:
        last = self._last.get((call.lineage, call.model))
        if last is None:
            return ReadPrediction(
                0, 0, FIRST_SIGHT, "the first request of its session or model: a cold cache", None
            )
        gap = None
        if call.timestamp is not None and last.timestamp is not None:
            gap = max(0.0, call.timestamp - last.timestamp)
        shared = cacheable_length(min(last.input_tokens, call.input_tokens), contract)
        if gap is not None and gap > last.ttl_seconds:
            return ReadPrediction(
                0,
                shared,
                TTL_EXPIRED,
                f"idle {duration(gap)} since the previous request outlived the"
                f" {duration(last.ttl_seconds)} cache TTL",
                gap,
            )
        if call.input_tokens < last.input_tokens:
            detail = (
                f"the prompt shrank from {last.input_tokens:,} to {call.input_tokens:,} tokens"
                " (a compaction or a cleared history rewrote it)"
            )
        else:
            detail = (
                "the prompt changed inside the prefix cached by the previous request (system"
                " prompt, tools or history rewritten), or the provider missed a prefix it had"
            )
        return ReadPrediction(shared, shared, PREFIX_DIVERGED, detail, gap)

    def observe(self, call: SessionCall) -> None:
        key = (call.lineage, call.model)
        last = self._last.get(key)
        if call.cache_write_1h_tokens:
            ttl = 3600
        elif call.cache_write_5m_tokens:
            ttl = 300
        else:
            ttl = last.ttl_seconds if last is not None else DEFAULT_TTL_SECONDS
        self._last[key] = _Last(call.timestamp, call.input_tokens, ttl)
